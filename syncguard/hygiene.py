"""The suppression pass: apply suppression comments to a run's findings, and check them.

ruff's RUF100/RUF102 idea for syncguard's codes. After the project phase, every
finding is checked against the comments that may silence it (recording which code of
which directive did), then every directive in the linted files is checked:

* SG001 -- a syncguard code (or a ``# syncguard: ignore``) that silenced nothing;
* SG002 -- a code in a suppression that is none of syncguard's (``SG1O1``, ``SG999``);
* SG003 -- a malformed ``# noqa SG101`` (no colon), which silences nothing;
* SG004 -- with ``require-reason``, a suppression without ``-- reason``.

A directive counts as used when it silences any finding of the run, selected or not,
so ``--select`` does not turn suppressions into "unused" ones. Bare ``# noqa`` and the
codes of other tools (``# noqa: E501``) are never reported: they may be other linters'.
The directives of each file are kept between runs by content key beside the facts cache,
so a warm run reads no file to find them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from syncguard.config import Settings
from syncguard.facts import Fix, Span, source_lines
from syncguard.project import Finding
from syncguard.suppression import (
    Code,
    Suppressions,
    directive_comments,
    is_syncguard_code,
    known_codes,
    parse_comment,
)

UNUSED, UNKNOWN, MALFORMED, NO_REASON = "SG001", "SG002", "SG003", "SG004"
INDEX_FILE = "suppressions-v2.index"
# Entries of files a run did not see that the index keeps (a few hundred bytes each).
MAX_INDEX_ENTRIES = 100_000
# Of each comment that may hold a directive: line, 0-based column, text, alone on its line.
Comments = tuple[tuple[int, int, str, bool], ...]


def reported(
    findings: Sequence[Finding],
    settings: Settings,
    sources: dict[str, str],
    files: Mapping[str, bytes | None],
    cache_dir: Path | None,
) -> list[Finding]:
    """The findings to report: those selected for their file and not suppressed, plus the
    suppression checks of ``files`` (path -> content key, or None when unknown), sorted."""
    suppressions = Suppressions(sources)
    directives = _directives(files, suppressions, cache_dir)
    for path in files:  # what silences() looks up, without tokenizing the files again
        suppressions.known[path] = {item[0]: item[2] for item in directives.get(path, ())}
    kept = [
        finding
        for finding in findings
        if not suppressions.silences(finding) and settings.reports(finding.path, finding.code)
    ]
    if any(settings.selects(code) for code in (UNUSED, UNKNOWN, MALFORMED, NO_REASON)):
        for finding in _checks(suppressions, settings, directives):
            if settings.reports(finding.path, finding.code) and not _listed(finding, suppressions):
                kept.append(finding)
        kept.sort(key=lambda finding: finding.sort_key)
    return kept


def _listed(finding: Finding, suppressions: Suppressions) -> bool:
    """True when the directive a check reports lists the check's code (``# noqa: SG001``):
    a blanket directive does not silence the report that it is unused."""
    comment = suppressions.comment(finding.path, finding.span.line)
    directive = parse_comment(comment) if comment is not None else None
    return directive is not None and bool(directive.covering(finding.code))


def _directives(
    files: Mapping[str, bytes | None], suppressions: Suppressions, cache_dir: Path | None
) -> dict[str, Comments]:
    """The comments of ``files`` that hold a directive, from the index where it has the
    file's content key, else read (and the index updated)."""
    from syncguard.cache import _read_pack, kept_with, write_side_pack

    index_path = cache_dir / INDEX_FILE if cache_dir is not None else None
    index: dict[bytes, Comments] = _read_pack(index_path) if index_path is not None else {}
    found: dict[str, Comments] = {}
    kept: dict[bytes, Comments] = {}
    changed = False
    for path, key in files.items():
        entry = index.get(key) if key is not None else None
        if entry is None:
            entry = _comments(suppressions.source(path))
            changed = changed or key is not None
        if key is not None:
            kept[key] = entry
        if entry:
            found[path] = entry
    # A run over one file alone keeps the other files' entries: the next whole run need
    # not tokenize them again.
    kept = kept_with(index, kept, MAX_INDEX_ENTRIES)
    if index_path is not None and (changed or len(kept) != len(index)):
        write_side_pack(index_path, kept)
    return found


def _comments(source: str) -> Comments:
    """The comments of ``source`` that may hold a directive, each with whether it stands
    alone on its line."""
    found = directive_comments(source)
    if not found:
        return ()
    lines = source_lines(source)
    return tuple(
        (line, column, text, not lines[line - 1][:column].strip()) for line, column, text in found
    )


def _checks(
    suppressions: Suppressions, settings: Settings, directives: Mapping[str, Comments]
) -> Iterator[Finding]:
    for path, entries in sorted(directives.items()):
        for line, column, comment, alone in entries:
            if parse_comment(comment) is None:
                continue
            where = _Where(path, line, column, alone, comment)
            yield from where.check(suppressions.used.get((path, line), set()), settings)


