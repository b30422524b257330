"""Rule documentation: ``syncguard rule`` output and the generated docs/rules.md."""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping

from syncguard.rule import Rule


def _example(code: str) -> str:
    return inspect.cleandoc(code.strip("\n")) if code.strip() else ""


def rule_text(rule: type[Rule], output_format: str = "text") -> str:
    """Everything about one rule: what, why it syncs, cost, an example and its fix."""
    if output_format == "json":
        return json.dumps(_rule_json(rule), indent=2) + "\n"
    lines = [
        f"# {rule.code} {rule.name}",
        "",
        f"{rule.message}",
        f"Family: {rule.family()}. Fix available: {'yes' if rule.fixable() else 'no'}.",
        "",
        inspect.cleandoc(rule.__doc__ or ""),
        "",
    ]
    if rule.cost:
        lines += [f"Measured cost: {rule.cost}", ""]
    if rule.INVALID:
        lines += ["Example (reported):", "", "```python", _example(rule.INVALID[0].code), "```", ""]
        if rule.INVALID[0].fixed:
            lines += ["After `--fix`:", "", "```python", _example(rule.INVALID[0].fixed), "```", ""]
    if rule.VALID:
        lines += ["Not reported:", "", "```python", _example(rule.VALID[0].code), "```", ""]
    return "\n".join(lines)


def _rule_json(rule: type[Rule]) -> dict[str, object]:
    return {
        "code": rule.code,
        "name": rule.name,
        "family": rule.family(),
        "message": rule.message,
        "fix": rule.fixable(),
    }


def rule_listing(rules: Mapping[str, type[Rule]], output_format: str = "text") -> str:
    """One line per rule: code, name, family, fix availability."""
    if output_format == "json":
        return json.dumps([_rule_json(rule) for rule in rules.values()], indent=2) + "\n"
    rows = [
        f"{rule.code}  {rule.name:<28} {rule.family():<26} {'fix' if rule.fixable() else '-'}"
        for rule in rules.values()
    ]
    return "\n".join(rows) + "\n"
