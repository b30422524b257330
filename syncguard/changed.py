"""Changed-files mode: lint a few files with the whole project as their context.

``syncguard check FILES...`` inside a project (see :mod:`syncguard.workspace`) analyses
every file of the project -- from the facts cache, so a warm run reads only what
changed -- and reports the findings whose chain passes through one of FILES: a sync in
an unchanged helper reached from a changed caller is reported at the caller; a changed
helper reached from an unchanged hot root is reported at the root's call site, which is
how pre-commit, passing only the staged files, still sees syncguard's headline case.
Suppression checks and unreadable-file errors are those of FILES only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from syncguard.engine import LintResult, lint_files
from syncguard.project import Finding
from syncguard.workspace import relative_to


def in_project(paths: Sequence[str], root: Path | None) -> bool:
    """True when changed-files mode applies: every path is a file inside ``root``."""
    return (
        root is not None
        and bool(paths)
        and all(os.path.isfile(path) and relative_to(path, root) is not None for path in paths)
    )


def lint_changed(paths: Sequence[str], root: Path, **options: Any) -> LintResult:
    """Lint the project at ``root`` and keep what concerns ``paths`` (files inside it);
    ``options`` go to :func:`syncguard.engine.lint_files`. Paths in the result are as
    the walk from ``root`` (named relative to the working directory) gives them."""
    top = os.path.relpath(root)
    named = []
    for path in paths:
        relative = relative_to(path, root)
        assert relative is not None  # in_project() checked
        named.append(os.path.normpath(os.path.join(top, relative)))
    given = options.pop("sources", None) or {}  # text given for some named files (stdin)
    renamed = dict(zip(paths, named, strict=True))
    sources = {renamed.get(path, path): text for path, text in given.items()}
    result = lint_files([top, *named], sources=sources, **options)
    targets = set(named)
    settings = options.get("settings")
    if settings is not None:  # notes on configs: of the configs of FILES only
        unused = set(settings.notes()) - set(
            settings.notes([os.path.dirname(os.path.abspath(path)) for path in named])
        )
        result.warnings = [warning for warning in result.warnings if warning not in unused]

    def touches(finding: Finding) -> bool:
        return finding.path in targets or any(step.path in targets for step in finding.chain)

    result.findings = [_as_typed(finding) for finding in result.findings if touches(finding)]
    result.problems = [
        replace(problem, path=_relative(problem.path))
        for problem in result.problems
        if problem.path in targets
    ]
    result.files = len(targets)
    return result


def _relative(path: str) -> str:
    """``path`` (as the walk from the project root names it) relative to the working
    directory, as a user types it: ``pkg/model.py`` rather than ``../src/pkg/model.py``."""
    return os.path.relpath(path) if path.startswith("..") else path


def _as_typed(finding: Finding) -> Finding:
    if not finding.path.startswith("..") and not any(
        step.path.startswith("..") for step in finding.chain
    ):
        return finding  # the usual case: run from the project root
    return replace(
        finding,
        path=_relative(finding.path),
        chain=tuple(replace(step, path=_relative(step.path)) for step in finding.chain),
        suppressible_at=tuple(
            (_relative(path), first, last) for path, first, last in finding.suppressible_at
        ),
    )
