"""Output formats: full, concise, json, sarif, github; plus --statistics.

Reporters only see findings and rule metadata; they know nothing of analysis.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from syncguard.facts import Edit, Fix
from syncguard.fixedits import FixEdits
from syncguard.project import Finding
from syncguard.reading import lines_or_empty
from syncguard.rule import Rule
from syncguard.sarif import write_sarif


@dataclass(frozen=True)
class Display:
    """How output meant for a person is drawn: with rich (tables, Markdown, code frames)
    or as plain text, and in colour or not."""

    rich: bool
    color: bool


def display(stream: TextIO, no_color: bool = False) -> Display:
    """The display for ``stream``: rich on a terminal, plain text elsewhere (what tools
    and logs read). ``NO_COLOR`` (or ``--no-color``) turns colours off, ``FORCE_COLOR``
    turns rich and colours on where there is no terminal, ``TERM=dumb`` turns both off
    unless forced."""
    forced = os.environ.get("FORCE_COLOR", "") not in ("", "0")
    terminal = forced or (_isatty(stream) and os.environ.get("TERM") != "dumb")
    return Display(terminal, terminal and not no_color and not os.environ.get("NO_COLOR"))


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a file
        return False


def fix_json(fix: Fix | None, edits: Sequence[Edit] = ()) -> dict[str, Any] | None:
    """A fix as ruff's JSON shows one: what it does and the text edits it makes."""
    if fix is None:
        return None
    return {
        "applicability": fix.applicability,
        "message": fix.description,
        "edits": [
            {
                "content": edit.text,
                "location": {"row": edit.span.line, "column": edit.span.column},
                "end_location": {"row": edit.span.end_line, "column": edit.span.end_column},
            }
            for edit in edits
        ],
    }


def finding_json(
    finding: Finding, rules: Mapping[str, type[Rule]], edits: Sequence[Edit] = ()
) -> dict[str, Any]:
    rule = rules.get(finding.code)
    return {
        "code": finding.code,
        "name": rule.name if rule else finding.code,
        "message": finding.message,
        "path": finding.path,
        "line": finding.span.line,
        "column": finding.span.column,
        "end_line": finding.span.end_line,
        "end_column": finding.span.end_column,
        "severity": finding.severity,
        "hot": finding.hot,
        "chain": [str(step) for step in finding.chain],
        "fix": fix_json(finding.fix, edits),
        "suggestion": finding.suggestion,
    }


def _read_lines(path: str, cache: dict[str, list[str]]) -> list[str]:
    if path not in cache:
        cache[path] = lines_or_empty(path)
    return cache[path]


def _location(finding: Finding) -> str:
    return f"{finding.path}:{finding.span.line}:{finding.span.column}"


@dataclass(frozen=True)
class Frame:
    """What the full format shows of one finding, before any styling."""

    finding: Finding
    width: int  # of the line-number gutter
    rows: tuple[tuple[int, str], ...]  # the source lines shown: (number, text)
    caret: tuple[str, int] | None  # under the flagged line: blank prefix, number of carets
    fix: tuple[str, str] | None  # ("fix" or "unsafe fix", what it does)

    @property
    def location(self) -> str:
        return _location(self.finding)


def frame(finding: Finding, lines: Sequence[str]) -> Frame:
    """The code frame of ``finding`` in a file of ``lines``."""
    line = finding.span.line
    width = len(str(min(line + 1, len(lines)) or line))
    rows = tuple(
        (number, lines[number - 1].rstrip())
        for number in range(max(1, line - 1), min(line, len(lines)) + 1)
    )
    caret = None
    if lines and line <= len(lines):
        text = lines[line - 1]
        start = finding.span.column - 1
        end = finding.span.end_column - 1 if finding.span.end_line == line else len(text)
        # Tabs stay tabs, so that the carets line up under the code as the terminal shows it.
        caret = ("".join(c if c == "\t" else " " for c in text[:start]), max(1, end - start))
    fix = None
    if finding.fix is not None:
        marker = "fix" if finding.fix.applicability == "safe" else "unsafe fix"
        fix = (marker, finding.fix.description)
    return Frame(finding, width, rows, caret, fix)


def frames(findings: Sequence[Finding]) -> Iterator[Frame]:
    """The frames of ``findings``, each file read once."""
    cache: dict[str, list[str]] = {}
    for finding in findings:
        yield frame(finding, _read_lines(finding.path, cache))


