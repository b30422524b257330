"""Parsing and walking linted code without side effects on the run.

Compiling a linted file's text must not print its ``SyntaxWarning`` s (an invalid escape
sequence, ``is`` with a literal) on stderr, unlocated, in the middle of the report: they
are the linted file's business, not the run's. Analysing an expression CPython compiles
(hundreds of ``+`` terms, a chain of hundreds of method calls) must not fail for want of
recursion depth: such a file is analysed again on a thread with a deep stack.
"""

from __future__ import annotations

import ast
import sys
import threading
import warnings
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# What the analysis of the deepest expressions CPython compiles (about 3,000 nested
# operators) needs: Python frames, and a C stack for the ones that go through builtins.
_DEEP_RECURSION = 200_000
_DEEP_STACK = 512 * 1024 * 1024


def parse(source: str, mode: str = "exec") -> ast.AST:
    """``ast.parse(source)`` with the warnings of compiling it silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # invalid escapes before 3.12
        return ast.parse(source, mode=mode)


def with_deep_stack(work: Callable[[], T]) -> T:
    """``work()`` on a thread whose stack and recursion limit fit deeply nested code;
    raises what it raises (RecursionError included, past even those)."""
    results: list[T] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.append(work())
        except BaseException as error:  # handed to the calling thread
            errors.append(error)

    limit = sys.getrecursionlimit()
    size = threading.stack_size()
    try:
        threading.stack_size(_DEEP_STACK)
        sys.setrecursionlimit(max(limit, _DEEP_RECURSION))
        worker = threading.Thread(target=run, name="syncguard-deep-analysis")
        worker.start()
        worker.join()
    finally:
        sys.setrecursionlimit(limit)
        threading.stack_size(size)
    if errors:
        raise errors[0]
    return results[0]
