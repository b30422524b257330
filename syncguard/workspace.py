"""Where a project starts, and paths relative to it.

The project root is the folder of the config file in use (a ``pyproject.toml`` with
``[tool.syncguard]``), else the root of the version-control checkout around the working
directory (a folder with ``.git``, ``.hg`` or ``.jj``), else there is none. Changed-files
mode analyses the whole root; baselines and SARIF name files relative to it.
"""

from __future__ import annotations

import os
from pathlib import Path

from syncguard.config import Settings

VCS_MARKERS = (".git", ".hg", ".jj")


def vcs_root(start: Path) -> Path | None:
    """The nearest folder at or above ``start`` that holds a checkout's metadata."""
    folder = start.resolve()
    for candidate in (folder, *folder.parents):
        if any(os.path.exists(os.path.join(candidate, marker)) for marker in VCS_MARKERS):
            return candidate
    return None


def project_root(settings: Settings, start: Path | None = None) -> Path | None:
    """The project root for a run with ``settings`` from ``start`` (default: the working
    directory); see the module docstring."""
    if settings.source is not None:
        return settings.source.resolve().parent
    return vcs_root(start or Path.cwd())


def relative_to(path: str, root: Path) -> str | None:
    """``path`` relative to ``root``, with ``/`` separators; None when it lies outside."""
    try:
        relative = Path(os.path.abspath(path)).relative_to(root)
    except ValueError:
        return None
    return relative.as_posix()
