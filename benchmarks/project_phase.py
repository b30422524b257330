"""What the redundant-work rules (SG5xx) cost on a large tree, phase by phase.

    python benchmarks/project_phase.py CORPUS [--repeat N]

Prints one table (milliseconds, one process, no cache): the whole ``lint_files`` run;
the per-file phase with every rule and without the SG5xx rules (their visitors'
share is the difference); the project phase (call graph, hot paths, findings);
and inside it the SG5xx project-level checks (``check_project``), timed directly.
The per-file phase runs once per variant; project-phase figures are medians of
``--repeat`` runs. CORPUS is any folder of Python files (benchmarks/README.md says
how to get the vLLM release used in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from syncguard.config import Settings
from syncguard.discovery import discover, module_name
from syncguard.engine import analyze_path, lint_files
from syncguard.facts import FileError
from syncguard.project import HotSettings, Project, SourceFile, root_of
from syncguard.rule import Rule
from syncguard.rules import all_rules

REDUNDANT_FAMILY = "SG5"


def _analyse(files: Sequence[str], rules: Sequence[Rule]) -> tuple[list[SourceFile], float]:
    start = time.perf_counter()
    analysed = []
    for path in files:
        facts, _ = analyze_path(path, rules)
        if isinstance(facts, FileError):
            continue
        module, is_package = module_name(path)
        analysed.append(SourceFile(path, root_of(path, module, is_package), facts))
    return analysed, time.perf_counter() - start


class _TimedChecks:
    """Wraps the ``check_project`` of each rule to add up the time spent in it."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.seconds = 0.0
        for rule in rules:
            rule.check_project = self._timed(rule.check_project)  # type: ignore[method-assign,assignment]

    def _timed(self, check: Callable[[Any], Iterable[Any]]) -> Callable[[Any], list[Any]]:
        def timed(view: Any) -> list[Any]:
            start = time.perf_counter()
            reports = list(check(view))
            self.seconds += time.perf_counter() - start
            return reports

        return timed


def _project_phase(
    files: list[SourceFile], settings: Settings, rules: Sequence[Rule]
) -> tuple[float, int]:
    classes = all_rules()
    start = time.perf_counter()
    project = Project(
        files,
        HotSettings(settings.hot_functions, settings.cold_functions, settings.compiled_functions),
        {code: rule.message for code, rule in classes.items()},
        frozenset(code for code, rule in classes.items() if rule.graph_break),
        rules,
    )
    findings = project.findings(settings.scope)
    elapsed = time.perf_counter() - start
    return elapsed, sum(f.code.startswith(REDUNDANT_FAMILY) for f in findings)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", help="folder of Python files to lint")
    parser.add_argument("--repeat", type=int, default=5, help="project-phase runs (median)")
    args = parser.parse_args(argv)
    settings = Settings()
    files, missing = discover([args.corpus], settings.exclude)
    if missing or not files:
        print(f"project_phase: no Python files under {args.corpus}", file=sys.stderr)
        return 2

    start = time.perf_counter()
    whole = lint_files([args.corpus], settings=settings)
    whole_seconds = time.perf_counter() - start

    every_rule = [rule_class() for rule_class in all_rules().values()]
    without = [rule for rule in every_rule if not rule.code.startswith(REDUNDANT_FAMILY)]
    analysed, per_file_all = _analyse(files, every_rule)
    _, per_file_without = _analyse(files, without)
    records = sum(
        len(items)
        for file in analysed
        for code, items in file.facts.records.items()
        if code.startswith(REDUNDANT_FAMILY)
    )

    timer = _TimedChecks(rule for rule in every_rule if rule.code.startswith(REDUNDANT_FAMILY))
    runs = [_project_phase(analysed, settings, every_rule) for _ in range(args.repeat)]
    check_seconds = timer.seconds / args.repeat
    project_seconds = statistics.median(seconds for seconds, _ in runs)
    redundant_findings = runs[0][1]

    rows = [
        ("whole run (lint_files, 1 process, no cache)", whole_seconds),
        ("per-file phase, every rule", per_file_all),
        ("per-file phase, without SG5xx", per_file_without),
        ("  SG5xx visitors (difference)", per_file_all - per_file_without),
        (f"project phase, every rule (median of {args.repeat})", project_seconds),
        ("  SG5xx check_project (mean per run)", check_seconds),
    ]
    print(f"corpus: {args.corpus}  files: {len(files)}  findings: {len(whole.findings)}")
    print(f"SG5xx records: {records}  SG5xx findings: {redundant_findings}")
    print()
    print(f"| {'part':<52} | {'ms':>9} | {'share of run':>12} |")
    print(f"|{'-' * 54}|{'-' * 10}:|{'-' * 13}:|")
    for label, seconds in rows:
        share = f"{100 * seconds / whole_seconds:.2f} %"
        print(f"| {label:<52} | {seconds * 1000:>9.1f} | {share:>12} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
