"""Autofix: edits, keyword insertion, the fix loop, and the --fix / --diff command line."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from syncguard.analysis import FileAnalyzer
from syncguard.cli import main
from syncguard.engine import lint_files
from syncguard.facts import Edit, Fix, Span, source_lines
from syncguard.fixes import (
    SAFE,
    UNSAFE,
    add_keyword_fix,
    apply_edits,
    fix_paths,
    fix_source,
    parses,
    unified_diff,
)

MODEL = """\
import torch
from torch import nn


class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = torch.zeros(16, device="cuda")

    def forward(self, x, lens):
        self.buf[0] = 0
        t = torch.tensor(lens, device=x.device)
        return x + t.sum() + self.buf
"""


def edit(line: int, column: int, end_line: int, end_column: int, text: str) -> Edit:
    return Edit(Span(line, column, end_line, end_column), text)


# ------------------------------------------------------------------ edits


def test_edits_apply_bottom_up_with_character_columns() -> None:
    source = "a = f(x)\nb = 'é' + g(y)\r\nc = 3\n"
    edits = [edit(2, 11, 2, 15, "h(y)"), edit(1, 5, 1, 9, "f(x, 1)"), edit(3, 5, 3, 5, "-")]
    assert apply_edits(source, edits) == "a = f(x, 1)\nb = 'é' + h(y)\r\nc = -3\n"


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(ValueError, match="overlapping"):
        apply_edits("abcdef\n", [edit(1, 1, 1, 4, "x"), edit(1, 3, 1, 5, "y")])
    with pytest.raises(ValueError, match="overlapping"):  # an insertion inside a replacement
        apply_edits("abcdef\n", [edit(1, 1, 1, 4, "x"), edit(1, 2, 1, 2, "y")])


def test_fix_source_skips_overlapping_fixes_and_fixes_that_break_parsing() -> None:
    source = "a = [1]\nb = [2]\nc = [3]\n"
    first = Fix(SAFE, "one", (edit(1, 6, 1, 7, "10"),))
    overlapping = Fix(SAFE, "two", (edit(1, 5, 1, 8, "[11]"),))
    breaking = Fix(SAFE, "broken", (edit(2, 5, 2, 6, "(("),))
    last = Fix(SAFE, "three", (edit(3, 6, 3, 7, "30"),))
    fixed, count = fix_source(source, [first, overlapping, breaking, last])
    assert fixed == "a = [11]\nb = [2]\nc = [30]\n"  # of two overlapping, the earlier wins
    assert count == 2
    assert parses(fixed) and not parses("b = ((2]\n")


def test_lines_are_numbered_as_python_numbers_them() -> None:
    assert source_lines("a\nb\x0cc\n") == ["a", "b\x0cc", ""]
    assert source_lines("a\r\nb\rc\n\x0cd") == ["a", "b", "c", "\x0cd"]


def test_a_form_feed_is_not_a_line_break() -> None:
    # A page break between sections: Python (and the spans) count it as part of a line.
    source = "a = 1\n\x0c\nb = 2\n"
    fixed = fix_source(source, [Fix(SAFE, "x", (edit(3, 5, 3, 6, "3"),))])
    assert fixed == ("a = 1\n\x0c\nb = 3\n", 1)


# ------------------------------------------------------------ keyword insertion


def keyword_fix_result(source: str) -> str | None:
    """Add ``non_blocking=True`` to the first call of ``.to`` in ``source``."""
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    analyzer = FileAnalyzer(tree, source, "m", False, [])
    call = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "to"
    )
    fix = add_keyword_fix(analyzer, call, "non_blocking", "True", UNSAFE)
    if fix is None:
        return None
    assert fix.applicability == UNSAFE
    fixed = apply_edits(source, fix.edits)
    assert parses(fixed)
    return fixed


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('y = x.to("cpu")\n', 'y = x.to("cpu", non_blocking=True)\n'),
        ('y = x.to("cpu",)\n', 'y = x.to("cpu", non_blocking=True,)\n'),
        ("y = x.to(device=d)\n", "y = x.to(device=d, non_blocking=True)\n"),
        ("y = x.to()\n", "y = x.to(non_blocking=True)\n"),
        ("y = x.to(\n)\n", "y = x.to(\nnon_blocking=True)\n"),
        (
            'y = x.to(\n    "cpu",  # host copy\n)\n',
            'y = x.to(\n    "cpu", non_blocking=True,  # host copy\n)\n',
        ),
        ("y = x.to(*args)\n", "y = x.to(*args, non_blocking=True)\n"),
    ],
)
def test_add_keyword_fix_keeps_the_call_valid(source: str, expected: str) -> None:
    assert keyword_fix_result(source) == expected


@pytest.mark.parametrize(
    "source",
    [
        'y = x.to("cpu", non_blocking=False)\n',  # already there: not a fix
        'y = x.to("cpu", **options)\n',  # **options may hold it
        "y = x.to(v for v in vs)\n",  # a bare generator takes no second argument
    ],
)
def test_add_keyword_fix_is_not_offered_where_it_could_be_wrong(source: str) -> None:
    assert keyword_fix_result(source) is None


# ------------------------------------------------------------------ fix loop


def test_fix_paths_applies_safe_fixes_unless_unsafe_allowed(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("model.py").write_text(MODEL)
    safe = fix_paths(["model.py"])
    assert safe.applied == 1
    assert "self.buf[0:1] = 0" in safe.fixed["model.py"]
    assert "torch.tensor(lens, device=x.device)" in safe.fixed["model.py"]
    assert [f.code for f in safe.result.findings] == ["SG301"]  # the unsafe one remains
    assert Path("model.py").read_text() == MODEL  # nothing written

    everything = fix_paths(["model.py"], unsafe=True)
    assert everything.applied == 2
    assert everything.result.findings == []
    diff = unified_diff(everything.original, everything.fixed)
    assert diff.startswith("--- a/model.py\n+++ b/model.py\n")
    assert "\n-        self.buf[0] = 0\n" in diff and "\n+        self.buf[0:1] = 0\n" in diff


# ------------------------------------------------------------------ command line


def run(capsys, *args: str) -> tuple[int, str]:
    code = main(["check", "--no-color", *args])
    return code, capsys.readouterr().out


def test_diff_prints_the_changes_and_writes_nothing(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    Path("model.py").write_text(MODEL)
    code, out = run(capsys, "--diff", ".")
    assert code == 1
    assert "+        self.buf[0:1] = 0" in out and "pin_memory" not in out
    code, out = run(capsys, "--diff", "--unsafe-fixes", ".")
    assert code == 1 and "pin_memory=True).to(x.device, non_blocking=True)" in out
    assert Path("model.py").read_text() == MODEL


def test_fix_writes_and_a_second_run_changes_nothing(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    Path("model.py").write_text(MODEL)
    code, out = run(capsys, "--fix", ".")
    assert code == 1  # the unsafe SG301 remains
    assert "Applied 1 fixes to 1 files." in out and "SG301" in out
    after_safe = Path("model.py").read_text()
    assert "self.buf[0:1] = 0" in after_safe

    code, out = run(capsys, "--fix", "--unsafe-fixes", ".")
    assert code == 0
    fixed = Path("model.py").read_text()
    assert "torch.tensor(lens, pin_memory=True).to(x.device, non_blocking=True)" in fixed

    code, out = run(capsys, "--fix", "--unsafe-fixes", ".")
    assert code == 0 and "No fixes applied." in out
    assert Path("model.py").read_text() == fixed
    code, out = run(capsys, "--diff", "--unsafe-fixes", ".")
    assert (code, out) == (0, "")


def test_fix_keeps_the_file_encoding_and_line_endings(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    text = "# -*- coding: latin-1 -*-\n# café\n" + MODEL
    Path("model.py").write_bytes(text.replace("\n", "\r\n").encode("latin-1"))
    code, _ = run(capsys, "--fix", ".")
    data = Path("model.py").read_bytes()
    assert code == 1
    assert b"# caf\xe9\r\n" in data and b"self.buf[0:1] = 0\r\n" in data
    assert data.count(b"\r\n") == text.count("\n")


def test_json_fix_field_has_applicability_message_and_edits(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    Path("model.py").write_text(MODEL)
    code, out = run(capsys, "--output-format", "json", ".")
    assert code == 1
    fixes = {item["code"]: item["fix"] for item in json.loads(out)}
    assert fixes["SG304"] == {
        "applicability": "safe",
        "message": "write through a one-element slice",
        "edits": [
            {
                "content": "0:1",
                "location": {"row": 11, "column": 18},
                "end_location": {"row": 11, "column": 19},
            }
        ],
    }
    assert fixes["SG301"]["applicability"] == "unsafe"


def test_linting_and_importing_the_fixer_do_not_import_libcst(tmp_path) -> None:
    (tmp_path / "model.py").write_text(MODEL)
    script = (
        "import sys\n"
        "import syncguard.fixes\n"
        "from syncguard.cli import main\n"
        f"main(['check', '--exit-zero', {str(tmp_path)!r}])\n"
        "assert 'libcst' not in sys.modules, 'libcst imported'\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0, completed.stderr


def test_fixture_findings_have_suggestions_and_fixes_round_trip(tmp_path, monkeypatch) -> None:
    """Every finding on the fixtures says how to fix it; applying every fix (unsafe
    included) leaves files that parse, and a second pass changes nothing."""
    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    shutil.copytree(fixtures, tmp_path / "fixtures")
    monkeypatch.chdir(tmp_path)
    first = fix_paths(["fixtures"], unsafe=True)
    assert first.applied >= 3 and not first.result.problems
    before = lint_files(["fixtures"])
    assert before.findings and all(finding.suggestion for finding in before.findings)
    for path, text in first.fixed.items():
        assert parses(text), path
        Path(path).write_text(text, encoding="utf-8")
    second = fix_paths(["fixtures"], unsafe=True)
    assert second.applied == 0 and second.fixed == {}
    assert all(finding.suggestion for finding in second.result.findings)
