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


@pytest.fixture
def cli():
    return run_cli