def write_full(findings: Sequence[Finding], rules: Mapping[str, type[Rule]], out: TextIO) -> None:
    """Each finding with its code frame, hot reason, chain, help and fix (plain text; the
    coloured form is :func:`syncguard.terminal.write_full`)."""
    for shown in frames(findings):
        finding, gutter = shown.finding, " " * shown.width
        out.write(f"{shown.location}: {finding.code} [{finding.severity}] {finding.message}\n")
        out.write(f"{gutter} |\n")
        for number, text in shown.rows:
            out.write(f"{str(number).rjust(shown.width)} | {text}\n")
        if shown.caret is not None:
            out.write(f"{gutter} | {shown.caret[0]}{'^' * shown.caret[1]} {finding.code}\n")
        out.write(f"{gutter} |\n")
        if finding.hot:
            out.write(f"{gutter} = hot: {finding.hot}\n")
        if len(finding.chain) > 1:
            out.write(f"{gutter} = chain:\n")
            for step in finding.chain:
                out.write(f"{gutter}     {step}\n")
        out.write(f"{gutter} = help: {finding.suggestion}\n")
        if shown.fix is not None:
            out.write(f"{gutter} = {shown.fix[0]}: {shown.fix[1]}\n")
        out.write("\n")


def write_concise(
    findings: Sequence[Finding], rules: Mapping[str, type[Rule]], out: TextIO
) -> None:
    for finding in findings:
        out.write(f"{_location(finding)}: {finding.code} {finding.message}{hot_note(finding)}\n")


def hot_note(finding: Finding) -> str:
    """Why the finding's function is hot, in brackets ("" for a file that could not be
    analysed)."""
    return f" [{finding.hot}]" if finding.hot else " [not hot]" if finding.chain else ""


def write_json(
    findings: Sequence[Finding],
    rules: Mapping[str, type[Rule]],
    out: TextIO,
    edits: FixEdits | None = None,
) -> None:
    """The findings as ruff's JSON shows them; ``edits`` gives the fixes' text edits (by
    default worked out here)."""
    edits = edits or FixEdits()
    rows = [finding_json(f, rules, edits.of(f)) for f in findings]
    json.dump(rows, out, indent=2)
    out.write("\n")


def write_github(findings: Sequence[Finding], rules: Mapping[str, type[Rule]], out: TextIO) -> None:
    for finding in findings:
        rule = rules.get(finding.code)
        title = f"{finding.code} ({rule.name})" if rule else finding.code
        message = f"{finding.message}. Fix: {finding.suggestion}"
        message = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        span = finding.span
        out.write(
            f"::{finding.severity} file={finding.path},line={span.line},col={span.column},"
            f"endLine={span.end_line},endColumn={span.end_column},title={title}::{message}\n"
        )


WRITERS: dict[str, Callable[[Sequence[Finding], Mapping[str, type[Rule]], TextIO], None]] = {
    "full": write_full,
    "concise": write_concise,
    "json": write_json,
    "sarif": write_sarif,
    "github": write_github,
}


def statistics(
    findings: Sequence[Finding], rules: Mapping[str, type[Rule]]
) -> list[dict[str, Any]]:
    """Findings counted per code, most frequent first (``--statistics``)."""
    counts = Counter(finding.code for finding in findings)
    rows = []
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        rule = rules.get(code)
        name = rule.name if rule else ""
        rows.append(
            {"code": code, "name": name, "count": count, "fixable": bool(rule and rule.fixable())}
        )
    return rows


def write_statistics(
    findings: Sequence[Finding], rules: Mapping[str, type[Rule]], out: TextIO, as_json: bool = False
) -> None:
    rows = statistics(findings, rules)
    if as_json:
        json.dump(rows, out, indent=2)
        out.write("\n")
        return
    width = max((len(str(row["count"])) for row in rows), default=1)
    for row in rows:
        fixable = "[*] " if row["fixable"] else "    "
        out.write(f"{str(row['count']).rjust(width)}  {row['code']}  {fixable}{row['name']}\n")


def summary(findings: Sequence[Finding], files: int, failed: int = 0) -> str:
    """The closing line; never "All checks passed!" when ``failed`` files could not be
    analysed."""
    unanalysed = f"{failed} {'file' if failed == 1 else 'files'} could not be analysed"
    if not findings:
        if failed:
            return f"No findings in the other files, but {unanalysed}."
        return f"All checks passed! ({files} files)"
    errors = sum(1 for finding in findings if finding.severity == "error")
    warnings = len(findings) - errors
    parts = [f"{errors} in hot paths"] + ([f"{warnings} elsewhere"] if warnings else [])
    noun = "finding" if len(findings) == 1 else "findings"
    line = f"Found {len(findings)} {noun} ({', '.join(parts)}) in {files} files"
    return f"{line}; {unanalysed}." if failed else f"{line}."
