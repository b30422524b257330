"""Suppression comments shared by the linter and the runtime audit.

Recognised forms (ruff-compatible where ruff has one):

* ``# noqa`` -- every code on the line;
* ``# noqa: SG101, SG2`` -- those codes (prefixes allowed);
* ``# syncguard: ignore`` / ``# syncguard: ignore[SG101, SG102] -- reason``;
* ``# syncguard: ignore-file`` anywhere in a file -- the whole file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
