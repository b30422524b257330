"""Suppression comments shared by the linter and the runtime audit.

Recognised forms (ruff-compatible where ruff has one):

* ``# noqa`` -- every code on the line;
* ``# noqa: SG101, SG2`` -- those codes (prefixes allowed); codes of other tools
  (``E501``) are theirs and left alone;
* ``# syncguard: ignore`` / ``# syncguard: ignore[SG101, SG102] -- reason``;
* ``# syncguard: ignore-file`` anywhere in a file -- the whole file.

A code that is not one of syncguard's (``SG1O1`` with a letter O, ``SG999``) silences
nothing, and neither does a malformed ``# noqa SG101`` (no colon: ruff ignores it too);
:mod:`syncguard.hygiene` reports both, and the suppressions that silence nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING

from syncguard.facts import source_lines
from syncguard.reading import Unreadable, read_source

if TYPE_CHECKING:
    from syncguard.project import Finding

# What looks like a rule code of some tool: letters, then a digit (E501, SG101, SG1O1).
_CANDIDATE = r"[A-Za-z]+[0-9][A-Za-z0-9]*"
_NOQA = re.compile(
    rf"#\s*noqa(?![\w-])(?:(?P<colon>\s*:\s*)(?P<codes>{_CANDIDATE}(?:[\s,]+{_CANDIDATE})*)?"
    rf"|(?P<loose>\s+{_CANDIDATE}(?:[\s,]+{_CANDIDATE})*))?",
    re.I,
)
_IGNORE = re.compile(r"#\s*syncguard:\s*ignore(?![\w-])(?:\[(?P<codes>[^\]]*)\])?")
_IGNORE_FILE = re.compile(r"#\s*syncguard:\s*ignore-file\b")
_TOKEN = re.compile(r"[^\s,]+")
_REASON = re.compile(r"\s*--\s*(?P<reason>\S.*?)\s*$")
_SG_CODE = re.compile(r"SG[0-9]{0,3}")


@cache
def known_codes() -> frozenset[str]:
    """The codes of syncguard's rules."""
    from syncguard.rules import all_rules

    return frozenset(all_rules())


def is_syncguard_code(code: str) -> bool:
    """True for a code or prefix of syncguard's rules (SG101, SG1, SG)."""
    code = code.upper()
    return _SG_CODE.fullmatch(code) is not None and any(
        known.startswith(code) for known in known_codes()
    )


@dataclass(frozen=True, slots=True)
class Code:
    """One code written in a directive, with its columns in the comment (0-based, end
    exclusive)."""

    text: str
    start: int
    end: int

    @property
    def upper(self) -> str:
        return self.text.upper()


@dataclass(frozen=True, slots=True)
class Directive:
    """One suppression directive in a comment.

    ``start``/``end`` are the columns of the directive within the comment; ``codes``
    what it lists (``()`` for a blanket one). ``malformed`` directives (``# noqa SG101``,
    ``# noqa:`` with nothing after) silence nothing."""

    kind: str  # "noqa" or "ignore"
    start: int
    end: int
    codes: tuple[Code, ...]
    blanket: bool
    malformed: bool
    reason: str | None

    def ours(self, code: Code) -> bool:
        """True when ``code`` is for syncguard: any code of our own directive, and the
        ``SG`` ones of a ``noqa`` (the others belong to other linters)."""
        return self.kind == "ignore" or code.upper.startswith("SG")

    def valid(self, code: Code) -> bool:
        return is_syncguard_code(code.text) if self.ours(code) else True

    def covering(self, finding_code: str) -> list[Code] | None:
        """The codes of this directive that silence ``finding_code``; ``[]`` when a blanket
        directive does, None when nothing does."""
        if self.malformed:
            return None
        if self.blanket:
            return []
        found = [
            code for code in self.codes if self.valid(code) and finding_code.startswith(code.upper)
        ]
        return found or None


@lru_cache(maxsize=4096)  # a tree repeats its comments (the same E501 noqa) many times
def parse_comment(comment: str) -> Directive | None:
    """The suppression directive in ``comment`` (the text of a comment token), if any."""
    match = _IGNORE.search(comment)
    if match:
        codes_text = match.group("codes")
        codes: tuple[Code, ...] = ()
        if codes_text is not None:
            offset = match.start("codes")
            codes = tuple(
                Code(token.group(), offset + token.start(), offset + token.end())
                for token in _TOKEN.finditer(codes_text)
            )
        reason = _REASON.match(comment, match.end())
        return Directive(
            "ignore", match.start(), match.end(), codes, codes_text is None,
            codes_text is not None and not codes, reason.group("reason") if reason else None,
        )  # fmt: skip
    match = _NOQA.search(comment)
    if match is None:
        return None
    group = "codes" if match.group("codes") else "loose" if match.group("loose") else None
    codes = ()
    if group is not None:
        offset = match.start(group)
        codes = tuple(
            Code(token.group(), offset + token.start(), offset + token.end())
            for token in _TOKEN.finditer(match.group(group))
        )
    malformed = group == "loose" or (match.group("colon") is not None and not codes)
    reason = _REASON.match(comment, match.end())
    return Directive(
        "noqa", match.start(), match.end(), codes, group is None and not malformed,
        malformed, reason.group("reason") if reason else None,
    )  # fmt: skip


