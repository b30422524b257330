"""Writing fixed files so that no interruption or full disk can leave one half-written.

Each file is written to a temporary file in its own folder, flushed to disk, given the
original's mode (and owner, where the process may), and moved over the original with
``os.replace``, which is atomic: an interrupted run leaves every file either as it was or
fully fixed. A file whose bytes changed since they were read (an editor saved it while
the linter ran) is skipped, as is a symlink whose target lies outside the linted folders.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable


class Skipped(Exception):
    """A file not written, with the reason (a sentence)."""


def linted_roots(paths: Iterable[str]) -> tuple[str, ...]:
    """The real folders a run may write in: each folder linted, and the folder of each
    file named."""
    roots = []
    for path in paths:
        absolute = os.path.abspath(path)
        folder = absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
        roots.append(os.path.realpath(folder))
    return tuple(roots)


def target_of(path: str, roots: Iterable[str]) -> str:
    """The real file that writing ``path`` changes; raises Skipped when it is a symlink to
    a file outside ``roots``."""
    real = os.path.realpath(path)
    if not any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in roots):
        raise Skipped(f"a symlink to {real}, outside the linted folders: not written")
    return real


def replace_file(target: str, data: bytes, expected: bytes) -> None:
    """Make ``data`` the content of ``target`` atomically, if it still holds ``expected``.

    Raises Skipped when it does not, OSError when the write fails (the file is then as it
    was, and no temporary file is left behind)."""
    with open(target, "rb") as handle:
        status = os.fstat(handle.fileno())
        if handle.read() != expected:
            raise Skipped("changed since syncguard read it: not written (run --fix again)")
    folder, name = os.path.split(target)
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".syncguard")
    try:
        with os.fdopen(descriptor, "wb") as out:
            os.chmod(temporary, stat.S_IMODE(status.st_mode))
            if hasattr(os, "chown"):
                with contextlib.suppress(PermissionError):  # only root may give files away
                    os.chown(temporary, status.st_uid, status.st_gid)
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
        temporary = ""
    finally:
        if temporary:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    _sync_folder(folder)


def _sync_folder(folder: str) -> None:
    """Flush the folder's entry for the replaced file (where the system allows it)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(descriptor)
    finally:
        os.close(descriptor)
