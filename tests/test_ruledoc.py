"""The rule reference: `syncguard rule`, `syncguard rule --all`, and docs/rules.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from syncguard.cli import main
from syncguard.ruledoc import REGENERATE, markdown, rule_doc
from syncguard.rules import all_rules

RULES = all_rules()
DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules.md"


def test_docs_rules_md_is_up_to_date() -> None:
    committed = DOCS.read_text(encoding="utf-8") if DOCS.exists() else ""
    assert committed == markdown(RULES), f"docs/rules.md is stale: run `{REGENERATE}`"


@pytest.mark.parametrize("code", list(RULES))
def test_every_rule_documents_each_part(code: str) -> None:
    doc = rule_doc(RULES[code])
    assert doc.flags and doc.why and doc.how_to_fix, f"{code}: a docstring part is missing"
    assert doc.cost, f"{code}: no measured cost"
    assert doc.example and doc.sync_free, f"{code}: no example"
    assert not doc.why.startswith(("Why", ":")) and not doc.how_to_fix.startswith("How")
    assert "``" not in doc.flags + doc.why + doc.how_to_fix  # docstring markup converted
    assert doc.fix == bool(doc.fixed)


def test_rule_prints_what_why_cost_example_and_fix(capsys) -> None:
    assert main(["rule", "sg304"]) == 0
    out = capsys.readouterr().out
    sections = [
        "SG304 scalar-index-assign:",
        "What it flags:",
        "Why it syncs:",
        "Measured cost:",
        "How to fix:",
        "Example (reported):",
        "After `syncguard check --fix`",
        "Not reported (sync-free forms):",
    ]
    positions = [out.index(section) for section in sections]
    assert positions == sorted(positions)
    assert "self.buf[0] = 0" in out and "self.buf[0:1] = 0" in out


def test_rule_json_has_every_part(capsys) -> None:
    assert main(["rule", "SG205", "--output-format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["code"] == "SG205" and data["family"] == "data-dependent shape"
    assert data["fix"] is False and "output_size" in data["how_to_fix"]
    assert "30.39 ms" in data["cost"]


def test_rule_all_lists_code_name_family_and_fix(capsys) -> None:
    assert main(["rule", "--all"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["code", "name", "family", "fix"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert list(rows) == list(RULES)
    assert rows["SG304"].endswith("yes") and rows["SG202"].endswith("-")
    assert "data-dependent shape" in rows["SG202"]

    assert main(["rule", "--all", "--output-format", "json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert [item["code"] for item in listing] == list(RULES)
    assert {item["code"]: item["fix"] for item in listing}["SG301"] is True
    assert set(listing[0]) == {"code", "name", "family", "fix", "message"}


def test_unknown_rule_is_a_clear_error(capsys) -> None:
    assert main(["rule", "SG999"]) == 2
    assert "unknown rule 'SG999'" in capsys.readouterr().err
