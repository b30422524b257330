"""The linter's claims match the measured ground truth exactly.

``fixtures/ground_truth/ops.py`` holds every op measured on the H200, one per
line in one hot ``forward``: ``# blocks: SGn`` ops must be reported exactly once
with a code of family n, ``# free`` ops and set-up lines never.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest

from syncguard.engine import lint_files

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "ground_truth" / "ops.py"
_EXPECTATION = re.compile(r"#\s*(?:blocks:\s*(SG[1-5])|(free))\s*$")


def expectations(source: str) -> dict[int, str | None]:
    """Line -> expected code family (``"SG2"``) for blocking ops, None for free ones."""
    found: dict[int, str | None] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            match = _EXPECTATION.search(token.string)
            if match:
                found[token.start[0]] = match.group(1)
    return found


@pytest.fixture(scope="module")
def reported() -> dict[int, list[str]]:
    """Line -> codes reported for the fixture (default settings: hot paths only)."""
    result = lint_files([str(FIXTURE)])
    assert not result.problems
    codes: dict[int, list[str]] = defaultdict(list)
    for finding in result.findings:
        codes[finding.span.line].append(finding.code)
    return codes


def test_fixture_lists_both_kinds_of_op() -> None:
    expected = expectations(FIXTURE.read_text(encoding="utf-8"))
    blocking = [family for family in expected.values() if family is not None]
    assert len(blocking) >= 60 and len(expected) - len(blocking) >= 30
    assert {"SG1", "SG2", "SG3", "SG4"} <= set(blocking)


def test_every_blocking_op_is_reported_once_with_its_family(
    reported: dict[int, list[str]],
) -> None:
    source = FIXTURE.read_text(encoding="utf-8")
    lines = source.splitlines()
    wrong = []
    for line, family in sorted(expectations(source).items()):
        codes = reported.get(line, [])
        if family is None:
            continue
        if len(codes) != 1 or not codes[0].startswith(family):
            wrong.append(f"line {line} `{lines[line - 1].strip()}`: want one {family}, got {codes}")
    assert wrong == []


def test_no_free_op_or_set_up_line_is_reported(reported: dict[int, list[str]]) -> None:
    source = FIXTURE.read_text(encoding="utf-8")
    lines = source.splitlines()
    expected = expectations(source)
    wrong = [
        f"line {line} `{lines[line - 1].strip()}`: {codes}"
        for line, codes in sorted(reported.items())
        if expected.get(line) is None
    ]
    assert wrong == []
