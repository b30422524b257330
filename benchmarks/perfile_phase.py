"""CPU time of the per-file phase (parse and fact pass) on a seeded sample of a tree.

Usage: ``python benchmarks/perfile_phase.py CORPUS [--files 150] [--seed 3] [--rounds 3]
[--profile N]``

Reads ``--files`` files drawn with ``--seed`` from CORPUS once, then runs
:func:`syncguard.perfile.analyze_source` on all of them ``--rounds`` times in this process
and prints the process CPU seconds (user+sys) of each round, their minimum, and the share of
parsing, with the cyclic garbage collector paused as in the engine's workers. ``--profile N``
adds a cProfile of one more round: the N functions with the most time of their own. CPU
time, not wall time: the figure holds on a shared machine.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import random
import time
from collections.abc import Sequence
from pathlib import Path

from syncguard.discovery import discover, module_name
from syncguard.parsing import parse
from syncguard.perfile import analyze_source
from syncguard.reading import Unreadable, read_source
from syncguard.rules import all_rules


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus", type=Path, help="folder of Python sources")
    parser.add_argument("--files", type=int, default=150, help="files in the sample")
    parser.add_argument("--seed", type=int, default=3, help="seed of the sample")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (minimum shown)")
    parser.add_argument("--profile", type=int, default=0, help="functions of a profile to show")
    args = parser.parse_args(argv)
    files, _ = discover([str(args.corpus)])
    sample = random.Random(args.seed).sample(sorted(files), min(args.files, len(files)))
    sources = []
    for path in sample:
        try:
            sources.append((read_source(path), *module_name(path)))
        except Unreadable:
            continue
    rules = [rule_class() for rule_class in all_rules().values()]

    def one_round() -> None:
        for source, module, is_package in sources:
            analyze_source(source, module, is_package, rules)

    def cpu_seconds(work: object) -> float:
        started = time.process_time()
        work()  # type: ignore[operator]
        return time.process_time() - started

    def parse_all() -> None:
        for source, _, _ in sources:
            parse(source)

    gc.disable()  # as in the workers: reference counting frees every tree
    rounds = [cpu_seconds(one_round) for _ in range(args.rounds)]
    parsing = min(cpu_seconds(parse_all) for _ in range(2))
    lines = sum(source.count("\n") for source, _, _ in sources)
    print(f"{len(sources)} files of {args.corpus.name} (seed {args.seed}), {lines:,} lines\n")
    print("| round | CPU s (user+sys) |")
    print("| --- | ---: |")
    for number, seconds in enumerate(rounds, 1):
        print(f"| {number} | {seconds:.2f} |")
    print(f"| minimum | {min(rounds):.2f} |")
    print(f"| of it, parsing alone | {parsing:.2f} |")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(one_round)
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(args.profile)
        print("\n" + text.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
