"""Golden outputs: every output format on fixtures/adoption, which has a finding through a
helper of another module, a fixable one and an unused suppression, plus a file that does
not parse (added to a copy: fixtures/ holds only files that parse).
``SYNCGUARD_UPDATE_GOLDEN=1 python -m pytest tests/test_golden.py`` rewrites them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from syncguard.cli import main

GOLDEN = Path(__file__).parent / "data" / "golden"
BROKEN = "def half_written(x:\n    return x\n"  # fixtures/ holds only files that parse
CASES = {
    "concise.txt": ("--output-format", "concise"),
    "full.txt": ("--output-format", "full"),
    "json.json": ("--output-format", "json"),
    "github.txt": ("--output-format", "github"),
    "sarif.json": ("--output-format", "sarif"),
    "statistics.txt": ("--output-format", "concise", "--statistics"),
    "statistics.json": ("--output-format", "json", "--statistics"),
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture tree outside any checkout, so that SARIF's root is the tree itself."""
    root = tmp_path_factory.mktemp("golden") / "adoption"
    shutil.copytree(FIXTURES / "adoption", root)
    (root / "engine" / "broken.py").write_text(BROKEN)
    return root


def _comparable(name: str, text: str) -> str:
    if name != "sarif.json":
        return text
    log = json.loads(text)  # the rules' documentation has tests of its own
    driver = log["runs"][0]["tool"]["driver"]
    driver["rules"] = [rule["id"] for rule in driver["rules"]]
    driver["notifications"] = [rule["id"] for rule in driver["notifications"]]
    driver["version"] = driver["semanticVersion"] = "VERSION"
    return json.dumps(log, indent=2) + "\n"


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_matches_golden(tree: Path, name: str, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tree)
    assert main(["check", ".", "--no-cache", *CASES[name]]) == 2  # engine/broken.py
    text = _comparable(name, capsys.readouterr().out)
    golden = GOLDEN / name
    if os.environ.get("SYNCGUARD_UPDATE_GOLDEN"):
        golden.write_text(text, encoding="utf-8")
    assert text == golden.read_text(encoding="utf-8")
    assert "broken.py" in text or name.startswith("statistics")
    assert "All checks passed" not in text
