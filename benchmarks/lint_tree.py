"""Lint a whole tree (a site-packages folder, a standard library) the way a user would, and
say whether anything went wrong inside syncguard.

Usage: ``python benchmarks/lint_tree.py PATH [--jobs N] [--scope all|hot] [--show N]``

One ``syncguard check PATH --output-format json --no-cache`` runs as a child process (the
tree is only read). The script prints one Markdown table: the files linted, the child's
exit code, its wall time and peak memory (``ru_maxrss`` of the child and of the workers it
waited for: the largest process, not their sum), the findings, the internal errors (the
first ``--show`` of them with their location) and the located errors (files syncguard
cannot analyse: syntax errors, undecodable bytes...) by kind. A run that crashes, or any
internal error, makes the script exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from syncguard.discovery import discover

INTERNAL = "internal error"


@dataclass
class Run:
    """What one lint of a tree gave."""

    files: int
    exit_code: int
    seconds: float
    peak_rss_mib: float
    findings: int = 0
    internal: list[str] = field(default_factory=list)  # located messages
    located: Counter[str] = field(default_factory=Counter)  # kind -> files
    crash: str = ""  # stderr of a run that gave no report


def kind_of(message: str) -> str:
    """The kind of a located error: its message up to the first detail (``syntax error``,
    ``cannot decode as utf-8``, ``not a regular file``)."""
    return re.split(r"[:(]", message, maxsplit=1)[0].strip()


def lint(tree: Path, jobs: int | None, scope: str) -> Run:
    files, _ = discover([str(tree)])
    command = [sys.executable, "-m", "syncguard", "check", str(tree)]
    command += ["--output-format", "json", "--no-cache", "--scope", scope]
    command += ["--jobs", str(jobs)] if jobs else []
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err, cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        report, errors = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    run = Run(len(files), child.returncode, seconds, usage.ru_maxrss / 1024)
    try:
        entries = json.loads(report)
    except json.JSONDecodeError:
        run.crash = errors.strip() or f"no report (exit {child.returncode})"
        return run
    for entry in entries:
        if entry["code"] != "SG000":
            run.findings += 1
        elif INTERNAL in entry["message"]:
            run.internal.append(
                f"{entry['path']}:{entry['line']}:{entry['column']}: {entry['message']}"
            )
        else:
            run.located[kind_of(entry["message"])] += 1
    run.internal += [line for line in errors.splitlines() if INTERNAL in line]
    return run


def table(tree: Path, run: Run, show: int) -> str:
    rows = [
        ("tree", f"`{tree}`"),
        ("files", f"{run.files:,}"),
        ("exit code", str(run.exit_code)),
        ("wall time", f"{run.seconds:.1f} s"),
        ("peak memory (largest process)", f"{run.peak_rss_mib:.0f} MiB"),
        ("findings", f"{run.findings:,}"),
        ("internal errors", str(len(run.internal))),
    ]
    rows += [("", f"`{message}`") for message in run.internal[:show]]
    if run.crash:
        rows.append(("crash", f"`{run.crash.splitlines()[-1]}`"))
    total = sum(run.located.values())
    rows.append(("located errors", f"{total:,}"))
    rows += [(f"· {kind}", f"{count:,}") for kind, count in run.located.most_common()]
    lines = ["| | |", "|---|---|", *(f"| {name} | {value} |" for name, value in rows)]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("path", type=Path, help="the folder to lint")
    parser.add_argument("--jobs", type=int, default=None, help="syncguard --jobs (default: cores)")
    parser.add_argument("--scope", choices=("all", "hot"), default="all", help="syncguard --scope")
    parser.add_argument("--show", type=int, default=5, help="internal errors to list")
    args = parser.parse_args(argv)
    if not args.path.is_dir():
        parser.error(f"{args.path} is not a folder")
    tree = args.path.resolve()
    run = lint(tree, args.jobs, args.scope)
    print(f"syncguard check --scope {args.scope} --jobs {args.jobs or '(default: cores)'}")
    print(f"on {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs")
    print()
    print(table(tree, run, args.show))
    return 1 if run.internal or run.crash else 0


if __name__ == "__main__":
    raise SystemExit(main())
