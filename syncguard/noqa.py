"""``--add-noqa``: a suppression comment for every current finding, to adopt on a tree.

For each line with findings, the line's comment becomes one that silences them: the codes
are added to a ``# noqa:`` or ``# syncguard: ignore[...]`` already there, else
``# noqa: SG101`` (with `` -- REASON`` when given) is appended to the comment or the line.
The rewrite is the ``set-comment`` LibCST codemod (:mod:`syncguard.codemods`), which
keeps everything else on the line; a second run finds nothing left to suppress. The
comment goes on the finding's line, or on its statement's last line when the finding's
line ends in a backslash (no comment can go there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from syncguard.facts import Fix, Span
from syncguard.project import Finding
from syncguard.reading import Unreadable, decode, lines_or_empty, read_bytes, read_source
from syncguard.suppression import comments, parse_comment

if TYPE_CHECKING:
    from syncguard.fixes import FixRun


def _target_line(finding: Finding, lines: Sequence[str]) -> int:
    line = finding.span.line
    if 0 < line <= len(lines) and lines[line - 1].rstrip().endswith("\\"):
        for path, _, last in finding.suppressible_at:
            if path == finding.path:
                return last
    return line


def _comment_with(comment: str | None, codes: Sequence[str], reason: str | None) -> str:
    """``comment`` (None: none) made to silence ``codes`` too."""
    directive = parse_comment(comment) if comment else None
    if comment and directive is not None and not directive.malformed and directive.codes:
        have = [code.text for code in directive.codes]
        new = ", ".join([*have, *(code for code in codes if code not in have)])
        first, last = directive.codes[0].start, directive.codes[-1].end
        return comment[:first] + new + comment[last:]
    added = f"# noqa: {', '.join(codes)}" + (f" -- {reason}" if reason else "")
    return f"{comment}  {added}" if comment else added


def noqa_fixes(findings: Sequence[Finding], reason: str | None = None) -> dict[str, list[Fix]]:
    """Per file, the fixes that suppress ``findings`` (those about suppressions
    themselves, SG0xx, are left out: they are fixed by removal)."""
    wanted: dict[str, dict[int, list[str]]] = {}
    texts: dict[str, list[str]] = {}
    for finding in findings:
        if finding.code.startswith("SG0"):
            continue
        if finding.path not in texts:
            texts[finding.path] = lines_or_empty(finding.path)
        line = _target_line(finding, texts[finding.path])
        codes = wanted.setdefault(finding.path, {}).setdefault(line, [])
        if finding.code not in codes:
            codes.append(finding.code)
    fixes: dict[str, list[Fix]] = {}
    for path, by_line in sorted(wanted.items()):
        try:
            found = {line: text for line, _, text in comments(read_source(path))}
        except Unreadable:
            continue
        for line, codes in sorted(by_line.items()):
            comment = _comment_with(found.get(line), sorted(codes), reason)
            span = Span(line, 1, line, 1)
            fixes.setdefault(path, []).append(
                Fix("safe", "suppress with a noqa comment", "set-comment", span, (comment,))
            )
    return fixes


def add_noqa(
    findings: Sequence[Finding], reason: str | None, roots: tuple[str, ...]
) -> tuple[FixRun, int]:
    """The files that get suppression comments, as a fix run to write (``roots``: the real
    folders it may write in), and how many lines got one."""
    from syncguard.fixes import FixRun, apply_fixes

    run = FixRun(roots=roots)
    lines = 0
    for path, fixes in noqa_fixes(findings, reason).items():
        try:
            data = read_bytes(path)
            source = decode(data)
        except Unreadable:
            continue
        new, count = apply_fixes(source, fixes)
        if count and new != source:
            run.original[path], run.fixed[path], run.read[path] = source, new, data
            lines += count
    return run, lines
