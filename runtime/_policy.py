"""Which syncs an audit accepts: allow-list entries and linter suppression comments."""

from __future__ import annotations

import fnmatch
import linecache
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from syncguard.runtime._frames import FrameInfo
from syncguard.suppression import ignores_file, parse_line

_LINE = re.compile(r"^(?P<path>.+):(?P<line>\d+|\*)$")


@dataclass(frozen=True)
class AllowEntry:
    """One ``allow`` entry: a ``path:line`` / ``path`` glob, or a ``module.function`` glob."""

    text: str
    path: str = ""
    line: str = ""
    name: str = ""

    def matches(self, frame: FrameInfo) -> bool:
        """True when ``frame`` is the allowed call site (or inside the allowed function)."""
        if self.name:
            return fnmatch.fnmatchcase(f"{frame.module}.{frame.function}", self.name)
        if self.line not in ("*", "") and not frame.line <= int(self.line) <= frame.end_line:
            return False
        return _path_matches(frame.path.replace("\\", "/"), self.path)


def _path_matches(path: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(path, pattern) or fnmatch.fnmatchcase(path, f"*/{pattern}")


def parse_allow(entries: Iterable[str] | str) -> tuple[AllowEntry, ...]:
    """Validate ``allow`` entries; raises ValueError naming the bad entry."""
    if isinstance(entries, str):
        entries = [entries]
    parsed = []
    for entry in entries:
        if not isinstance(entry, str) or not entry.strip():
            raise ValueError(
                f"sync_audit(allow=...): entries are 'path:line', 'path' or 'module.function'"
                f" strings, got {entry!r}"
            )
        text = entry.strip()
        located = _LINE.match(text)
        if located:
            parsed.append(AllowEntry(text, path=located["path"], line=located["line"]))
        elif text.endswith(".py") or "/" in text:
            parsed.append(AllowEntry(text, path=text, line="*"))
        elif ":" in text:
            raise ValueError(
                f"sync_audit(allow=...): {text!r} has no valid line number after ':'"
                " (write 'path:LINE' or 'path:*')"
            )
        else:
            parsed.append(AllowEntry(text, name=text))
    return tuple(parsed)


def allowed_by(entries: Sequence[AllowEntry], frames: Sequence[FrameInfo]) -> str:
    """The first entry naming one of ``frames`` (call site first, then callers), or ``""``."""
    for frame in frames:
        for entry in entries:
            if entry.matches(frame):
                return f"allow {entry.text}"
    return ""


def suppressed_by(frames: Sequence[FrameInfo]) -> str:
    """A linter suppression on the line of one of ``frames`` that covers syncguard codes."""
    for frame in frames:
        if frame.path.startswith("<"):
            continue
        if ignores_file("".join(linecache.getlines(frame.path))):
            return "# syncguard: ignore-file"
        for number in range(frame.line, frame.end_line + 1):
            text = linecache.getline(frame.path, number)
            suppression = parse_line(text)
            if suppression is None:
                continue
            if suppression.codes is None or any(c.startswith("SG") for c in suppression.codes):
                return text[text.index("#") :].strip()
    return ""
