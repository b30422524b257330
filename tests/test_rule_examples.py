"""Every rule's embedded VALID / INVALID examples (Fixit's convention)."""

from __future__ import annotations

import ast
import inspect

import pytest

from syncguard.config import Settings
from syncguard.fixes import fix_paths
from syncguard.rules import all_rules
from syncguard.testing import lint_snippet

RULES = all_rules()
VALID = [
    pytest.param(rule, example, id=f"{code}-valid-{index}")
    for code, rule in RULES.items()
    for index, example in enumerate(rule.VALID)
]
INVALID = [
    pytest.param(rule, example, id=f"{code}-invalid-{index}")
    for code, rule in RULES.items()
    for index, example in enumerate(rule.INVALID)
]

FIXED = [
    pytest.param(rule, example, id=f"{code}-fixed-{index}")
    for code, rule in RULES.items()
    for index, example in enumerate(rule.INVALID)
    if example.fixed is not None
]


def test_every_rule_has_examples_and_docs() -> None:
    for code, rule in RULES.items():
        assert rule.VALID and rule.INVALID, f"{code} needs valid and invalid examples"
        doc = inspect.getdoc(rule) or ""
        assert "Why it syncs" in doc or "Why it" in doc, f"{code} docstring must say why"
        assert "How to fix" in doc, f"{code} docstring must say how to fix"
        assert rule.name == rule.name.lower() and " " not in rule.name


@pytest.mark.parametrize(("rule", "example"), VALID)
def test_valid_example_is_not_reported(rule, example) -> None:
    result = lint_snippet(example.code, select=(rule.code,))
    assert not result.problems
    assert [f for f in result.findings if f.code == rule.code] == []


@pytest.mark.parametrize(("rule", "example"), INVALID)
def test_invalid_example_is_reported(rule, example) -> None:
    result = lint_snippet(example.code, select=(rule.code,))
    assert not result.problems
    findings = [f for f in result.findings if f.code == rule.code]
    assert findings, f"{rule.code} did not report its invalid example"
    assert all(f.suggestion for f in findings)
    if example.line is not None:
        assert example.line in {f.span.line for f in findings}


@pytest.mark.parametrize(("rule", "example"), FIXED)
def test_fixed_example_is_what_the_fix_produces(rule, example, tmp_path, monkeypatch) -> None:
    """Apply the example's fixes (unsafe included): the result is ``fixed``, it parses,
    and re-linting it finds nothing more for the rule."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "example.py").write_text(inspect.cleandoc(example.code) + "\n")
    settings = Settings().with_overrides(select=(rule.code,))
    run = fix_paths(["example.py"], settings=settings, unsafe=True)
    fixed = run.fixed.get("example.py")
    assert fixed == inspect.cleandoc(example.fixed) + "\n", f"{rule.code} fix differs"
    ast.parse(fixed)
    assert not run.result.problems
    assert [f for f in run.result.findings if f.code == rule.code] == []
