"""Baselines: adopt syncguard on a tree with findings, and report only new ones.

``syncguard baseline --output FILE`` writes the current findings' keys;
``syncguard check --baseline FILE`` reports only findings whose key is not in it,
and lists the entries that no longer match (stale: the sync was fixed or moved
elsewhere). A key is what survives edits that do not touch the finding: the file
(relative to the project root), the enclosing function's qualified name, the code,
the flagged expression's source normalised (``ast.unparse``: spacing, line breaks,
comments and redundant parentheses do not count), and the occurrence index among
findings with the same four. Inserted lines, functions moved within their file and
renames elsewhere keep every entry valid. The file is sorted JSON, one field a line.
SARIF's ``partialFingerprints`` are a hash of the same key.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from syncguard.project import Finding
from syncguard.reading import lines_or_empty
from syncguard.workspace import relative_to

FORMAT = "syncguard-baseline"
VERSION = 1


class BaselineError(Exception):
    """A baseline file that cannot be read, with its path in the message."""


@dataclass(frozen=True, order=True, slots=True)
class Key:
    """What identifies a finding across unrelated edits (see the module docstring)."""

    path: str
    function: str
    code: str
    source: str
    occurrence: int

    def fingerprint(self) -> str:
        """A stable hash of the key (SARIF's ``partialFingerprints``)."""
        text = "\0".join((self.path, self.function, self.code, self.source, str(self.occurrence)))
        return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]

    def __str__(self) -> str:
        where = f" in {self.function}" if self.function else ""
        return f"{self.path}: {self.code}{where}: `{self.source}` (#{self.occurrence + 1})"


def enclosing_function(finding: Finding) -> str:
    """The qualified name of the function the finding is reported in ("" at module level
    or for findings about comments): its chain's step at the finding's line."""
    for step in reversed(finding.chain):
        if step.path == finding.path and step.line == finding.span.line:
            return step.function
    return ""


def normalised(text: str) -> str:
    """``text`` (an expression or a statement) as ``ast.unparse`` writes it; else with
    its whitespace collapsed."""
    stripped = text.strip()
    for mode in ("eval", "exec"):
        try:
            return ast.unparse(ast.parse(stripped, mode=mode))
        except (SyntaxError, ValueError, RecursionError):
            continue
    return " ".join(stripped.split())


class _Texts:
    """Source lines of the files findings are in, read once."""

    def __init__(self) -> None:
        self.lines: dict[str, list[str]] = {}

    def span_text(self, finding: Finding) -> str:
        lines = self.lines.get(finding.path)
        if lines is None:
            lines = self.lines[finding.path] = lines_or_empty(finding.path)
        span = finding.span
        if not 0 < span.line <= span.end_line <= len(lines):
            return ""
        if span.line == span.end_line:
            return lines[span.line - 1][span.column - 1 : span.end_column - 1]
        parts = [lines[span.line - 1][span.column - 1 :]]
        parts += lines[span.line : span.end_line - 1]
        parts.append(lines[span.end_line - 1][: span.end_column - 1])
        return "\n".join(parts)


def display_path(path: str, root: Path | None) -> str:
    """``path`` relative to ``root`` with ``/`` separators (as given, with ``/``, when it
    lies outside or there is no root)."""
    relative = relative_to(path, root) if root is not None else None
    return relative if relative is not None else path.replace(os.sep, "/")


def finding_keys(findings: Sequence[Finding], root: Path | None) -> list[Key]:
    """The key of each finding, in order."""
    texts = _Texts()
    partial = [
        (
            display_path(finding.path, root),
            enclosing_function(finding),
            finding.code,
            normalised(texts.span_text(finding)),
        )
        for finding in findings
    ]
    order = sorted(range(len(findings)), key=lambda index: findings[index].sort_key)
    seen: dict[tuple[str, str, str, str], int] = {}
    occurrence = [0] * len(findings)
    for index in order:
        occurrence[index] = seen.get(partial[index], 0)
        seen[partial[index]] = occurrence[index] + 1
    return [Key(*key, occurrence[index]) for index, key in enumerate(partial)]


def dumps(keys: Iterable[Key]) -> str:
    """The baseline file's text: sorted entries, one field a line."""
    entries = [asdict(key) for key in sorted(set(keys))]
    return json.dumps({"format": FORMAT, "version": VERSION, "findings": entries}, indent=2) + "\n"


def load(path: str) -> set[Key]:
    """The keys in the baseline file at ``path``; raises BaselineError."""
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except FileNotFoundError:
        raise BaselineError(f"{path}: baseline file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise BaselineError(f"{path}: cannot read the baseline: {error}") from None
    except json.JSONDecodeError as error:
        raise BaselineError(
            f"{path}:{error.lineno}:{error.colno}: invalid JSON: {error.msg}"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BaselineError(f"{path}: not a syncguard baseline (`syncguard baseline` writes one)")
    if data.get("version") != VERSION:
        raise BaselineError(f"{path}: baseline version {data.get('version')!r}, expected {VERSION}")
    keys: set[Key] = set()
    for number, entry in enumerate(data.get("findings", []), 1):
        try:
            keys.add(Key(**entry))
        except TypeError:
            raise BaselineError(f"{path}: entry {number} is not a baseline entry") from None
    return keys


@dataclass
class Applied:
    """Findings not in the baseline, and baseline entries no finding matched."""

    new: list[Finding]
    stale: list[Key]


def apply(
    findings: Sequence[Finding],
    baseline: set[Key],
    root: Path | None,
    linted: Iterable[str] = (".",),
) -> Applied:
    """Split ``findings`` against ``baseline``. Entries count as stale only for files in
    the ``linted`` paths (files or folders): a run over a part of the tree cannot tell
    about the rest."""
    keys = finding_keys(findings, root)
    new = [finding for finding, key in zip(findings, keys, strict=True) if key not in baseline]
    prefixes = [display_path(path, root) for path in linted]

    def inside(path: str) -> bool:
        return any(
            prefix in (".", "") or path == prefix or path.startswith(prefix.rstrip("/") + "/")
            for prefix in prefixes
        )

    return Applied(new, sorted(key for key in baseline - set(keys) if inside(key.path)))