class _Where:
    """One directive in a file, and the findings about it."""

    def __init__(self, path: str, line: int, column: int, alone: bool, comment: str):
        self.path, self.line, self.column, self.alone = path, line, column, alone
        self.comment = comment  # the comment token, from its ``#``
        directive = parse_comment(comment)
        assert directive is not None
        self.directive = directive

    def check(self, used: set[str], settings: Settings) -> Iterator[Finding]:
        directive = self.directive
        written = self.comment[directive.start : directive.end]
        if directive.malformed:
            if directive.kind == "noqa" and not any(map(directive.ours, directive.codes)):
                return  # another linter's comment (noqa then E501, no colon): left to it
            fix = None
            if directive.codes and written.lower().startswith("# noqa"):
                first = directive.codes[0].start
                text = f"{self.comment[:first].rstrip()}: {self.comment[first:]}"
                fix = self._fix(text, "add the colon")
            yield self._finding(
                MALFORMED, f"`{written}` is malformed: it silences nothing",
                "write `# noqa: SG101, SG102` (a colon after noqa, then the codes)", fix,
            )  # fmt: skip
            return
        ours = [code for code in directive.codes if directive.ours(code)]
        unknown = [code for code in ours if not is_syncguard_code(code.text)]
        if unknown:
            names = ", ".join(f"`{code.text}`" for code in unknown)
            guesses = [_guess(code.text) for code in unknown]
            hint = "; ".join(f"did you mean {g}?" for g in guesses if g)
            verb = "is not a syncguard code" if len(unknown) == 1 else "are not syncguard codes"
            yield self._finding(
                UNKNOWN,
                f"{names} {verb}: it silences nothing",
                hint or "use a code listed by `syncguard rule --all`",
                self._removal(unknown, "remove the unknown codes"),
            )
        known = [code for code in ours if code not in unknown]
        if directive.blanket and directive.kind == "ignore" and not used:
            yield self._finding(
                UNUSED, f"`{written}` silences nothing here", "remove it",
                self._removal([], "remove the unused suppression"),
            )  # fmt: skip
        unused = [code for code in known if code.upper not in used]
        if unused:
            names = ", ".join(f"`{code.text}`" for code in unused)
            yield self._finding(
                UNUSED, f"unused suppression: {names} silences nothing here",
                "remove the code (the sync it silenced is gone, or it never was one here)",
                self._removal(unused, "remove the unused codes"),
            )  # fmt: skip
        covers_ours = directive.kind == "ignore" or bool(known) or (directive.blanket and used)
        if _reasons_required(settings) and covers_ours and not directive.reason:
            yield self._finding(
                NO_REASON, "suppression without a reason (require-reason is on)",
                "say why the sync is acceptable: `# syncguard: ignore[SG101] -- once per step`",
                None,
            )  # fmt: skip

    def _finding(self, code: str, message: str, suggestion: str, fix: Fix | None) -> Finding:
        start = self.column + self.directive.start + 1
        span = Span(self.line, start, self.line, self.column + self.directive.end + 1)
        return Finding(
            code=code, message=message, path=self.path, span=span, severity="warning",
            hot=None, chain=(), suggestion=suggestion, fix=fix,
            suppressible_at=((self.path, self.line, self.line),),
        )  # fmt: skip

    def _fix(self, comment: str, description: str) -> Fix:
        """A fix making ``comment`` the line's comment (``""``: none), a LibCST codemod."""
        codemod = "set-comment-line" if self.alone else "set-comment"
        span = Span(self.line, self.column + 1, self.line, self.column + len(self.comment) + 1)
        return Fix("safe", description, codemod, span, (comment,))

    def _removal(self, codes: list[Code], description: str) -> Fix:
        """Remove ``codes`` from the directive, or the whole directive when none is left
        (and the whole comment when nothing else is in it)."""
        directive, comment = self.directive, self.comment
        left = [code for code in directive.codes if code not in codes]
        if left:
            first, last = directive.codes[0].start, directive.codes[-1].end
            kept = ", ".join(code.text for code in left)
            return self._fix(comment[:first] + kept + comment[last:], description)
        before = comment[: directive.start].rstrip()
        after = "" if directive.reason is not None else comment[directive.end :].strip()
        if not before:  # "# noqa: SG101 note" -> "# note"
            return self._fix(f"# {after}" if after else "", description)
        return self._fix(f"{before} {after}" if after else before, description)


def _reasons_required(settings: Settings) -> bool:
    """``require-reason`` is on, or SG004 is selected by its full code (it is the only
    rule that a prefix such as the default ``SG`` does not turn on)."""
    chosen = list(settings.select)
    if settings.command_line is not None:
        chosen += [*(settings.command_line.select or ()), *settings.command_line.extend_select]
    return settings.require_reason or NO_REASON in chosen


_LOOK_ALIKE = str.maketrans("OQDILZSB", "00011258")


def _guess(text: str) -> str | None:
    """The code ``text`` was probably meant to be: digits typed as look-alike letters
    (``SG1O1``), else the closest known code."""
    text = text.upper()
    mended = text[:2] + text[2:].translate(_LOOK_ALIKE)
    if mended in known_codes():
        return mended
    import difflib  # only for this hint

    close = difflib.get_close_matches(text, sorted(known_codes()), n=1, cutoff=0.6)
    return close[0] if close else None
