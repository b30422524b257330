"""The lint engine: discover files, analyse each one, run the project phase, filter.

``analyze_source`` is the per-file phase (pure: same input, same facts);
``lint_files`` drives a whole run. The engine knows rules only through the
registry in :mod:`syncguard.rules`.
"""

from __future__ import annotations

import ast
import fnmatch
import io
import os
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from syncguard.analysis import FileAnalyzer
from syncguard.config import Settings
from syncguard.discovery import discover, module_name
from syncguard.facts import FileError, FileFacts
from syncguard.project import Finding, HotSettings, Project, SourceFile, root_of
from syncguard.rule import Rule
from syncguard.rules import all_rules
from syncguard.suppression import ignores_file, parse_line


@dataclass(frozen=True, slots=True)
class Problem:
    """A path that could not be linted, with a located message."""

    path: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


@dataclass
class LintResult:
    """Findings (sorted, filtered) and problems of one run."""

    findings: list[Finding] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: int = 0
    rules: dict[str, type[Rule]] = field(default_factory=dict)


def decode(data: bytes) -> str:
    """Source text of ``data`` (PEP 263 encodings, BOM); raises FileError when impossible."""
    if b"\0" in data:
        raise_error = FileError(1, 1, "not a text file (contains NUL bytes): skipped")
        raise _Unreadable(raise_error)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if b"coding" in b"\n".join(data.splitlines()[:2]):
            raise _Unreadable(FileError(1, 1, f"bad encoding declaration: {error}")) from None
        encoding = "utf-8"  # undecodable bytes: the decode below says where
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as error:
        start = getattr(error, "start", 0)
        line = data[:start].count(b"\n") + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        raise _Unreadable(
            FileError(line, column, f"cannot decode as {encoding}: {error}")
        ) from None


class _Unreadable(Exception):
    def __init__(self, error: FileError) -> None:
        super().__init__(error.message)
        self.error = error


def analyze_source(
    source: str, module: str, is_package: bool, rules: Sequence[Rule]
) -> FileFacts | FileError:
    """The per-file phase for one source text."""
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return FileError(error.lineno or 1, error.offset or 1, f"syntax error: {error.msg}")
    except (ValueError, MemoryError, RecursionError) as error:
        return FileError(1, 1, f"cannot parse: {error}")
    try:
        return FileAnalyzer(tree, source, module, is_package, rules).analyze()
    except RecursionError:
        return FileError(1, 1, "too deeply nested to analyse")


def analyze_path(path: str, rules: Sequence[Rule]) -> tuple[FileFacts | FileError, str | None]:
    """Facts (or a located error) for the file at ``path``, and its source text."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        return FileError(1, 1, f"cannot read: {error.strerror or error}"), None
    try:
        source = decode(data)
    except _Unreadable as unreadable:
        return unreadable.error, None
    module, is_package = module_name(path)
    return analyze_source(source, module, is_package, rules), source


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


class _Suppressions:
    """Suppression comments of the files that have findings, read on demand."""

    def __init__(self, sources: dict[str, str]) -> None:
        self.sources = sources
        self.comments: dict[str, dict[int, str]] = {}

    def _comments(self, path: str) -> dict[int, str]:
        found = self.comments.get(path)
        if found is None:
            source = self.sources.get(path)
            if source is None:
                try:
                    with open(path, "rb") as handle:
                        source = decode(handle.read())
                except (OSError, _Unreadable):
                    source = ""
            lowered = source.lower()
            relevant = "noqa" in lowered or "syncguard" in lowered
            found = self.comments[path] = comment_lines(source) if relevant else {}
        return found

    def silences(self, finding: Finding) -> bool:
        for path, first, last in finding.suppressible_at:
            comments = self._comments(path)
            for line in {finding.span.line if path == finding.path else first, first, last}:
                comment = comments.get(line)
                if comment is None:
                    continue
                suppression = parse_line(comment)
                if suppression is not None and suppression.covers(finding.code):
                    return True
        return False


def _per_file_ignored(settings: Settings, path: str, code: str) -> bool:
    posix = path.replace(os.sep, "/")
    for pattern, codes in settings.per_file_ignores:
        matched = fnmatch.fnmatchcase(posix, pattern) or fnmatch.fnmatchcase(
            os.path.basename(posix), pattern
        )
        if matched and any(code.startswith(prefix) for prefix in codes):
            return True
    return False


def lint_files(
    paths: Sequence[str],
    *,
    settings: Settings | None = None,
    scope: str | None = None,
    sources: Mapping[str, str] | None = None,
) -> LintResult:
    """Lint ``paths`` (files or folders) and return the sorted findings and problems.

    ``sources`` maps discovered paths to text linted instead of the file's
    contents (the fixer re-lints its edits before writing anything).
    """
    settings = settings or Settings()
    rule_classes = all_rules()
    rules = [rule_class() for rule_class in rule_classes.values()]
    result = LintResult(rules=rule_classes)
    files, missing = discover(paths, settings.exclude)
    for path in missing:
        result.problems.append(Problem(path, 1, 1, "no such file or directory"))
    result.files = len(files)
    texts: dict[str, str] = {}
    analysed: list[SourceFile] = []
    for path in files:
        source: str | None
        if sources is not None and path in sources:
            source = sources[path]
            outcome = analyze_source(source, *module_name(path), rules)
        else:
            outcome, source = analyze_path(path, rules)
        if isinstance(outcome, FileError):
            result.problems.append(Problem(path, outcome.line, outcome.column, outcome.message))
            continue
        assert source is not None
        if ignores_file(source):
            continue
        texts[path] = source
        module, is_package = module_name(path)
        analysed.append(SourceFile(path, root_of(path, module, is_package), outcome))
    project = Project(
        analysed,
        HotSettings(settings.hot_functions, settings.cold_functions, settings.compiled_functions),
        {code: rule.message for code, rule in rule_classes.items()},
        frozenset(code for code, rule in rule_classes.items() if rule.graph_break),
    )
    suppressions = _Suppressions(texts)
    for finding in project.findings(scope or settings.scope):
        if not settings.selects(finding.code) or _per_file_ignored(
            settings, finding.path, finding.code
        ):
            continue
        if suppressions.silences(finding):
            continue
        result.findings.append(finding)
    return result
