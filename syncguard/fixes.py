"""Autofix: build the fixes rules attach to findings, and apply them to files.

Rules build a :class:`~syncguard.facts.Fix` with the helpers at the top
(:func:`add_keyword_fix`, :func:`replace_fix`). :func:`fix_paths` applies the
fixes of a lint run -- non-overlapping edits, bottom-up -- keeps only results
that still parse (checked with LibCST, the product's syntax tree for rewrites,
imported only here and only when fixing), and re-lints the edited text until
nothing more changes, so that a second ``--fix`` is a no-op.
"""

from __future__ import annotations

import ast
import difflib
import io
import itertools
import tokenize
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from syncguard.config import Settings
from syncguard.engine import LintResult, decode, lint_files
from syncguard.facts import LINE_BREAK, Edit, Fix, Span
from syncguard.rule import Context

SAFE = "safe"
UNSAFE = "unsafe"
# Passes of fix-then-re-lint; fixes rarely enable further fixes, so a few suffice.
MAX_PASSES = 4


# --------------------------------------------------------------- building fixes


def insertion(line: int, column: int, text: str) -> Edit:
    """Insert ``text`` before the 1-based character ``column`` of ``line``."""
    return Edit(Span(line, column, line, column), text)


def replace_fix(
    ctx: Context, node: ast.AST, text: str, applicability: str, description: str
) -> Fix:
    """Replace the whole of ``node`` by ``text``."""
    return Fix(applicability, description, (Edit(ctx.span(node), text),))


def add_keyword_fix(
    ctx: Context,
    call: ast.Call,
    keyword: str,
    value: str,
    applicability: str,
    description: str | None = None,
) -> Fix | None:
    """A fix adding ``keyword=value`` to ``call``; None where it cannot be added safely.

    The text goes right after the last argument, so trailing commas and
    comments inside the parentheses stay valid. Not offered when the keyword is
    already there, when ``**kwargs`` might hold it, or after a bare generator
    argument (``f(x for x in y)`` accepts no second argument).
    """
    if any(item.arg in (keyword, None) for item in call.keywords):
        return None
    if len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.GeneratorExp):
        return None
    arguments: list[ast.AST] = [*call.args, *call.keywords]
    if arguments:
        last = max(arguments, key=lambda a: (a.end_lineno, a.end_col_offset))  # type: ignore[attr-defined]
        end = ctx.span(last)
        edit = insertion(end.end_line, end.end_column, f", {keyword}={value}")
    else:
        end = ctx.span(call)
        edit = insertion(end.end_line, end.end_column - 1, f"{keyword}={value}")
    return Fix(applicability, description or f"add `{keyword}={value}`", (edit,))


# --------------------------------------------------------------- applying edits


def _line_starts(source: str) -> list[int]:
    return [0, *(match.end() for match in LINE_BREAK.finditer(source))]


def _offsets(source: str, span: Span, starts: Sequence[int]) -> tuple[int, int]:
    if not (1 <= span.line <= span.end_line <= len(starts)):
        raise ValueError(f"edit outside the file: line {span.end_line}")
    start = starts[span.line - 1] + span.column - 1
    end = starts[span.end_line - 1] + span.end_column - 1
    if not (0 <= start <= end <= len(source)):
        raise ValueError(f"edit outside the file at line {span.line}")
    return start, end


