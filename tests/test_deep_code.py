"""Code CPython compiles is analysed however deeply it nests, and compiling a linted file
prints nothing of its own (issue 17, items 6 and 8)."""

from __future__ import annotations

import os
import warnings

from conftest import run_cli
from syncguard.engine import analyze_source
from syncguard.facts import FileError
from syncguard.testing import lint_tree

MODULE = "import torch\nfrom torch import nn\nclass M(nn.Module):\n    def forward(self, x):\n"


def test_an_expression_of_500_terms_is_analysed() -> None:
    terms = " + ".join(f"x{index}" for index in range(500))
    source = MODULE + f"        total = {terms}\n        return total.item()\n"
    result = lint_tree({"model.py": source})
    assert result.problems == []
    assert [(f.code, f.span.line) for f in result.findings] == [("SG101", 6)]


def test_a_chain_of_250_method_calls_is_analysed() -> None:
    chain = "x" + ".view(-1)" * 250
    source = MODULE + f"        y = {chain}\n        return y.tolist()\n"
    result = lint_tree({"model.py": source})
    assert result.problems == []
    assert [(f.code, f.span.line) for f in result.findings] == [("SG102", 6)]


def test_compiling_a_linted_file_warns_about_nothing() -> None:
    source = 'import re\nPATTERN = re.compile("\\d+\\s")\nflag = 1 is 1\n'
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        facts = analyze_source(source, "m", False, [])
        annotated = analyze_source('def f(x: "list[\\d]"): pass\n', "m", False, [])
    assert not isinstance(facts, FileError) and not isinstance(annotated, FileError)
    assert [str(warning.message) for warning in caught] == []


def test_the_command_line_prints_no_warning_of_the_linted_code(tmp_path) -> None:
    (tmp_path / "escapes.py").write_text('PATTERN = "\\d+"\nflag = 1 is 1\n')
    os.environ["PYTHONWARNINGS"] = "always"
    try:
        result = run_cli("check", str(tmp_path), "--no-cache", "--output-format", "concise")
    finally:
        del os.environ["PYTHONWARNINGS"]
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr
