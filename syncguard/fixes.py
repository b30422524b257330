"""Autofix: the fixes rules attach to findings, and applying them to files.

Rules build a :class:`~syncguard.facts.Fix` with the helpers at the top: each names a
LibCST codemod of :mod:`syncguard.codemods` and the span of the node it rewrites, and
costs nothing while linting (LibCST is imported only when a fix is applied or
previewed). :func:`fix_paths` applies the fixes of a lint run in memory and re-lints the
edited text until nothing more changes, so that a second ``--fix`` is a no-op;
:func:`write_fixes` writes the results.
"""

from __future__ import annotations

import ast
import difflib
import io
import tokenize
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from syncguard.config import Settings
from syncguard.engine import LintResult, lint_files
from syncguard.facts import Edit, Fix
from syncguard.reading import Unreadable, read_source
from syncguard.rule import Context

SAFE = "safe"
UNSAFE = "unsafe"
# Passes of fix-then-re-lint; fixes rarely enable further fixes, so a few suffice.
MAX_PASSES = 4


# --------------------------------------------------------------- building fixes


def codemod_fix(
    ctx: Context,
    node: ast.AST,
    codemod: str,
    applicability: str,
    description: str,
    *arguments: str,
) -> Fix:
    """A fix running the codemod named ``codemod`` on ``node`` with ``arguments``."""
    return Fix(applicability, description, codemod, ctx.span(node), arguments)


def replace_fix(
    ctx: Context, node: ast.expr, code: str, applicability: str, description: str
) -> Fix:
    """Replace the expression ``node`` by ``code`` (its parentheses stay)."""
    return codemod_fix(ctx, node, "replace", applicability, description, code)


def add_keyword_fix(
    ctx: Context,
    call: ast.Call,
    keyword: str,
    value: str,
    applicability: str,
    description: str | None = None,
) -> Fix | None:
    """A fix adding ``keyword=value`` to ``call``; None where it cannot be added safely.

    The argument goes after the last one, so trailing commas and comments inside the
    parentheses stay. Not offered when the keyword is already there, when ``**kwargs``
    might hold it, or after a bare generator argument (``f(x for x in y)`` accepts no
    second argument).
    """
    if any(item.arg in (keyword, None) for item in call.keywords):
        return None
    if len(call.args) == 1 and not call.keywords and isinstance(call.args[0], ast.GeneratorExp):
        return None
    description = description or f"add `{keyword}={value}`"
    return codemod_fix(ctx, call, "set-keyword", applicability, description, keyword, value)


def apply_fixes(source: str, fixes: Sequence[Fix]) -> tuple[str, int]:
    """``source`` with the fixes applied that keep it valid Python, and how many they are."""
    if not fixes:
        return source, 0
    from syncguard.codemods import apply_fixes as rewrite

    new, applied = rewrite(source, fixes)
    return new, len(applied)


def fix_edits(source: str, fix: Fix) -> tuple[Edit, ...]:
    """The text edit ``fix`` makes to ``source``, for tools and editors; () if none."""
    from syncguard.codemods import text_edit

    edit = text_edit(source, fix)
    return () if edit is None else (edit,)


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
            new, count = apply_fixes(source, fixes)
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
        return read_source(path)
    except Unreadable:  # the lint run reports it
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
