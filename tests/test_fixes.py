"""Autofix: the codemods, keyword insertion, awkward formatting, the fix loop, and the
--fix / --diff command line."""

from __future__ import annotations

import ast
import json
import shutil
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from syncguard.analysis import FileAnalyzer
from syncguard.cli import main
from syncguard.codemods import CODEMODS, Codemod, text_edit
from syncguard.engine import lint_files
from syncguard.facts import Edit, Fix, Span
from syncguard.fixes import SAFE, UNSAFE, add_keyword_fix, apply_fixes, fix_paths, unified_diff

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


# ------------------------------------------------------------ codemods


def fix(codemod: str, line: int, column: int, end_line: int, end_column: int, *args: str) -> Fix:
    return Fix(SAFE, codemod, codemod, Span(line, column, end_line, end_column), args)


def test_a_fix_rewrites_the_node_its_span_names_and_nothing_else() -> None:
    source = "a = f(x)  # keep\nb = 'é' + g(y)\r\nc = (3)\n"
    fixes = [
        fix("set-keyword", 2, 11, 2, 15, "k", "1"),
        fix("replace", 3, 6, 3, 7, "-3"),
        fix("set-keyword", 1, 5, 1, 9, "k", "2"),
    ]
    new, applied = apply_fixes(source, fixes)
    assert new == "a = f(x, k=2)  # keep\nb = 'é' + g(y, k=1)\r\nc = (-3)\n"
    assert applied == 3


def test_a_fix_keeps_old_mac_line_endings_after_a_trailing_comment() -> None:
    # LibCST drops a region's final lone "\r": the next line would join the comment.
    source = "def f(x):\r    y = g(x)  # keep\r    return y\r"
    new, applied = apply_fixes(source, [fix("set-keyword", 2, 9, 2, 13, "k", "1")])
    assert (new, applied) == ("def f(x):\r    y = g(x, k=1)  # keep\r    return y\r", 1)


def test_a_span_that_names_no_node_of_the_codemod_s_kind_is_left_alone() -> None:
    source = "a = f(x)\n"
    assert apply_fixes(source, [fix("set-keyword", 1, 5, 1, 8, "k", "1")]) == (source, 0)
    assert apply_fixes(source, [fix("one-element-slice", 1, 5, 1, 9)]) == (source, 0)
    assert apply_fixes(source, [fix("no-such-codemod", 1, 5, 1, 9)]) == (source, 0)


def test_of_two_fixes_for_one_node_the_first_wins_and_nested_ones_compose() -> None:
    source = "y = f(g(x))\n"
    same = [fix("set-keyword", 1, 5, 1, 12, "a", "1"), fix("replace", 1, 5, 1, 12, "h()")]
    assert apply_fixes(source, same) == ("y = f(g(x), a=1)\n", 1)
    nested = [fix("set-keyword", 1, 5, 1, 12, "a", "1"), fix("set-keyword", 1, 7, 1, 11, "b", "2")]
    assert apply_fixes(source, nested) == ("y = f(g(x, b=2), a=1)\n", 2)


def test_a_rewrite_python_would_not_compile_is_not_made() -> None:
    # LibCST accepts `f(x for x in y, k=True)`; Python's parser does not.
    source = "a = f(x for x in y)\nb = g(z)\n"
    fixes = [fix("set-keyword", 1, 5, 1, 20, "k", "True"), fix("set-keyword", 2, 5, 2, 9, "k", "1")]
    assert apply_fixes(source, fixes) == ("a = f(x for x in y)\nb = g(z, k=1)\n", 1)


def test_a_rewrite_libcst_cannot_parse_again_is_not_made(monkeypatch) -> None:
    monkeypatch.setitem(CODEMODS, "test-broken", CODEMODS["replace"])

    class Broken(Codemod):  # registers itself in CODEMODS (monkeypatch removes it after)
        name = "test-broken"
        node_type = cst.Name

        def rewrite(self, node: cst.CSTNode, arguments: tuple[str, ...]) -> cst.CSTNode:
            return cst.Name("not a name")

    source = "if y:\n    x\n"  # (an indented line alone is no module: nothing is tried)
    assert apply_fixes(source, [fix("test-broken", 2, 5, 2, 6)]) == (source, 0)


