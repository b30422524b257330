"""Every rule's embedded VALID / INVALID examples (Fixit's convention)."""

from __future__ import annotations

import inspect

import pytest

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
