"""Reading a Python source file: its bytes, and its text decoded as Python decodes it.

Only regular files are read (a FIFO, a device or a socket named ``*.py`` would block
the run or never end), and at most :data:`MAX_FILE_BYTES` of them.
"""

from __future__ import annotations

import io
import os
import stat
import tokenize

from syncguard.facts import FileError, source_lines


class Unreadable(Exception):
    """A file that cannot be read or decoded, with the located reason."""

    def __init__(self, error: FileError) -> None:
        super().__init__(error.message)
        self.error = error


# Larger files are refused: no hand-written module comes near (the largest of the engines
# and libraries measured in benchmarks/RESULTS.md, and of the standard library, is under
# 1 MB), and
# analysing generated data of that size takes minutes and gigabytes.
MAX_FILE_BYTES = 10 * 1024 * 1024
# Opening never blocks (a FIFO without a writer) nor makes a terminal ours.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
_OPEN_FLAGS |= getattr(os, "O_BINARY", 0)
_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_bytes(path: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the regular file at ``path`` (a symbolic link is followed); raises
    Unreadable when it cannot be read, is not a regular file or has over ``limit`` bytes.

    The file is looked at before it is opened (opening some devices does something),
    and again once open, in case it was swapped in between."""
    try:
        _check(os.stat(path), limit)
        descriptor = os.open(path, _OPEN_FLAGS)
    except OSError as error:
        raise Unreadable(FileError(1, 1, f"cannot read: {error.strerror or error}")) from None
    with open(descriptor, "rb") as handle:
        try:
            _check(os.fstat(descriptor), limit)
            os.set_blocking(descriptor, True)
            data = handle.read(limit + 1)
        except OSError as error:
            message = f"cannot read: {error.strerror or error}"
            raise Unreadable(FileError(1, 1, message)) from None
    if len(data) > limit:
        raise Unreadable(FileError(1, 1, _too_large(len(data), limit)))
    return data


def _check(info: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = next((kind for test, kind in _KINDS if test(info.st_mode)), "not a file")
        raise Unreadable(FileError(1, 1, f"not a regular file ({kind}): skipped"))
    if info.st_size > limit:
        raise Unreadable(FileError(1, 1, _too_large(info.st_size, limit)))


def _too_large(size: int, limit: int) -> str:
    mib = 1024 * 1024
    return f"too large to lint ({size / mib:.1f} MiB, the limit is {limit / mib:g} MiB): skipped"


def decode(data: bytes) -> str:
    """Source text of ``data`` (PEP 263 encodings, BOM); raises Unreadable when impossible."""
    if b"\0" in data:
        raise Unreadable(FileError(1, 1, "not a text file (contains NUL bytes): skipped"))
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if b"coding" in b"\n".join(data.splitlines()[:2]):
            raise Unreadable(FileError(1, 1, f"bad encoding declaration: {error}")) from None
        encoding = "utf-8"  # undecodable bytes: the decode below says where
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        line, column = position(data, getattr(error, "start", 0))
        raise Unreadable(FileError(line, column, f"cannot decode as {encoding}: {error}")) from None


def position(data: bytes, offset: int) -> tuple[int, int]:
    """(line, column), 1-based, of the byte at ``offset`` in ``data``."""
    line = data.count(b"\n", 0, offset) + 1
    return line, offset - (data.rfind(b"\n", 0, offset) + 1) + 1


def read_source(path: str) -> str:
    """The decoded text of the file at ``path``; raises Unreadable when impossible."""
    return decode(read_bytes(path))


def lines_or_empty(path: str) -> list[str]:
    """The lines of the file at ``path`` as findings number them, decoded as Python decodes
    it; no lines when it cannot be read (code frames and baselines then show nothing)."""
    try:
        return source_lines(read_source(path))
    except Unreadable:
        return []
