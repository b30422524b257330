"""Shared test helpers."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
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


@pytest.fixture
def package_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[dict[str, str]], Path]:
    """Makes a project with the package ``pkg`` of the given modules (name -> source, and
    an empty ``__init__``) the working directory, and returns its folder."""

    def make(modules: dict[str, str]) -> Path:
        root = tmp_path / "project"
        (root / "pkg").mkdir(parents=True)
        for name, text in {"__init__": "", **modules}.items():
            (root / "pkg" / f"{name}.py").write_text(text)
        monkeypatch.chdir(root)
        return root

    return make


@pytest.fixture
def cli():
    return run_cli
