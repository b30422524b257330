"""Rule documentation: ``syncguard rule`` output and the generated docs/rules.md.

Everything comes from the rule classes themselves: the docstring ("what it
flags", "Why it syncs:", "How to fix:"), the measured ``cost``, and the
embedded examples (the first invalid one, with its ``--fix`` result when it
has one, and the first valid one as the sync-free form). ``python -m
syncguard.ruledoc > docs/rules.md`` regenerates the reference; a test fails
when the committed file is stale.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass

from syncguard.rule import Rule

REGENERATE = "python -m syncguard.ruledoc > docs/rules.md"
_LITERAL = re.compile(r"``(.+?)``", re.DOTALL)


@dataclass(frozen=True)
class RuleDoc:
    """One rule's documentation, split into the parts every output shows."""

    code: str
    name: str
    family: str
    message: str
    fix: bool  # an autofix exists (one of its examples shows the fixed code)
    flags: str  # what it reports
    why_title: str  # "Why it syncs", or "Why it costs" for rules that do not block
    why: str
    how_to_fix: str
    cost: str
    example: str  # reported code
    fixed: str  # the example after --fix ("" without an autofix)
    sync_free: str  # code the rule does not report


def _code(text: str | None) -> str:
    return inspect.cleandoc(text.strip("\n")) if text and text.strip() else ""


def _sentence(text: str) -> str:
    """The text after a "Why it syncs:" heading, starting with a capital letter."""
    text = text.strip()
    return text[:1].upper() + text[1:]


def _plain(text: str) -> str:
    """Docstring markup to Markdown-style code spans: ``x`` -> `x`."""
    return _LITERAL.sub(r"`\1`", text)


def rule_doc(rule: type[Rule]) -> RuleDoc:
    """Split ``rule``'s docstring into what it flags, why, and how to fix it."""
    paragraphs = inspect.cleandoc(rule.__doc__ or "").split("\n\n")
    flags: list[str] = []
    why: list[str] = []
    how: list[str] = []
    why_title = "Why it syncs"
    current = flags
    for paragraph in paragraphs:
        head, colon, rest = paragraph.partition(":")
        if colon and head.startswith("Why it") and "\n" not in head:
            why_title, current, paragraph = head, why, _sentence(rest)
        elif colon and head == "How to fix":
            current, paragraph = how, _sentence(rest)
        current.append(_plain(paragraph))
    example = rule.INVALID[0] if rule.INVALID else None
    fixed = next((item for item in rule.INVALID if item.fixed), None)
    shown = fixed or example
    return RuleDoc(
        code=rule.code,
        name=rule.name,
        family=rule.family(),
        message=rule.message,
        fix=rule.fixable(),
        flags="\n\n".join(flags),
        why_title=why_title,
        why="\n\n".join(why),
        how_to_fix="\n\n".join(how),
        cost=rule.cost,
        example=_code(shown.code) if shown else "",
        fixed=_code(shown.fixed) if shown else "",
        sync_free=_code(rule.VALID[0].code) if rule.VALID else "",
    )


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" if line else "" for line in text.splitlines())


def rule_text(rule: type[Rule], output_format: str = "text") -> str:
    """Everything about one rule: what it flags, why, cost, an example and its fix."""
    doc = rule_doc(rule)
    if output_format == "json":
        return json.dumps(asdict(doc), indent=2) + "\n"
    parts = [
        f"{doc.code} {doc.name}: {doc.message}",
        f"Family: {doc.family}. Autofix: {'yes' if doc.fix else 'no'}.",
        f"What it flags:\n{_indent(doc.flags)}",
        f"{doc.why_title}:\n{_indent(doc.why)}",
        f"Measured cost:\n{_indent(doc.cost or 'not measured')}",
        f"How to fix:\n{_indent(doc.how_to_fix)}",
        f"Example (reported):\n{_indent(doc.example)}",
    ]
    if doc.fixed:
        parts.append(f"After `syncguard check --fix` (add --unsafe-fixes if unsafe):\n"
                     f"{_indent(doc.fixed)}")  # fmt: skip
    if doc.sync_free:
        parts.append(f"Not reported (sync-free forms):\n{_indent(doc.sync_free)}")
    return "\n\n".join(parts) + "\n"


