"""Finding the Python files to lint, the way ruff does."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from pathlib import PurePosixPath

SKIPPED_FOLDERS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist",
     "node_modules", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".syncguard_cache",
     "site-packages", ".eggs"}
)  # fmt: skip


def _excluded(path: str, patterns: Sequence[str]) -> bool:
    if not patterns:
        return False  # the usual case: spare building a path object per file
    posix = PurePosixPath(path.replace(os.sep, "/"))
    text = str(posix)
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if fnmatch.fnmatchcase(text, pattern) or fnmatch.fnmatchcase(posix.name, pattern):
            return True
        if any(fnmatch.fnmatchcase(part, pattern) for part in posix.parts):
            return True
        if fnmatch.fnmatchcase(text, f"*/{pattern}") or text.startswith(f"{pattern}/"):
            return True
    return False


def discover(
    paths: Sequence[str], exclude: Sequence[str] = ()
) -> tuple[list[str], list[tuple[str, str]]]:
    """Python files under ``paths`` (sorted, unique), and (path, message) for each path
    that cannot be linted (one that does not exist).

    Files named explicitly are always linted; directory walks skip VCS folders,
    virtual environments, build output and ``exclude`` globs.
    """
    found: dict[str, None] = {}
    problems: list[tuple[str, str]] = []
    for path in paths:
        if os.path.isdir(path):
            for file in _walk(path, exclude):
                found.setdefault(file, None)
        elif os.path.isfile(path):
            found.setdefault(os.path.normpath(path), None)
        else:
            problems.append((path, "no such file or directory"))
    return sorted(found), problems


def _walk(top: str, exclude: Sequence[str]) -> Iterator[str]:
    for folder, subfolders, files in os.walk(top):
        subfolders[:] = sorted(
            name
            for name in subfolders
            if name not in SKIPPED_FOLDERS
            and not os.path.exists(os.path.join(folder, name, "pyvenv.cfg"))
            and not _excluded(os.path.join(folder, name), exclude)
        )
        for name in files:
            if name.endswith((".py", ".pyi")):
                path = os.path.normpath(os.path.join(folder, name))
                if not _excluded(path, exclude):
                    yield path


def module_name(path: str) -> tuple[str, bool]:
    """The dotted module name of ``path`` (walking up ``__init__.py`` folders), and
    whether it is a package ``__init__``."""
    absolute = os.path.abspath(path)
    folder, filename = os.path.split(absolute)
    stem = filename.rsplit(".", 1)[0]
    is_package = stem == "__init__"
    parts = [] if is_package else [stem]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, name = os.path.split(folder)
        parts.append(name)
        if not name:
            break
    return ".".join(reversed(parts)) or stem, is_package
