"""Findings carried over edits that only move lines.

Inserting or deleting lines above code (a comment, a blank line, an import grown by
a line) changes a file's facts only in their line numbers. The project phase only
compares, orders and passes on the line numbers of facts (it never adds to them),
so its findings on facts whose lines moved are its earlier findings with every
line number mapped as the facts' lines were. Such an edit then costs a lookup
instead of a whole project phase.

A file's *shape* is its encoded facts with the line numbers of functions, classes,
sites, calls, statements and loops left out (what else holds a line, such as the
rule records or a message, stays in). Equal shapes give two equally long lists of
line numbers, in the same order: they map old lines onto new ones when that is a
function and keeps the order. A finding is carried when each of its lines in a
moved file is one the map knows; otherwise the project phase runs as before.
"""

from __future__ import annotations

import dataclasses
import itertools
import marshal
import pickle
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from syncguard.facts import MODULE_SCOPE, Span, Step

if TYPE_CHECKING:
    from syncguard.findings import Finding

# Old line -> new line, for one file whose lines moved.
LineMap = dict[int, int]


def split_lines(plain: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[int]]:
    """The encoded facts ``plain`` (see :func:`syncguard.codec.encode_facts`) with their
    line numbers set to 0, and those line numbers in order."""
    if plain[0] != "facts":
        return plain, []  # an error, or facts the compact codec could not write
    lines: list[int] = []
    functions = []
    for function in plain[3]:
        sites = tuple(
            (code, _span(span, lines), _pair(statement, lines), message, suggestion, value,
             in_loop, None if fix is None else (*fix[:3], _span(fix[3], lines), *fix[4:]),
             requires)
            for code, span, statement, message, suggestion, value, in_loop, fix, requires
            in function[7]
        )  # fmt: skip
        calls = tuple(
            (call[0], _span(call[1], lines), _pair(call[2], lines), *call[3:])
            for call in function[8]
        )
        loops = tuple((*_pair(loop[:2], lines), *loop[2:]) for loop in function[11])
        line = function[1]
        if function[0] != MODULE_SCOPE:  # the module's code is at line 1 wherever it is
            lines.append(line)
            line = 0
        functions.append((function[0], line, *function[2:7], sites, calls, *function[9:11],
                          loops, *function[12:]))  # fmt: skip
    classes = []
    for entry in plain[4]:
        lines.append(entry[1])
        classes.append((entry[0], 0, *entry[2:]))
    records = plain[9]
    if records is not None:  # the rules' items: their spans (other numbers stay)
        found: list[int] = []
        try:
            stripped = _without_spans(pickle.loads(records), found)
            records = pickle.dumps(stripped, pickle.HIGHEST_PROTOCOL)
            lines.extend(found)
        except Exception:  # items that cannot be rebuilt: their lines stay in
            pass
    return (*plain[:3], tuple(functions), tuple(classes), *plain[5:9], records, *plain[10:]), lines


def _without_spans(item: Any, lines: list[int]) -> Any:
    """``item`` with the lines of the spans in it set to 0, those lines appended to ``lines``."""
    if isinstance(item, Span):
        lines.extend((item.line, item.end_line))
        return Span(0, item.column, 0, item.end_column)
    if isinstance(item, (tuple, list)):
        return type(item)(_without_spans(part, lines) for part in item)
    if isinstance(item, dict):
        return {key: _without_spans(value, lines) for key, value in item.items()}
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        changes = {
            field.name: _without_spans(getattr(item, field.name), lines)
            for field in dataclasses.fields(item)
        }
        return dataclasses.replace(item, **changes)
    return item


def _span(span: tuple[int, int, int, int], lines: list[int]) -> tuple[int, int, int, int]:
    lines.append(span[0])
    lines.append(span[2])
    return (0, span[1], 0, span[3])


def _pair(pair: Sequence[int], lines: list[int]) -> tuple[int, int]:
    lines.extend(pair)
    return (0, 0)


def lines_of(body: bytes | memoryview) -> list[int]:
    """The line numbers of the marshalled facts ``body``, in :func:`split_lines` order."""
    return split_lines(marshal.loads(body))[1]


def line_map(old: Sequence[int], new: Sequence[int]) -> LineMap | None:
    """Old line -> new line from two files' line lists of equal shape; None unless
    each old line has one new line and the order of lines is kept."""
    if len(old) != len(new):
        return None
    mapping: LineMap = {}
    for before, after in zip(old, new, strict=True):
        if mapping.setdefault(before, after) != after:
            return None
    ordered = [mapping[line] for line in sorted(mapping)]
    if any(first >= second for first, second in itertools.pairwise(ordered)):
        return None
    return mapping


class _Unknown(Exception):
    """A finding holds a line of a moved file that no fact had."""


def carry(findings: Sequence[Finding], moved: Mapping[str, LineMap]) -> list[Finding] | None:
    """``findings`` with the lines of the files in ``moved`` mapped; None when some line
    cannot be (the project phase must run then)."""
    if not moved:
        return list(findings)
    # path:line in a message (a path not preceded by more of a path).
    pattern = re.compile(
        "|".join(f"(?<![\\w./\\\\-])({re.escape(path)}):([0-9]+)" for path in moved)
    )

    def line(path: str, number: int) -> int:
        mapping = moved.get(path)
        if mapping is None:
            return number
        found = mapping.get(number)
        if found is None:
            raise _Unknown
        return found

    def span(path: str, old: Span) -> Span:
        return Span(line(path, old.line), old.column, line(path, old.end_line), old.end_column)

    def text(value: str) -> str:
        def located(match: re.Match[str]) -> str:
            groups = [group for group in match.groups() if group is not None]
            return f"{groups[0]}:{line(groups[0], int(groups[1]))}"

        return pattern.sub(located, value)

    carried: list[Finding] = []
    try:
        for finding in findings:
            path = finding.path
            fix = finding.fix
            if fix is not None:
                fix = dataclasses.replace(fix, span=span(path, fix.span))
            carried.append(
                dataclasses.replace(
                    finding,
                    message=text(finding.message),
                    span=span(path, finding.span),
                    hot=None if finding.hot is None else text(finding.hot),
                    chain=tuple(
                        Step(step.path, line(step.path, step.line), step.function)
                        for step in finding.chain
                    ),
                    suggestion=text(finding.suggestion),
                    fix=fix,
                    suppressible_at=tuple(
                        (where, line(where, first), line(where, last))
                        for where, first, last in finding.suppressible_at
                    ),
                )
            )
    except _Unknown:
        return None
    carried.sort(key=lambda finding: finding.sort_key)  # messages may hold moved lines
    return carried
