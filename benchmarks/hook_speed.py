"""How fast the pre-commit hook is: ``syncguard check FILE`` in changed-files mode.

Usage: ``python benchmarks/hook_speed.py CORPUS [--runs 7] [--file REL_PATH]``

The corpus is copied into a temporary git repository (the original is never touched),
the cache is filled with one ``syncguard check .``, then each case is timed as a
separate process, interpreter start-up included, and the median of ``--runs`` is
printed in one Markdown table (the runs alternate between the cases, so a busy machine
slows them alike):

* whole tree, warm: ``syncguard check .`` with the cache filled, for the ratio;
* hook, warm: ``syncguard check FILE`` -- the whole project as context, from the cache,
  nothing changed since the last run (a hook run again after a failed commit);
* hook, FILE edited: a comment appended to FILE before each run (its facts unchanged);
* hook, FILE's facts changed: a new function appended to FILE before each run;
* the file alone: ``syncguard check FILE --no-project`` (what the hook did before);
* pre-commit: ``pre-commit run --files FILE`` with the hook as a local system hook,
  when pre-commit is installed (adds pre-commit's own start-up).

FILE defaults to a median-sized file of the corpus. Byte-code caching is switched on for
the timed processes (``PYTHONDONTWRITEBYTECODE`` unset), as it is in an installed package.

``--before SRC`` compares with another version of syncguard: SRC is a source tree of it
(``git archive main | tar -x -C SRC``), put first on ``PYTHONPATH``. The warm cases are
then timed for both versions, alternating, each version with its own filled cache, and
the table gives the CPU time of each process (user + system, what a busy machine
disturbs least) beside its wall time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def _run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    return _timed(command, cwd, env)[0]


def _timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of ``command``."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, capture_output=True, check=False, env=env or _ENV)
    wall = time.perf_counter() - start
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def _compare(
    cases: dict[str, tuple[list[str], str | None]],
    before: Path,
    repo: Path,
    runs: int,
    reset: Callable[[str | None, list[str], dict[str, str]], None],
) -> None:
    """Time the warm cases with this version and with the one at ``before``, alternating."""
    old_env = {**_ENV, "PYTHONPATH": os.pathsep.join([str(before.resolve()), *_paths()])}
    versions = {"before": old_env, "after": _ENV}
    warm = {name: case for name, case in cases.items() if case[1] != "function"}
    times: dict[tuple[str, str], list[tuple[float, float]]] = {
        (name, version): [] for name in warm for version in versions
    }
    for env in versions.values():  # fill each version's cache
        _run([*cases["whole tree, warm (`check .`)"][0]], repo, env)
    for _ in range(runs):
        for name, (command, kind) in warm.items():
            for version, env in versions.items():
                reset(kind, command, env)
                times[name, version].append(_timed(command, repo, env))
    print("| case | version | CPU median s | CPU min s | CPU max s | wall median s |")
    print("|---|---|---|---|---|---|")
    for (name, version), found in times.items():
        cpu = [each[1] for each in found]
        wall = statistics.median(each[0] for each in found)
        print(f"| {name} | {version} | {statistics.median(cpu):.3f} | {min(cpu):.3f} | "
              f"{max(cpu):.3f} | {wall:.2f} |")  # fmt: skip


def _paths() -> list[str]:
    found = os.environ.get("PYTHONPATH")
    return found.split(os.pathsep) if found else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--file", help="the staged file, relative to the corpus")
    parser.add_argument("--before", type=Path, help="source tree of a version to compare")
    args = parser.parse_args()
    syncguard = [sys.executable, "-m", "syncguard", "check"]
    with tempfile.TemporaryDirectory(prefix="hook-speed-") as folder:
        repo = Path(folder) / "repo"
        shutil.copytree(args.corpus, repo, ignore=shutil.ignore_patterns(".syncguard_cache"))
        git = ["git", "-c", "user.email=b@example.com", "-c", "user.name=bench"]
        subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
        subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
        subprocess.run([*git, "commit", "-qm", "corpus", "--no-verify"], cwd=repo, check=True)
        files = sorted(
            (path for path in repo.rglob("*.py") if ".git" not in path.parts),
            key=lambda path: path.stat().st_size,
        )
        target = repo / args.file if args.file else files[len(files) // 2]
        relative = str(target.relative_to(repo))
        original = target.read_text(encoding="utf-8")
        edits = {"comment": 0, "function": 0}

        def edit(kind: str) -> None:
            edits[kind] += 1
            extra = (
                f"\n# edited {edits[kind]}\n"
                if kind == "comment"
                else f"\n\ndef _bench_{edits[kind]}(x):\n    return x\n"
            )
            target.write_text(original + extra, encoding="utf-8")

        config = repo / ".pre-commit-config.yaml"
        config.write_text(
            "repos:\n- repo: local\n  hooks:\n  - id: syncguard\n    name: syncguard\n"
            f"    entry: {sys.executable} -m syncguard check\n    language: system\n"
            "    types_or: [python, pyi]\n    require_serial: true\n"
        )
        cases: dict[str, tuple[list[str], str | None]] = {
            "whole tree, warm (`check .`)": ([*syncguard, "."], None),
            "hook, warm (nothing changed)": ([*syncguard, relative], None),
            "hook, FILE edited (a comment)": ([*syncguard, relative], "comment"),
            "hook, FILE's facts changed": ([*syncguard, relative], "function"),
            "the file alone (--no-project)": ([*syncguard, relative, "--no-project"], None),
        }
        if shutil.which("pre-commit") or _has_module("pre_commit"):
            pre_commit = [sys.executable, "-m", "pre_commit", "run", "syncguard", "--files"]
            cases["pre-commit run --files FILE (warm)"] = ([*pre_commit, relative], None)
        if args.before is not None:

            def reset(kind: str | None, command: list[str], env: dict[str, str]) -> None:
                target.write_text(original, encoding="utf-8")
                if kind is None:
                    _run(command, repo, env)  # the cache knows this state
                else:
                    edit(kind)

            print(f"Hook speed on {args.corpus.name} ({len(files)} files), FILE = {relative}, "
                  f"{os.cpu_count()} CPUs, before = {args.before}, {args.runs} runs, "
                  f"load {os.getloadavg()[0]:.1f} at the start\n")  # fmt: skip
            _compare(cases, args.before, repo, args.runs, reset)
            print(f"\nload {os.getloadavg()[0]:.1f} at the end")
            return
        _run([*syncguard, "."], repo)  # fill the cache
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (command, kind) in cases.items():
                target.write_text(original, encoding="utf-8")
                if kind is None:
                    _run([*syncguard, relative], repo)  # the cache knows this state
                else:
                    edit(kind)
                times[name].append(_run(command, repo))
        count = len(files)
        print(f"Hook speed on {args.corpus.name} ({count} files), FILE = {relative}, "
              f"{os.cpu_count()} CPUs, median of {args.runs} runs\n")  # fmt: skip
        print("| case | median s | min s | max s |\n|---|---|---|---|")
        for name, found in times.items():
            print(f"| {name} | {statistics.median(found):.2f} | {min(found):.2f} | "
                  f"{max(found):.2f} |")  # fmt: skip


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


if __name__ == "__main__":
    main()
