"""Finding the Python files to lint, the way ruff does."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

from syncguard.config import CONFIG_FILE, ConfigError, Settings
from syncguard.facts import FileError

SKIPPED_FOLDERS = frozenset(
    {".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", "build", "dist",
     "node_modules", ".mypy_cache", ".ruff_cache", ".pytest_cache", ".syncguard_cache",
     "site-packages", ".eggs"}
)  # fmt: skip


def discover(
    paths: Sequence[str], settings: Settings | None = None
) -> tuple[list[str], list[tuple[str, FileError]]]:
    """Python files under ``paths`` (sorted; a file reached by two paths is listed once,
    as first reached), and a located error for each path
    that cannot be linted: one that does not exist, a folder that cannot be listed, a bad
    config governing a folder (its files are not linted).

    Folder walks skip VCS folders, virtual environments, build output, symlinked folders
    and what the ``exclude`` globs of the folder's config match; files and folders named
    in ``paths`` are linted whatever ``exclude`` says unless ``force-exclude`` is set.
    Anything else named ``*.py`` is kept: reading it says what it is."""
    settings = settings or Settings()
    found: dict[str, str] = {}  # absolute path -> the path as found (the first spelling)
    problems: dict[tuple[str, FileError], None] = {}  # in order, each once
    for path in paths:
        absolute = os.path.abspath(path)
        try:
            named = settings.for_folder(os.path.dirname(absolute))
        except ConfigError as error:
            problems.setdefault(_located(error), None)
            continue
        if named.force_exclude and named.excludes(path):
            continue
        if os.path.isdir(path):
            for file, absolute in _walk(path, settings, problems):
                found.setdefault(absolute, file)
        elif os.path.exists(path):
            found.setdefault(absolute, os.path.normpath(path))
        else:
            gone = "broken symbolic link" if os.path.islink(path) else "no such file or directory"
            problems.setdefault((path, FileError(1, 1, gone)), None)
    return sorted(found.values()), list(problems)


def _walk(
    top: str, settings: Settings, problems: dict[tuple[str, FileError], None]
) -> Iterator[tuple[str, str]]:
    """(path, absolute path) of the Python files under the folder ``top``."""

    def unlistable(error: OSError) -> None:
        message = f"cannot list folder: {error.strerror or error}"
        problems.setdefault((error.filename or top, FileError(1, 1, message)), None)

    cwd = os.getcwd()
    for folder, subfolders, files in os.walk(top, onerror=unlistable):
        absolute = os.path.normpath(os.path.join(cwd, folder))
        base = os.path.normpath(folder)  # once per folder: a file name adds no `.` or `..`
        try:
            here = settings.for_folder(absolute)
        except ConfigError as error:
            problems.setdefault(_located(error), None)
            subfolders[:] = []
            continue
        subfolders[:] = sorted(
            name
            for name in subfolders
            if name not in SKIPPED_FOLDERS
            and not os.path.exists(os.path.join(folder, name, "pyvenv.cfg"))
            and not here.excludes(os.path.join(folder, name))
        )
        excluding = bool(here.exclude)
        for name in files:
            if name.endswith((".py", ".pyi")):
                path = os.path.join(base, name) if base != os.curdir else name
                if not excluding or not here.excludes(path):
                    yield path, os.path.join(absolute, name)


def _located(error: ConfigError) -> tuple[str, FileError]:
    """A bad config's error, its path relative to the working folder when inside it."""
    path = error.path or CONFIG_FILE
    relative = os.path.relpath(path) if os.path.isabs(path) else path
    shown = path if relative.startswith(os.pardir) else relative
    return shown, FileError(error.line, error.column, error.message)


def module_name(
    path: str, is_package_folder: Callable[[str], bool] | None = None
) -> tuple[str, bool]:
    """The dotted module name of ``path`` (walking up ``__init__.py`` folders), and
    whether it is a package ``__init__``; ``is_package_folder`` answers whether a folder
    has an ``__init__.py`` (a memo of the file system's answers, for many files)."""
    has_init = is_package_folder or has_init_file
    absolute = os.path.abspath(path)
    folder, filename = os.path.split(absolute)
    stem = filename.rsplit(".", 1)[0]
    is_package = stem == "__init__"
    parts = [] if is_package else [stem]
    while True:
        while has_init(folder):
            folder, name = os.path.split(folder)
            parts.append(name)
            if not name:
                break
        parent = os.path.dirname(folder)
        if parent == folder or not has_init(parent):
            break
        folder, name = os.path.split(folder)  # no __init__.py, in a package: a namespace
        parts.append(name)  # subpackage of it (``pkg/components/`` is ``pkg.components``)
    return ".".join(reversed(parts)) or stem, is_package


def has_init_file(folder: str) -> bool:
    """True when ``folder`` holds an ``__init__.py``: it is a package."""
    return os.path.isfile(os.path.join(folder, "__init__.py"))
