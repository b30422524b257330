"""Suppression comments shared by the linter and the runtime audit.

Recognised forms (ruff-compatible where ruff has one):

* ``# noqa`` -- every code on the line;
* ``# noqa: SG101, SG2`` -- those codes (prefixes allowed);
* ``# syncguard: ignore`` / ``# syncguard: ignore[SG101, SG102] -- reason``;
* ``# syncguard: ignore-file`` anywhere in a file -- the whole file.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import TYPE_CHECKING

from syncguard.facts import source_lines
from syncguard.reading import Unreadable, read_source

if TYPE_CHECKING:
    from syncguard.project import Finding

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.I)
_IGNORE = re.compile(r"#\s*syncguard:\s*ignore(?!-)(?:\[(?P<codes>[^\]]*)\])?")
_IGNORE_FILE = re.compile(r"#\s*syncguard:\s*ignore-file\b")
_CODE = re.compile(r"[A-Z]+[0-9]*")


@dataclass(frozen=True)
class Suppression:
    """Codes silenced by one comment; ``codes is None`` silences every code."""

    codes: frozenset[str] | None

    def covers(self, code: str) -> bool:
        """True when this suppression silences ``code`` (exact code or prefix)."""
        if self.codes is None:
            return True
        return any(code.startswith(prefix) for prefix in self.codes)


def _codes(text: str | None) -> frozenset[str] | None:
    if text is None:
        return None
    codes = frozenset(_CODE.findall(text.upper()))
    return codes or None


def parse_line(line: str) -> Suppression | None:
    """The suppression written in the comment of ``line``, if any."""
    if "#" not in line:
        return None
    match = _IGNORE.search(line)
    if match:
        return Suppression(_codes(match.group("codes")))
    match = _NOQA.search(line)
    if match:
        return Suppression(_codes(match.group("codes")))
    return None


def ignores_file(source: str) -> bool:
    """True when ``source`` carries ``# syncguard: ignore-file``."""
    return "ignore-file" in source and _IGNORE_FILE.search(source) is not None


def comment_lines(source: str) -> dict[int, str]:
    """Line number -> comment text, from real comment tokens only."""
    comments: dict[int, str] = {}
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = token.string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return comments


class Suppressions:
    """Suppression comments of the files that have findings, read on demand.

    ``sources`` holds the texts already at hand (path -> text); other files are
    read from disk the first time a finding in them is checked."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources
        self.lines: dict[str, list[str]] = {}
        self.comments: dict[str, dict[int, str]] = {}

    def _comment(self, path: str, line: int) -> str | None:
        lines = self.lines.get(path)
        if lines is None:
            source = self.sources.get(path)
            if source is None:
                try:
                    source = read_source(path)
                except Unreadable:
                    source = ""
            self.sources[path] = source
            lines = self.lines[path] = source_lines(source)
        text = lines[line - 1].lower() if 0 < line <= len(lines) else ""
        if "noqa" not in text and "syncguard" not in text:
            return None  # no suppression on this line: spare tokenizing the file
        comments = self.comments.get(path)
        if comments is None:
            comments = self.comments[path] = comment_lines(self.sources[path])
        return comments.get(line)

    def silences(self, finding: Finding) -> bool:
        """True when a comment on the finding's line, or on the first or last line of a
        statement it can be suppressed at, covers its code."""
        for path, first, last in finding.suppressible_at:
            for line in {finding.span.line if path == finding.path else first, first, last}:
                comment = self._comment(path, line)
                if comment is None:
                    continue
                suppression = parse_line(comment)
                if suppression is not None and suppression.covers(finding.code):
                    return True
        return False
