"""What the redundant-work rules (SG5xx) cost on a large tree, phase by phase.

    python benchmarks/project_phase.py CORPUS [--repeat N]

Prints one table (milliseconds, one process, no cache): the whole ``lint_files`` run;
the per-file phase with every rule and, inside it, the time spent in the SG5xx
rules' visit methods; the project phase (call graph, hot paths, findings) and,
inside it, the SG5xx project-level checks (``check_project``). The SG5xx parts are
timed directly around their methods. The per-file phase runs once; project-phase
figures are medians of ``--repeat`` runs. CORPUS is any folder of Python files
(benchmarks/README.md says how to get the vLLM release used in benchmarks/RESULTS.md).
"""

from __future__ import annotations

import argparse
import gc
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
    gc.disable()  # as the engine does while it builds facts
    start = time.perf_counter()
    analysed = []
    for path in files:
        facts, _ = analyze_path(path, rules)
        if isinstance(facts, FileError):
            continue
        module, is_package = module_name(path)
        analysed.append(SourceFile(path, root_of(path, module, is_package), facts))
    elapsed = time.perf_counter() - start
    gc.enable()
    return analysed, elapsed


class _Timer:
    """Adds up the time spent in the wrapped methods of some rules."""

    def __init__(self, rules: Iterable[Rule], prefix: str) -> None:
        self.seconds = 0.0
        for rule in rules:
            for name in dir(rule):
                if name.startswith(prefix):
                    setattr(rule, name, self._timed(getattr(rule, name)))

    def _timed(self, method: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any) -> Any:
            start = time.perf_counter()
            result = method(*args)
            if not isinstance(result, (list, type(None))):
                result = list(result)  # check_project yields: consume it inside the timer
            self.seconds += time.perf_counter() - start
            return result

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
    files, missing = discover([args.corpus], settings)
    if missing or not files:
        print(f"project_phase: no Python files under {args.corpus}", file=sys.stderr)
        return 2

    start = time.perf_counter()
    whole = lint_files([args.corpus], settings=settings)
    whole_seconds = time.perf_counter() - start

    every_rule = [rule_class() for rule_class in all_rules().values()]
    redundant = [rule for rule in every_rule if rule.code.startswith(REDUNDANT_FAMILY)]
    visits = _Timer(redundant, "visit_")
    analysed, per_file = _analyse(files, every_rule)
    records = sum(
        len(items)
        for file in analysed
        for code, items in file.facts.records.items()
        if code.startswith(REDUNDANT_FAMILY)
    )

    checks = _Timer(redundant, "check_project")
    runs = [_project_phase(analysed, settings, every_rule) for _ in range(args.repeat)]
    check_seconds = checks.seconds / args.repeat
    project_seconds = statistics.median(seconds for seconds, _ in runs)
    redundant_findings = runs[0][1]

    rows = [  # (part, seconds, the whole it is a share of)
        ("whole run (lint_files, 1 process, no cache)", whole_seconds, whole_seconds),
        ("per-file phase, every rule", per_file, per_file),
        ("  in SG5xx visit methods", visits.seconds, per_file),
        (f"project phase, every rule (median of {args.repeat})", project_seconds, project_seconds),
        ("  SG5xx check_project (mean per run)", check_seconds, project_seconds),
    ]
    print(f"corpus: {args.corpus}  files: {len(files)}  findings: {len(whole.findings)}")
    print(f"SG5xx records: {records}  SG5xx findings: {redundant_findings}")
    print()
    print(f"| {'part':<52} | {'ms':>9} | {'share of phase':>14} |")
    print(f"|{'-' * 54}|{'-' * 10}:|{'-' * 15}:|")
    for label, seconds, total in rows:
        share = f"{100 * seconds / total:.2f} %"
        print(f"| {label:<52} | {seconds * 1000:>9.1f} | {share:>14} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