@dataclass(frozen=True)
class Suppression:
    """Codes silenced by one comment; ``codes is None`` silences every code."""

    codes: frozenset[str] | None

    def covers(self, code: str) -> bool:
        """True when this suppression silences ``code`` (exact code or prefix)."""
        if self.codes is None:
            return True
        return any(code.startswith(prefix) for prefix in self.codes)


def parse_line(line: str) -> Suppression | None:
    """The suppression written in the comment of ``line``, if any (None for a malformed
    one); its codes are the valid ones it lists."""
    if "#" not in line:
        return None
    directive = parse_comment(line[line.index("#") :])
    if directive is None or directive.malformed:
        return None
    if directive.blanket:
        return Suppression(None)
    return Suppression(frozenset(code.upper for code in directive.codes if directive.valid(code)))


def ignores_file(source: str) -> bool:
    """True when ``source`` carries ``# syncguard: ignore-file``."""
    return "ignore-file" in source and _IGNORE_FILE.search(source) is not None


def comment_lines(source: str) -> dict[int, str]:
    """Line number -> comment text, from real comment tokens only, for the comments that
    may hold a directive."""
    return {line: text for line, _, text in directive_comments(source)}


def comments(source: str) -> list[tuple[int, int, str]]:
    """(line, 0-based column, text) of every comment token of ``source``."""
    found: list[tuple[int, int, str]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0], token.start[1], token.string))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return found


def directive_comments(source: str) -> list[tuple[int, int, str]]:
    """The comments of ``source`` that may hold a directive (as :func:`comments` gives
    them). The text is tokenized only as far as the last line that mentions one: tokens
    come line by line, so the lines after it cannot change what comes before."""
    if not may_suppress(source):
        return []
    lines = io.StringIO(source).readlines()  # the lines tokenize reads
    last = max((number for number, line in enumerate(lines, 1) if may_suppress(line)), default=0)
    if not last:
        return []
    return [found for found in comments("".join(lines[:last])) if may_suppress(found[2])]


def may_suppress(text: str) -> bool:
    """Cheap test: could ``text`` (a line or a file) hold a suppression directive?"""
    lowered = text.lower()
    return "noqa" in lowered or "syncguard" in lowered


class Suppressions:
    """Suppression comments of the files that have findings, read on demand.

    ``sources`` holds the texts already at hand (path -> text); other files are
    read from disk the first time a finding in them is checked. :attr:`used` collects
    what silenced something: (path, line) -> the codes that did (``""`` for a blanket
    directive)."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources
        self.lines: dict[str, list[str]] = {}
        self.comments: dict[str, dict[int, str]] = {}
        self.used: dict[tuple[str, int], set[str]] = {}
        # Per file, when known (from the suppression pass's index): line -> the comment
        # that may hold a directive there; spares reading and tokenizing the file.
        self.known: dict[str, dict[int, str]] = {}

    def source(self, path: str) -> str:
        """The text of ``path`` (empty when unreadable), read once."""
        source = self.sources.get(path)
        if source is None:
            try:
                source = read_source(path)
            except Unreadable:
                source = ""
            self.sources[path] = source
        return source

    def comment(self, path: str, line: int) -> str | None:
        """The comment on ``line`` of ``path`` when it may hold a directive."""
        known = self.known.get(path)
        if known is not None:
            return known.get(line)
        lines = self.lines.get(path)
        if lines is None:
            lines = self.lines[path] = source_lines(self.source(path))
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        if not may_suppress(text):
            return None  # no suppression on this line: spare tokenizing the file
        found = self.comments.get(path)
        if found is None:
            found = self.comments[path] = comment_lines(self.sources[path])
        return found.get(line)

    def silences(self, finding: Finding) -> bool:
        """True when a comment on the finding's line, or on the first or last line of a
        statement it can be suppressed at, covers its code."""
        silenced = False
        for path, first, last in finding.suppressible_at:
            for line in {finding.span.line if path == finding.path else first, first, last}:
                comment = self.comment(path, line)
                directive = parse_comment(comment) if comment is not None else None
                if directive is None:
                    continue
                codes = directive.covering(finding.code)
                if codes is not None:
                    used = self.used.setdefault((path, line), set())
                    used.update([code.upper for code in codes] or [""])
                    silenced = True
        return silenced
