"""Baselines: adopt on a tree with findings; only new findings are reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from syncguard.baseline import BaselineError, Key, dumps, load, normalised
from syncguard.cli import main


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "adoption", root)
    (root / "pyproject.toml").write_text("[tool.syncguard]\n")
    monkeypatch.chdir(root)
    return root


def check(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str], str]:
    capsys.readouterr()
    code = main(["check", ".", "--no-cache", "--output-format", "json", *args])
    out, err = capsys.readouterr()
    return code, [f"{f['code']}@{f['line']}" for f in json.loads(out)], err


def test_baseline_hides_old_findings_and_shows_new_ones(tree: Path, capsys) -> None:
    assert main(["baseline", "--no-cache", "--output", "baseline.json"]) == 0
    assert "Wrote 3 findings to baseline.json." in capsys.readouterr().out
    assert check("--baseline", "baseline.json", capsys=capsys)[:2] == (0, [])
    runner = tree / "engine" / "runner.py"
    runner.write_text(runner.read_text() + "\n    def extra(self, x):\n        return x.item()\n")
    code, found, _ = check("--baseline", "baseline.json", "--scope", "all", capsys=capsys)
    assert code == 1 and found == ["SG101@22"]  # the new one only


def test_survives_inserted_lines_moved_functions_and_unrelated_renames(tree: Path, capsys):
    assert main(["baseline", "--no-cache", "--output", "baseline.json"]) == 0
    runner = tree / "engine" / "runner.py"
    text = runner.read_text()
    # lines above every finding, and a helper renamed where it is defined and used
    text = text.replace("import torch\n", "import torch\n\nSTEPS = 1  # a new constant\n\n", 1)
    text = text.replace("pad_to_block", "round_to_block")
    runner.write_text(text)
    sampling = tree / "engine" / "sampling.py"
    sampling.write_text(
        "# moved: pad first\n\nimport torch\n\n\n"
        "def round_to_block(lengths: torch.Tensor, block: int) -> torch.Tensor:\n"
        "    return (lengths + block - 1) // block * block\n\n\n"
        "def count_accepted(accepted: torch.Tensor) -> int:\n"
        "    return int(accepted.sum().item())\n"
    )
    code, found, err = check("--baseline", "baseline.json", "--fail-on-stale", capsys=capsys)
    assert (code, found) == (0, [])
    assert "stale" not in err


def test_stale_entries_are_listed_and_fail_on_request(tree: Path, capsys) -> None:
    assert main(["baseline", "--no-cache", "--output", "baseline.json"]) == 0
    runner = tree / "engine" / "runner.py"
    runner.write_text(runner.read_text().replace("self.slots[0] = 0", "self.slots[0:1] = 0"))
    code, found, err = check("--baseline", "baseline.json", capsys=capsys)
    assert (code, found) == (0, [])
    assert "stale baseline entry (nothing matches it): engine/runner.py: SG304" in err
    assert check("--baseline", "baseline.json", "--fail-on-stale", capsys=capsys)[0] == 1
    # a run over another part of the tree cannot tell: no stale entries there
    capsys.readouterr()
    main(["check", "engine/sampling.py", "--no-cache", "--baseline", "baseline.json"])
    assert "stale" not in capsys.readouterr().err


def test_file_is_sorted_and_keyed_as_documented(tree: Path, capsys, monkeypatch) -> None:
    assert main(["baseline", "--no-cache", "--output", "baseline.json"]) == 0
    data = json.loads((tree / "baseline.json").read_text())
    assert data["format"] == "syncguard-baseline" and data["version"] == 1
    entries = data["findings"]
    assert entries == sorted(entries, key=lambda e: tuple(e.values()))
    assert entries[1] == {
        "path": "engine/runner.py",
        "function": "engine.runner.DraftRunner.forward",
        "code": "SG101",
        "source": "count_accepted(accepted)",
        "occurrence": 0,
    }
    # the same findings from a subfolder: the same file, byte for byte
    monkeypatch.chdir(tree / "engine")
    assert main(["baseline", "..", "--no-cache", "-o", "../again.json"]) == 0
    assert (tree / "again.json").read_text() == (tree / "baseline.json").read_text()


def test_keys_normalise_spacing_and_count_occurrences() -> None:
    assert normalised("x .item( )") == "x.item()"
    assert normalised("buf[0]   =  0") == "buf[0] = 0"
    assert normalised("f(a,\n  # comment\n  b)") == "f(a, b)"
    keys = [Key("a.py", "m.f", "SG101", "x.item()", 1), Key("a.py", "m.f", "SG101", "x.item()", 0)]
    text = dumps(keys)
    assert text.index('"occurrence": 0') < text.index('"occurrence": 1')


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "baseline file not found"),
        ("{", "invalid JSON"),
        ('{"format": "other"}', "not a syncguard baseline"),
        ('{"format": "syncguard-baseline", "version": 9}', "baseline version 9"),
    ],
)
def test_bad_baseline_exits_2(tree: Path, capsys, content: str | None, needle: str) -> None:
    if content is not None:
        (tree / "b.json").write_text(content)
    assert main(["check", ".", "--no-cache", "--baseline", "b.json"]) == 2
    assert needle in capsys.readouterr().err
    with pytest.raises(BaselineError, match=r"b\.json"):
        load("b.json")
