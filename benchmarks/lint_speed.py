"""How fast ``syncguard check`` is on a large tree, next to ``ruff check --select ALL``.

Usage: ``python benchmarks/lint_speed.py CORPUS [--runs 3] [--jobs N]``

CORPUS is a folder of Python sources (see benchmarks/README.md for how to get
one). The script copies it into a temporary folder (the original is never
touched), then times, as separate processes, each run including interpreter
start-up:

* cold: ``--no-cache``, the whole tree;
* warm: the whole tree again with the cache filled, nothing changed;
* one file changed: a comment appended to a typical (median size) file, or to the
  largest one, before each run (no fact changes: the project phase's results are
  reused); and a comment line inserted at the top of the file (every line moves: the
  project phase runs again);
* one file: ``syncguard check FILE --no-cache`` on a typical and on the largest file;
* ruff: ``ruff check --select ALL --no-cache`` on the same copy, when ruff is installed.

Each time is the median of ``--runs`` runs; peak RSS is that of the largest
process of a run (the parent or a worker). It prints one Markdown table.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from syncguard.discovery import discover


@dataclass
class Timing:
    """Median wall time and the largest peak RSS over a few runs of one command."""

    seconds: float
    peak_rss_mib: float
    exit_codes: tuple[int, ...]


def run_once(command: Sequence[str], cwd: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) of the largest process, exit code of ``command``."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)  # rusage of this run alone
        seconds = time.perf_counter() - started
        process.returncode = code = os.waitstatus_to_exitcode(status)
        if code not in (0, 1):
            errors.seek(0)
            text = errors.read().decode(errors="replace").strip()
            sys.stderr.write(f"{' '.join(command)} exited with {code}:\n{text}\n")
    return seconds, usage.ru_maxrss / 1024, code


def timed(
    command: Sequence[str],
    cwd: Path,
    runs: int,
    before_each: Callable[[], None] | None = None,
) -> Timing:
    """Run ``command`` ``runs`` times (calling ``before_each()`` first if given)."""
    seconds: list[float] = []
    peaks: list[float] = []
    codes: list[int] = []
    for _ in range(runs):
        if before_each is not None:
            before_each()
        wall, peak, code = run_once(command, cwd)
        seconds.append(wall)
        peaks.append(peak)
        codes.append(code)
    return Timing(statistics.median(seconds), max(peaks), tuple(codes))


def count_findings(command: Sequence[str], cwd: Path) -> int:
    """Number of findings ``command`` (a concise-format check) prints."""
    output = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    return sum(1 for line in output.stdout.splitlines() if ": SG" in line)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", type=Path, help="folder of Python sources")
    parser.add_argument("--runs", type=int, default=3, help="runs per measurement (median)")
    parser.add_argument("--jobs", type=int, default=None, help="syncguard --jobs (default: cores)")
    args = parser.parse_args(argv)
    if not args.corpus.is_dir():
        parser.error(f"{args.corpus} is not a folder")
    with tempfile.TemporaryDirectory(prefix="lint-speed-") as scratch:
        return measure(args.corpus, Path(scratch), args.runs, args.jobs)


def measure(corpus: Path, scratch: Path, runs: int, jobs: int | None) -> int:
    tree = scratch / corpus.name
    shutil.copytree(corpus, tree, symlinks=True)
    cache = scratch / "cache"
    files, _ = discover([str(tree)])
    sizes = {path: os.path.getsize(path) for path in files}
    lines = 0
    for path in files:
        with open(path, "rb") as handle:
            lines += handle.read().count(b"\n")
    largest = max(files, key=sizes.__getitem__)
    typical = sorted(files, key=sizes.__getitem__)[len(files) // 2]

    syncguard = [sys.executable, "-m", "syncguard", "check", "--output-format", "concise"]
    job_flags = ["--jobs", str(jobs)] if jobs else []
    whole = [*syncguard, *job_flags, tree.name]
    findings = count_findings([*whole, "--no-cache"], scratch)

    cold = timed([*whole, "--no-cache"], scratch, runs)
    cached = [*whole, "--cache-dir", str(cache)]
    run_once(cached, scratch)  # fills the cache
    warm = timed(cached, scratch, runs)
    edits = iter(range(1, 4 * runs + 1))

    def editor(path: str, at_top: bool = False) -> Callable[[], None]:
        def edit() -> None:
            comment = f"# lint_speed edit {next(edits)}\n"
            with open(path, "rb") as handle:
                data = handle.read()
            data = comment.encode() + data if at_top else data + b"\n" + comment.encode()
            with open(path, "wb") as handle:
                handle.write(data)

        return edit

    changed_typical = timed(cached, scratch, runs, editor(typical))
    changed_largest = timed(cached, scratch, runs, editor(largest))
    moved_typical = timed(cached, scratch, runs, editor(typical, at_top=True))
    moved_largest = timed(cached, scratch, runs, editor(largest, at_top=True))
    one_typical = timed([*syncguard, typical, "--no-cache"], scratch, runs)
    one_largest = timed([*syncguard, largest, "--no-cache"], scratch, runs)
    startup = timed([sys.executable, "-c", "pass"], scratch, runs)

    ruff_path = shutil.which("ruff")
    ruff = None
    if ruff_path is not None:
        ruff = timed(
            [ruff_path, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", tree.name],
            scratch,
            runs,
        )

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    megabytes = sum(sizes.values()) / 1e6
    print(f"corpus: {corpus.name}: {len(files)} files, {lines:,} lines, {megabytes:.1f} MB; "
          f"{findings} findings")  # fmt: skip
    print(f"machine: {platform.machine()}, {cores} cores, Python {platform.python_version()}, "
          f"--jobs {jobs or cores}; median of {runs} runs, each a new process")  # fmt: skip
    print()
    print("| run | wall (s) | peak RSS (MiB) | vs ruff |")
    print("| --- | ---: | ---: | ---: |")

    def row(label: str, timing: Timing, whole_tree: bool = False) -> None:
        ratio = f"{timing.seconds / ruff.seconds:.1f}x" if ruff and whole_tree else ""
        print(f"| {label} | {timing.seconds:.2f} | {timing.peak_rss_mib:.0f} | {ratio} |")

    row("syncguard cold (--no-cache)", cold, whole_tree=True)
    row("syncguard warm, nothing changed", warm, whole_tree=True)
    for label, name, timing in (
        ("comment appended", Path(typical).name, changed_typical),
        ("comment appended", Path(largest).name, changed_largest),
        ("line inserted at the top", Path(typical).name, moved_typical),
        ("line inserted at the top", Path(largest).name, moved_largest),
    ):
        row(f"syncguard warm, one file changed ({name}, {label})", timing, True)
    row(f"syncguard check one file ({Path(typical).name}, {sizes[typical] // 1000} kB)",
        one_typical)  # fmt: skip
    row(f"syncguard check one file ({Path(largest).name}, {sizes[largest] // 1000} kB)",
        one_largest)  # fmt: skip
    row("python -c pass (interpreter start-up)", startup)
    if ruff is not None:
        row("ruff check --select ALL --no-cache", ruff, whole_tree=True)
    else:
        print("\n(ruff is not installed: no ruff row)")
    whole_tree = (cold, warm, changed_typical, changed_largest, moved_typical, moved_largest)
    failures = [code for t in whole_tree for code in t.exit_codes if code not in (0, 1)]
    if failures:
        print(f"\nsyncguard exited with {sorted(set(failures))}: see the errors above")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