def _conflict(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """True when two edit ranges touch in a way whose result would depend on their order."""
    if a[0] == a[1] or b[0] == b[1]:  # an insertion conflicts with anything around its point
        point, other = (a, b) if a[0] == a[1] else (b, a)
        return other[0] <= point[0] <= other[1]
    return a[0] < b[1] and b[0] < a[1]


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """``source`` with ``edits`` applied; raises ValueError if two edits overlap."""
    starts = _line_starts(source)
    ranges = sorted(
        ((_offsets(source, edit.span, starts), edit.text) for edit in edits),
        key=lambda item: item[0],
    )
    for (first, _), (second, _) in itertools.pairwise(ranges):
        if _conflict(first, second):
            raise ValueError("overlapping edits")
    for (start, end), text in reversed(ranges):
        source = source[:start] + text + source[end:]
    return source


def parses(source: str) -> bool:
    """True when ``source`` is valid Python for LibCST and for the compiler's parser."""
    import libcst

    try:
        libcst.parse_module(source)
        ast.parse(source)
    except (libcst.ParserSyntaxError, SyntaxError, ValueError, RecursionError):
        return False
    return True


def fix_source(source: str, fixes: Sequence[Fix]) -> tuple[str, int]:
    """Apply the fixes that do not overlap an earlier one and keep the file parseable.

    Returns the new text and how many fixes it contains.
    """
    if not fixes:
        return source, 0
    starts = _line_starts(source)
    chosen: list[Fix] = []
    taken: list[tuple[int, int]] = []
    for fix in sorted(set(fixes), key=lambda f: [(e.span.line, e.span.column) for e in f.edits]):
        try:
            ranges = [_offsets(source, edit.span, starts) for edit in fix.edits]
        except ValueError:
            continue
        if any(_conflict(mine, other) for mine in ranges for other in taken):
            continue
        chosen.append(fix)
        taken.extend(ranges)
    if not chosen:
        return source, 0
    combined = apply_edits(source, [edit for fix in chosen for edit in fix.edits])
    if parses(combined):
        return combined, len(chosen)
    # Some fix breaks the file: keep, one by one, those that leave it parseable.
    kept: list[Fix] = []
    result = source
    for fix in chosen:
        attempt = apply_edits(source, [edit for f in (*kept, fix) for edit in f.edits])
        if parses(attempt):
            kept.append(fix)
            result = attempt
    return result, len(kept)


# --------------------------------------------------------------- whole runs


@dataclass
class FixRun:
    """The outcome of fixing a set of paths (nothing written yet)."""

    original: dict[str, str] = field(default_factory=dict)  # path -> text before fixing
    fixed: dict[str, str] = field(default_factory=dict)  # path -> text after fixing
    applied: int = 0  # fixes applied, over all passes
    result: LintResult = field(default_factory=LintResult)  # lint of the fixed text


def allowed(fix: Fix | None, unsafe: bool) -> bool:
    return fix is not None and (fix.applicability == SAFE or unsafe)


def fix_paths(
    paths: Sequence[str],
    *,
    settings: Settings | None = None,
    scope: str | None = None,
    unsafe: bool = False,
) -> FixRun:
    """Lint ``paths``, apply the allowed fixes in memory, re-lint until stable."""
    run = FixRun()
    result = lint_files(paths, settings=settings, scope=scope)
    for _ in range(MAX_PASSES):
        by_path: dict[str, list[Fix]] = {}
        for finding in result.findings:
            if allowed(finding.fix, unsafe):
                assert finding.fix is not None
                by_path.setdefault(finding.path, []).append(finding.fix)
        changed = False
        for path, fixes in sorted(by_path.items()):
            source = run.fixed.get(path)
            if source is None:
                source = _read(path)
                if source is None:
                    continue
            new, count = fix_source(source, fixes)
            if count and new != source:
                run.original.setdefault(path, source)
                run.fixed[path] = new
                run.applied += count
                changed = True
        if not changed:
            break
        result = lint_files(paths, settings=settings, scope=scope, sources=run.fixed)
    run.result = result
    return run


def _read(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return decode(handle.read())
    except Exception:  # unreadable or undecodable: the lint run reports it
        return None


def write_fixes(run: FixRun) -> list[str]:
    """Write the fixed files in their own encoding; returns located error messages."""
    errors: list[str] = []
    for path, text in sorted(run.fixed.items()):
        try:
            with open(path, "rb") as handle:
                encoding, _ = tokenize.detect_encoding(io.BytesIO(handle.read()).readline)
            data = text.encode(encoding)
            with open(path, "wb") as handle:
                handle.write(data)
        except (OSError, SyntaxError, UnicodeError, LookupError) as error:
            errors.append(f"{path}:1:1: cannot write the fixed file: {error}")
    return errors


def unified_diff(original: Mapping[str, str], fixed: Mapping[str, str]) -> str:
    """A unified diff of every changed file, paths prefixed ``a/`` and ``b/``."""
    chunks: list[str] = []
    for path in sorted(fixed):
        before = original[path].splitlines(keepends=True)
        after = fixed[path].splitlines(keepends=True)
        for line in difflib.unified_diff(before, after, f"a/{path}", f"b/{path}"):
            chunks.append(
                line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n"
            )
    return "".join(chunks)
