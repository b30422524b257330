"""Autofix: the fixes rules attach to findings, and applying them to files.

Rules build a :class:`~syncguard.facts.Fix` with the helpers at the top: each names a
LibCST codemod of :mod:`syncguard.codemods` and the span of the node it rewrites, and
costs nothing while linting (LibCST is imported only when a fix is applied or
previewed). :func:`fix_paths` applies the fixes of a lint run in memory and re-lints the
edited text until nothing more changes, so that a second ``--fix`` is a no-op;
:func:`write_fixes` writes the results (see :mod:`syncguard.writing`).
"""

from __future__ import annotations

import ast
import io
import os
import time
import tokenize
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from syncguard.config import Settings
from syncguard.engine import LintResult, lint_files
from syncguard.facts import Edit, Fix
from syncguard.reading import Unreadable, decode, read_bytes
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

# A file written this shortly before a run began may have changed after the lint read it
# (file times are coarse): its fixes are then re-derived from the text read for fixing.
_RECENT_NS = 1_000_000_000


@dataclass
class FixRun:
    """The outcome of fixing a set of paths (nothing written yet)."""

    original: dict[str, str] = field(default_factory=dict)  # path -> text before fixing
    fixed: dict[str, str] = field(default_factory=dict)  # path -> text after fixing
    read: dict[str, bytes] = field(default_factory=dict)  # path -> bytes the text came from
    applied: int = 0  # fixes applied, over all passes
    result: LintResult = field(default_factory=LintResult)  # lint of the fixed text
    roots: tuple[str, ...] = ()  # the real folders linted: writes stay inside them


def allowed(fix: Fix | None, unsafe: bool) -> bool:
    return fix is not None and (fix.applicability == SAFE or unsafe)


def fix_paths(
    paths: Sequence[str],
    *,
    settings: Settings | None = None,
    scope: str | None = None,
    unsafe: bool = False,
    jobs: int = 1,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> FixRun:
    """Lint ``paths``, apply the allowed fixes in memory, re-lint until stable."""
    from syncguard.writing import linted_roots

    run = FixRun(roots=linted_roots(paths))
    options: dict[str, Any] = {"settings": settings, "scope": scope, "jobs": jobs}
    options["cache_dir"] = cache_dir
    started = time.time_ns()
    result = lint_files(paths, progress=progress, **options)
    if _read(run, _fixes_by_path(result, unsafe), started):
        result = lint_files(paths, sources=run.original, **options)
    for _ in range(MAX_PASSES):
        by_path = _fixes_by_path(result, unsafe)
        _read(run, by_path, started)
        changed = False
        for path, fixes in sorted(by_path.items()):
            source = run.fixed.get(path, run.original.get(path))
            if source is None:
                continue  # unreadable: the lint run reports it
            new, count = apply_fixes(source, fixes)
            if count and new != source:
                run.fixed[path] = new
                run.applied += count
                changed = True
        if not changed:
            break
        result = lint_files(paths, sources={**run.original, **run.fixed}, **options)
    for path in list(run.original):
        if path not in run.fixed:
            del run.original[path], run.read[path]
    run.result = result
    return run


def _fixes_by_path(result: LintResult, unsafe: bool) -> dict[str, list[Fix]]:
    by_path: dict[str, list[Fix]] = {}
    for finding in result.findings:
        if finding.fix is not None and allowed(finding.fix, unsafe):
            by_path.setdefault(finding.path, []).append(finding.fix)
    return by_path


def _read(run: FixRun, paths: Iterable[str], started_ns: int) -> bool:
    """Read the files of ``paths`` not read yet; True when one of them was written so
    shortly before ``started_ns`` (or after) that the lint may have seen other text."""
    recent = False
    for path in paths:
        if path in run.read:
            continue
        try:
            data = read_bytes(path)
            run.original[path] = decode(data)
            status = os.stat(path)  # after reading: a change made since shows in its times
        except (OSError, Unreadable):
            continue
        run.read[path] = data
        recent = recent or max(status.st_mtime_ns, status.st_ctime_ns) > started_ns - _RECENT_NS
    return recent


def write_fixes(run: FixRun) -> list[str]:
    """Write the fixed files (in their own encoding, each atomically); returns a located
    message for each file not written."""
    from syncguard.writing import Skipped, replace_file, target_of

    errors: list[str] = []
    written: set[str] = set()
    for path in sorted(run.fixed):
        try:
            target = target_of(path, run.roots)
            if target in written:
                continue  # another name of a file just written (a symlink in the tree)
            replace_file(target, fixed_bytes(run, path), run.read[path])
            written.add(target)
        except Skipped as skipped:
            errors.append(f"{path}:1:1: {skipped}")
        except (OSError, SyntaxError, UnicodeError, LookupError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else error
            errors.append(f"{path}:1:1: cannot write the fixed file: {reason}; left as it was")
    return errors


def fixed_bytes(run: FixRun, path: str) -> bytes:
    """The fixed text of ``path`` in the file's own encoding (its coding line, its BOM)."""
    encoding, _ = tokenize.detect_encoding(io.BytesIO(run.read[path]).readline)
    return run.fixed[path].encode(encoding)


def _diff_lines(data: bytes) -> list[bytes]:
    """``data`` cut after each ``\\n``, as ``git apply`` reads a file (``splitlines``
    also cuts at a lone ``\\r``, and text's at form feeds and U+2028, which would make
    hunks git refuses)."""
    lines = data.split(b"\n")
    return [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def unified_diff(run: FixRun) -> bytes:
    """A unified diff of every file ``run`` changed, paths prefixed ``a/`` and ``b/``, that
    ``git apply`` and ``patch -p1`` accept: made of the files' bytes, so that a file in
    another encoding than the terminal's (a latin-1 coding line) applies too."""
    import difflib

    chunks: list[bytes] = []
    for path in sorted(run.fixed):
        before = _diff_lines(run.read[path])
        after = _diff_lines(fixed_bytes(run, path))
        name = os.fsencode(path)
        lines = difflib.diff_bytes(difflib.unified_diff, before, after, b"a/" + name, b"b/" + name)
        for line in lines:
            chunks.append(
                line if line.endswith(b"\n") else line + b"\n\\ No newline at end of file\n"
            )
    return b"".join(chunks)
