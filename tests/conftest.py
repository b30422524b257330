"""Shared test helpers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def run_cli(*args: str, cwd: Path | str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m syncguard`` in a subprocess (NO_COLOR, no terminal)."""
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "syncguard", *args],
        cwd=cwd or REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def package_tree(root: Path, modules: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project at ``root`` with the package ``pkg`` of ``modules`` (name -> source, and an
    empty ``__init__``), made the working directory."""
    (root / "pkg").mkdir(parents=True)
    for name, text in {"__init__": "", **modules}.items():
        (root / "pkg" / f"{name}.py").write_text(text)
    monkeypatch.chdir(root)
    return root


@pytest.fixture
def cli():
    return run_cli