def test_a_codemod_building_a_node_libcst_refuses_makes_no_fix(monkeypatch) -> None:
    monkeypatch.setitem(CODEMODS, "test-invalid", CODEMODS["replace"])

    class Invalid(Codemod):
        name = "test-invalid"
        node_type = cst.Name

        def rewrite(self, node: cst.CSTNode, arguments: tuple[str, ...]) -> cst.CSTNode:
            return cst.Integer("-1")  # LibCST's integers have no sign: CSTValidationError

    assert apply_fixes("x\n", [fix("test-invalid", 1, 1, 1, 2)]) == ("x\n", 0)


def test_one_element_slices_of_negative_indices() -> None:
    source = "buf[-2] = 0\nbuf[-1] = 0\nbuf[..., 3] = 0\n"
    fixes = [fix("one-element-slice", 1, 1, 1, 8), fix("one-element-slice", 2, 1, 2, 8)]
    fixes.append(fix("one-element-slice", 3, 1, 3, 12))
    new, applied = apply_fixes(source, fixes)
    assert (new, applied) == ("buf[-2:-1] = 0\nbuf[-1:] = 0\nbuf[..., 3:4] = 0\n", 3)


def test_a_new_codemod_is_one_small_class(monkeypatch) -> None:
    """The extension point the codemods module documents: a statement-level rewrite (what
    --add-noqa needs) located by a finding's span anywhere on the statement's lines."""
    monkeypatch.setitem(CODEMODS, "test-trailing-comment", CODEMODS["replace"])

    class TrailingComment(Codemod):
        name = "test-trailing-comment"
        node_type = cst.SimpleStatementLine

        def matches(self, position, span: Span) -> bool:
            return position.start.line <= span.line <= position.end.line

        def rewrite(self, node: cst.CSTNode, arguments: tuple[str, ...]) -> cst.CSTNode:
            assert isinstance(node, cst.SimpleStatementLine)
            comment = cst.Comment(f"# {arguments[0]}")
            trailing = node.trailing_whitespace.with_changes(
                whitespace=cst.SimpleWhitespace("  "), comment=comment
            )
            return node.with_changes(trailing_whitespace=trailing)

    source = "def f(x):\n    y = g(\n        x)\n    return y\n"
    found = fix("test-trailing-comment", 3, 9, 3, 10, "noqa: SG101")
    assert apply_fixes(source, [found]) == (
        "def f(x):\n    y = g(\n        x)  # noqa: SG101\n    return y\n",
        1,
    )


def test_text_edit_is_the_smallest_change_the_codemod_makes() -> None:
    source = "import torch\nbuf[0] = 0\n"
    edit = text_edit(source, fix("one-element-slice", 2, 1, 2, 7))
    assert edit == Edit(Span(2, 6, 2, 6), ":1")
    assert text_edit(source, fix("set-keyword", 2, 1, 2, 7, "k", "1")) is None


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
    keyword = add_keyword_fix(analyzer, call, "non_blocking", "True", UNSAFE)
    if keyword is None:
        return None
    assert keyword.applicability == UNSAFE
    fixed, count = apply_fixes(source, [keyword])
    assert count == 1
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


# ------------------------------------------------------------ awkward formatting

AWKWARD = """\
import torch
from torch import nn


class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = torch.zeros(16, device="cuda")

    def forward(self, x, lens, logits):
        (self.buf)[0] = 0
        self.buf[-1] = \\
            0
        t = torch.tensor(
            lens,  # per-request lengths
            # copied every step
            device=x.device,
        )
        staged = (logits * 2).cpu()
        later = logits \\
            .cpu()
        host = logits.to(
            device="cpu",  # host copy
            # keep the dtype
            dtype=torch.float32,
        )
        return x + t.sum() + self.buf, staged, later, host
"""

