"""How long ``syncguard check FILE`` takes from interpreter start to exit, per version.

Usage: ``python benchmarks/startup.py FILE [FILE...] [--runs 15] [--version NAME=SITE ...]``

Each ``--version`` is a folder put first on ``PYTHONPATH`` (a ``pip install --no-deps
--target SITE`` of that version); without any, the installed syncguard is timed alone.
The versions are run in turns, round after round, so that a busy machine slows them alike;
each run is a new process (``python -m syncguard check FILE --no-cache --output-format
concise``), as pre-commit starts one. It prints the median and fastest wall time and the
median CPU time (user + system, which a busy machine inflates less) of each, then,
from ``python -X importtime``, what the last version's imports cost, package by package (the
self time of each package's modules), in its fastest of three runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence


def environment(site: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    if site:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (site, env.get("PYTHONPATH"))))
    return env


def check(file: str) -> list[str]:
    return [sys.executable, "-m", "syncguard", "check", file, "--no-cache", "--output-format",
            "concise"]  # fmt: skip


def timed(command: Sequence[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one run of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return seconds, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def import_costs(file: str, env: dict[str, str], runs: int = 3) -> dict[str, float]:
    """Seconds spent importing each package's own modules (their self times, so that the
    packages add up to the whole), from the fastest of ``runs`` runs."""
    best: dict[str, float] = {}
    for _ in range(runs):
        result = subprocess.run(
            [sys.executable, "-X", "importtime", *check(file)[1:]],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        costs: dict[str, float] = {}
        for line in result.stderr.splitlines():
            if not line.startswith("import time:") or "|" not in line:
                continue
            own, _, name = line.removeprefix("import time:").split("|")
            if not own.strip().isdigit():
                continue  # the header
            package = name.strip().split(".")[0]
            costs[package] = costs.get(package, 0.0) + int(own) / 1e6
        if not best or sum(costs.values()) < sum(best.values()):
            best = costs
    return best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", help="files to check, one at a time")
    parser.add_argument("--runs", type=int, default=15, help="rounds (median)")
    parser.add_argument(
        "--version", action="append", default=[], metavar="NAME=SITE",
        help="a version to time: its name and the folder it is installed in",
    )  # fmt: skip
    args = parser.parse_args(argv)
    versions = [tuple(item.split("=", 1)) for item in args.version] or [("installed", "")]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} cores, load average {load:.1f}, "
          f"{args.runs} rounds; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")  # fmt: skip
    print()
    print("Each cell: median wall / fastest wall / median CPU (user + system) seconds.")
    print()
    print("| file | " + " | ".join(name for name, _ in versions) + " |")
    print("| --- |" + " ---: |" * len(versions))
    for file in args.files:
        runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in versions}
        for _ in range(args.runs):
            for name, site in versions:
                runs[name].append(timed(check(file), environment(site)))
        cells = []
        for name, _ in versions:
            walls, cpus = [w for w, _ in runs[name]], [c for _, c in runs[name]]
            cells.append(
                f"{statistics.median(walls):.3f} / {min(walls):.3f} / {statistics.median(cpus):.3f}"
            )
        print(f"| {os.path.basename(file)} | " + " | ".join(cells) + " |")
    start = [timed([sys.executable, "-c", "pass"], environment("")) for _ in range(args.runs)]
    print(f"\n`python -c pass`: median {statistics.median(w for w, _ in start):.3f} s wall, "
          f"{statistics.median(c for _, c in start):.3f} s CPU")  # fmt: skip
    name, site = versions[-1]
    costs = import_costs(args.files[0], environment(site))
    print(f"\nImports of {name} checking {os.path.basename(args.files[0])} (fastest of 3, "
          f"`-X importtime`): {sum(costs.values()):.3f} s in all")  # fmt: skip
    print()
    print("| package | seconds |")
    print("| --- | ---: |")
    for package, seconds in sorted(costs.items(), key=lambda item: -item[1])[:12]:
        print(f"| {package} | {seconds:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
