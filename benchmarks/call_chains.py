"""How the project phase grows with the length of call chains (issue 17, item 5).

    python benchmarks/call_chains.py [--lengths 150,300,600,1000] [--cycle 400] [--runs 1]

Generates, in a temporary folder, a module whose hot ``forward`` calls ``h0(x)``, each
``h<i>(x)`` syncs on its parameter (``x.max().item()``) under ``if flag:`` and calls
``h<i+1>(x, flag=flag)`` (a chain), and one where the last helper calls ``h0`` again
(a cycle). Each tree is linted in a new process (``python -m syncguard check --no-cache
--jobs 1 --output-format json``, interpreter start-up included) and the table says the
wall time, the peak RSS and the number of findings. A near-linear project phase keeps
the time per helper flat as the chain grows.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def chain_source(length: int, cycle: bool) -> str:
    lines = ["import torch", "from torch import nn", ""]
    for index in range(length):
        following = index + 1 if index + 1 < length else (0 if cycle else None)
        lines += [f"def h{index}(x, flag=True):", "    if flag:", "        x.max().item()"]
        if following is not None:
            lines.append(f"    return h{following}(x, flag=flag)")
        lines += ["    return x", ""]
    lines += [
        "class Model(nn.Module):",
        "    def forward(self, x):",
        "        return h0(x)",
        "",
    ]
    return "\n".join(lines)


def lint(folder: Path) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MiB of the child, findings) of one uncached lint."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "syncguard", "check", "--no-cache", "--jobs", "1",
             "--output-format", "json", "--exit-zero", "model.py"],
            cwd=folder, stdout=out, stderr=err,
        )  # fmt: skip
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise SystemExit(f"syncguard failed on {folder}: {err.read()}")
        return wall, usage.ru_maxrss / 1024, out.read().count('"code"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="150,300,600,1000")
    parser.add_argument("--cycle", type=int, default=400, help="length of the cycle tree")
    parser.add_argument("--runs", type=int, default=1, help="median of this many runs")
    options = parser.parse_args()
    cases = [(int(n), False) for n in options.lengths.split(",")]
    cases.append((options.cycle, True))
    print("| tree | helpers | wall (s) | ms per helper | peak RSS (MiB) | findings |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for length, cycle in cases:
        with tempfile.TemporaryDirectory() as folder:
            Path(folder, "model.py").write_text(chain_source(length, cycle))
            runs = sorted(lint(Path(folder)) for _ in range(options.runs))
            wall, peak, findings = runs[len(runs) // 2]
        kind = "cycle" if cycle else "chain"
        print(
            f"| {kind} | {length} | {wall:.2f} | {1000 * wall / length:.2f} | {peak:.0f} "
            f"| {findings} |"
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