AWKWARD_FIXED = """\
import torch
from torch import nn


class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = torch.zeros(16, device="cuda")

    def forward(self, x, lens, logits):
        (self.buf)[0:1] = 0
        self.buf[-1:] = \\
            0
        t = torch.tensor(
            lens,  # per-request lengths
            # copied every step
            pin_memory=True,
        ).to(x.device, non_blocking=True)
        staged = (logits * 2).to("cpu", non_blocking=True)
        later = logits \\
            .to("cpu", non_blocking=True)
        host = logits.to(
            device="cpu",  # host copy
            # keep the dtype
            dtype=torch.float32, non_blocking=True,
        )
        return x + t.sum() + self.buf, staged, later, host
"""


def fix_twice(path: Path, capsys) -> bytes:
    """``--fix --unsafe-fixes`` on ``path``; a second run must change nothing."""
    code, out = run(capsys, "--fix", "--unsafe-fixes", str(path))
    assert code == 0 and "Applied 6 fixes to 1 files." in out, out
    fixed = path.read_bytes()
    code, out = run(capsys, "--fix", "--unsafe-fixes", str(path))
    assert (code, path.read_bytes()) == (0, fixed) and "No fixes applied." in out
    return fixed


def test_fixes_keep_comments_parentheses_and_continuations(tmp_path, capsys) -> None:
    path = tmp_path / "model.py"
    path.write_text(AWKWARD)
    assert fix_twice(path, capsys).decode() == AWKWARD_FIXED


@pytest.mark.parametrize(
    ("name", "encode", "decode"),
    [
        ("CRLF with a BOM", lambda t: b"\xef\xbb\xbf" + t.replace("\n", "\r\n").encode(),
         lambda b: b.removeprefix(b"\xef\xbb\xbf").decode().replace("\r\n", "\n")),
        ("CR line endings", lambda t: t.replace("\n", "\r").encode(),
         lambda b: b.decode().replace("\r", "\n")),
        ("tabs", lambda t: t.replace("    ", "\t").encode(),
         lambda b: b.decode().replace("\t", "    ")),
        ("form feeds", lambda t: t.replace("\n\n", "\n\x0c\n").encode(),
         lambda b: b.decode().replace("\n\x0c\n", "\n\n")),
        ("U+2028 in comments", lambda t: t.replace("# keep", "# \u2028keep").encode(),
         lambda b: b.decode().replace("# \u2028keep", "# keep")),
    ],
)  # fmt: skip
def test_fixes_keep_the_file_s_own_bytes(tmp_path, capsys, name, encode, decode) -> None:
    path = tmp_path / "model.py"
    path.write_bytes(encode(AWKWARD))
    fixed = fix_twice(path, capsys)
    assert fixed == encode(AWKWARD_FIXED), name
    assert decode(fixed) == AWKWARD_FIXED


def test_fixes_inside_one_line_compound_statements_and_decorators(tmp_path, capsys) -> None:
    source = MODEL.replace(
        "        self.buf[0] = 0\n",
        "        if x is not None: self.buf[0] = 0\n        a = 1; self.buf[1] = 0\n",
    )
    path = tmp_path / "model.py"
    path.write_text(source)
    assert run(capsys, "--fix", str(path))[0] == 1  # the unsafe SG301 remains
    text = path.read_text()
    assert "if x is not None: self.buf[0:1] = 0\n" in text
    assert "a = 1; self.buf[1:2] = 0\n" in text


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
    diff = unified_diff(everything).decode()
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
                "content": ":1",
                "location": {"row": 11, "column": 19},
                "end_location": {"row": 11, "column": 19},
            }
        ],
    }
    assert fixes["SG301"]["applicability"] == "unsafe"


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
        ast.parse(text)
        Path(path).write_text(text, encoding="utf-8")
    second = fix_paths(["fixtures"], unsafe=True)
    assert second.applied == 0 and second.fixed == {}
    assert all(finding.suggestion for finding in second.result.findings)
