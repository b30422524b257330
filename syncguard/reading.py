"""Reading a Python source file: its bytes, and its text decoded as Python decodes it."""

from __future__ import annotations

import io
import tokenize

from syncguard.facts import FileError


class Unreadable(Exception):
    """A file that cannot be read or decoded, with the located reason."""

    def __init__(self, error: FileError) -> None:
        super().__init__(error.message)
        self.error = error


def read_bytes(path: str) -> bytes:
    """The bytes of the file at ``path``; raises Unreadable when it cannot be read."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise Unreadable(FileError(1, 1, f"cannot read: {error.strerror or error}")) from None


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
        start = getattr(error, "start", 0)
        line = data[:start].count(b"\n") + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise Unreadable(FileError(line, column, f"cannot decode as {encoding}: {error}")) from None


def read_source(path: str) -> str:
    """The decoded text of the file at ``path``; raises Unreadable when impossible."""
    return decode(read_bytes(path))