def _listing_row(rule: type[Rule]) -> dict[str, object]:
    return {
        "code": rule.code,
        "name": rule.name,
        "family": rule.family(),
        "fix": rule.fixable(),
        "message": rule.message,
    }


def rule_listing(rules: Mapping[str, type[Rule]], output_format: str = "text") -> str:
    """One line per rule: code, name, family, fix availability."""
    if output_format == "json":
        return json.dumps([_listing_row(rule) for rule in rules.values()], indent=2) + "\n"
    width = max((len(rule.name) for rule in rules.values()), default=0) + 2
    rows = [f"{'code':<7}{'name':<{width}}{'family':<26}fix"]
    rows += [
        f"{rule.code:<7}{rule.name:<{width}}{rule.family():<26}{'yes' if rule.fixable() else '-'}"
        for rule in rules.values()
    ]
    return "\n".join(rows) + "\n"


def _section(doc: RuleDoc) -> list[str]:
    """The Markdown body of one rule's documentation (below its heading)."""
    lines = [
        f"{doc.message}.",
        "",
        f"Family: {doc.family}. Autofix: {'yes' if doc.fix else 'no'}.",
        "",
        "**What it flags.** " + doc.flags,
        "",
        f"**{doc.why_title}.** " + doc.why,
        "",
        f"**Measured cost.** {doc.cost or 'not measured'}.",
        "",
        "**How to fix.** " + doc.how_to_fix,
    ]
    if doc.example:
        lines += ["", "Example (reported):", "", "```python", doc.example, "```"]
    if doc.fixed:
        lines += ["", "After `syncguard check --fix`:", "", "```python", doc.fixed, "```"]
    if doc.sync_free:
        lines += ["", "Not reported:", "", "```python", doc.sync_free, "```"]
    return lines


def rule_markdown(rule: type[Rule]) -> str:
    """One rule's documentation as Markdown (what code-scanning services show as help)."""
    doc = rule_doc(rule)
    return "\n".join([f"## {doc.code} {doc.name}", "", *_section(doc)]) + "\n"


def listing_markdown(rules: Mapping[str, type[Rule]]) -> str:
    """The rule list as a Markdown table: code, name, family, autofix."""
    rows = ["| Code | Name | Family | Autofix |", "|---|---|---|---|"]
    rows += [
        f"| {rule.code} | {rule.name} | {rule.family()} | {'yes' if rule.fixable() else ''} |"
        for rule in rules.values()
    ]
    return "\n".join(rows) + "\n"


def anchor(rule: type[Rule]) -> str:
    """The id of the rule's heading in docs/rules.md."""
    return f"{rule.code}-{rule.name}".lower()


def markdown(rules: Mapping[str, type[Rule]]) -> str:
    """docs/rules.md: an index table, then every rule's full documentation."""
    docs = [rule_doc(rule) for rule in rules.values()]
    lines = [
        "# syncguard rules",
        "",
        f"Generated from the rules' own documentation by `{REGENERATE}`;",
        "do not edit by hand. `syncguard rule SG101` prints the same text for one rule.",
        "",
        "| Code | Name | Family | Autofix | Reports |",
        "|---|---|---|---|---|",
    ]
    for rule, doc in zip(rules.values(), docs, strict=True):
        message = doc.message.replace("|", "\\|")
        lines.append(
            f"| [{doc.code}](#{anchor(rule)}) | {doc.name} | {doc.family} | "
            f"{'yes' if doc.fix else ''} | {message} |"
        )
    for doc in docs:
        lines += ["", f"## {doc.code} {doc.name}", "", *_section(doc)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    from syncguard.rules import all_rules

    sys.stdout.write(markdown(all_rules()))
