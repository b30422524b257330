"""Helpers to lint code snippets, for rule tests (ours and third-party rules')."""

from __future__ import annotations

import inspect
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from syncguard.config import Settings
from syncguard.engine import LintResult, lint_files


def write_tree(root: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` (relative path -> source, dedented) below ``root``."""
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(inspect.cleandoc(source) + "\n", encoding="utf-8")


def lint_tree(
    files: Mapping[str, str], *, settings: Settings | None = None, scope: str | None = None
) -> LintResult:
    """Write ``files`` (relative path -> source) to a temporary folder and lint it.

    Paths in the result are relative to that folder.
    """
    with tempfile.TemporaryDirectory(prefix="syncguard-") as folder:
        write_tree(Path(folder), files)
        previous = os.getcwd()
        os.chdir(folder)
        try:
            return lint_files(sorted(files), settings=settings, scope=scope)
        finally:
            os.chdir(previous)


def lint_snippet(
    source: str,
    *,
    select: tuple[str, ...] = ("SG",),
    settings: Settings | None = None,
    scope: str | None = None,
) -> LintResult:
    """Lint one snippet as the module ``example``."""
    settings = (settings or Settings()).with_overrides(select=select)
    return lint_tree({"example.py": source}, settings=settings, scope=scope)
