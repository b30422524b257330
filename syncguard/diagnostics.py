"""SG000: a file that could not be analysed, as an entry of every output format.

Problems (a syntax error, an undecodable or binary file, a missing path) are not rule
findings: no selection or suppression hides them and they make the exit code 2. The
reporters still list them, as findings of the pseudo-rule below, so that a tool reading
JSON, SARIF or GitHub annotations sees every file that failed.
"""

from __future__ import annotations

from collections.abc import Sequence

from syncguard.engine import Problem
from syncguard.facts import Span
from syncguard.project import Finding
from syncguard.rule import Rule

CODE = "SG000"


class UnanalysableFile(Rule):
    """Reports a file syncguard could not analyse: a syntax error, bytes that do not
    decode in the file's encoding, a binary file, or a path that does not exist. Not a
    rule: it cannot be selected, ignored or suppressed.

    Why it matters: nothing in the file was checked, so syncs in it, and the hot paths
    that run through it, go unreported. The run exits 2.

    How to fix: fix the syntax or the encoding, or leave the file out with ``exclude``.
    """

    code = CODE
    name = "unanalysable-file"
    message = "the file could not be analysed"
    graph_break = False
    blocks_host = False


def problem_findings(problems: Sequence[Problem]) -> list[Finding]:
    """Each problem as an SG000 finding at its location."""
    return [
        Finding(
            code=CODE,
            message=problem.message,
            path=problem.path,
            span=Span(problem.line, problem.column, problem.line, problem.column),
            severity="error",
            hot=None,
            chain=(),
            suggestion="fix the file so that Python can read and parse it, or exclude it",
            fix=None,
        )
        for problem in problems
    ]
