"""Calls resolved by method name only: how many, and a seeded sample to judge by reading.

A method called on an object whose class the tree does not tell (an untyped parameter,
``model.prepare_step_inputs(...)``) is resolved by its name when at most
``syncguard.bindings.BY_NAME_LIMIT`` class hierarchies define it. This script builds the
project twice, with and without that fallback, and lists the call edges only the fallback
gives: per corpus, how many calls and edges, and ``--count`` of them drawn with ``--seed``
as a TSV (caller, call line, method, callee, an empty ``verdict`` and ``reason``) for a
person to mark ``right`` (the receiver can be an instance of the callee's class there) or
``wrong``::

    python benchmarks/name_calls.py CORPUS --seed 1 --count 40 > sheet.tsv

Nothing is cached: the second build must not reuse the first one's resolved calls.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterator

from syncguard.bindings import FunctionId
from syncguard.callgraph import CallGraph
from syncguard.engine import build_project

Edge = tuple[FunctionId, int, FunctionId]  # caller, call index, callee


def edges(graph: CallGraph) -> set[Edge]:
    return {
        (caller, index, callee)
        for (caller, index), callees in graph.targets.items()
        for callee in callees
    }


def by_name_edges(paths: list[str]) -> tuple[CallGraph, set[Edge]]:
    """The project's call graph, and the edges that only the by-name fallback gives."""
    project, _ = build_project(paths)
    named = CallGraph._named
    CallGraph._named = lambda self, method: ()  # type: ignore[method-assign]
    try:
        without, _ = build_project(paths)
    finally:
        CallGraph._named = named  # type: ignore[method-assign]
    return project.graph, edges(project.graph) - edges(without.graph)


def rows(graph: CallGraph, found: set[Edge]) -> Iterator[list[str]]:
    functions = graph.functions
    for caller, index, callee in sorted(found):
        call = functions[caller].calls[index]
        method = callee[1].rpartition(".")[2]
        yield [
            f"{caller[0]}:{call.span.line}",
            graph.bindings.qualified(caller),
            method,
            f"{callee[0]}:{functions[callee].line}",
            graph.bindings.qualified(callee),
            "",
            "",
        ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--count", type=int, default=40)
    args = parser.parse_args(argv)
    graph, found = by_name_edges(args.paths)
    calls = {(caller, index) for caller, index, _ in found}
    total = sum(len(callees) for callees in graph.targets.values())
    print(
        f"# {len(calls)} calls resolved by name only, {len(found)} of {total} call edges",
        file=sys.stderr,
    )
    every = list(rows(graph, found))
    picked = random.Random(args.seed).sample(every, min(args.count, len(every)))
    print("call\tcaller\tmethod\tcallee_at\tcallee\tverdict\treason")
    for row in picked:
        print("\t".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
