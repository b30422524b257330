"""What a run writes: --output-file, --quiet, stdin, and the summary when a file failed."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from syncguard.cli import main

HOT_ITEM = "import torch\n\n@torch.compile\ndef step(x):\n    return x.item()\n"


@pytest.fixture
def tree(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "a.py").write_text(HOT_ITEM)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_output_file_and_quiet(tree: Path, capsys) -> None:
    assert (
        main(["check", ".", "--no-cache", "-o", "out/report.json", "--output-format", "json"]) == 1
    )
    assert capsys.readouterr().out == ""
    assert [f["code"] for f in json.loads((tree / "out" / "report.json").read_text())] == ["SG101"]
    assert main(["check", ".", "--no-cache", "--quiet", "--output-format", "concise"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("a.py:5:12: SG101") and "Found" not in out
    (tree / "report").mkdir()
    assert main(["check", ".", "--no-cache", "-o", "report"]) == 2  # a folder: not writable
    assert "cannot write the report" in capsys.readouterr().err


def test_stdin_with_a_filename(tree: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(HOT_ITEM.replace("item", "tolist")))
    code = main(["check", "-", "--stdin-filename", "pkg/new.py", "--no-cache",
                 "--output-format", "json"])  # fmt: skip
    assert code == 1
    (finding,) = json.loads(capsys.readouterr().out)
    assert (finding["path"], finding["code"]) == ("pkg/new.py", "SG102")
    # a file that exists: its text on stdin wins over the one on disk
    monkeypatch.setattr(sys, "stdin", io.StringIO("def f(x):\n    return x\n"))
    assert main(["check", "-", "--stdin-filename", "a.py", "--no-cache"]) == 0
    assert main(["check", "a.py", "--stdin-filename", "a.py"]) == 2
    assert "needs the path `-`" in capsys.readouterr().err


def test_stdin_inside_a_project_sees_the_helpers(tree: Path, monkeypatch, capsys) -> None:
    (tree / "pyproject.toml").write_text("[tool.syncguard]\n")
    (tree / "pkg").mkdir()
    (tree / "pkg" / "__init__.py").write_text("")
    (tree / "pkg" / "helpers.py").write_text("def total(x):\n    return x.sum().item()\n")
    (tree / "pkg" / "model.py").write_text("class M:\n    pass\n")
    caller = (
        "from torch import nn\n\nfrom pkg.helpers import total\n\n\n"
        "class M(nn.Module):\n    def forward(self, x):\n        return total(x)\n"
    )
    monkeypatch.setattr(sys, "stdin", io.StringIO(caller))
    main(["check", "-", "--stdin-filename", "pkg/model.py", "--no-cache", "--output-format",
          "json"])  # fmt: skip
    found = json.loads(capsys.readouterr().out)
    assert [(f["path"], f["line"], f["code"]) for f in found] == [("pkg/model.py", 8, "SG101")]


def test_summary_never_says_all_passed_when_a_file_failed(tree: Path, capsys) -> None:
    (tree / "a.py").write_text("def f(x):\n    return x\n")
    (tree / "b.py").write_text("def broken(:\n")
    assert main(["check", ".", "--no-cache", "--output-format", "concise"]) == 2
    out = capsys.readouterr().out
    assert "All checks passed" not in out
    assert out.splitlines() == [
        "b.py:1:12: SG000 syntax error: invalid syntax",
        "No findings in the other files, but 1 file could not be analysed.",
    ]
