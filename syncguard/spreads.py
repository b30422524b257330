"""Calls that spread a call's result into positional arguments.

``parts = await self.forward_step(); self.bookkeep(*parts)`` passes each part of what
``forward_step`` returned to one parameter, as ``a, b = parts; self.bookkeep(a, b)``
would: the call records what ``parts`` is (see ``CallSite.spread_parts``) and the call
graph gives each further positional parameter its part (:func:`syncguard.values.tuple_part`).
Any other spread (``f(*args)`` of a parameter, ``f(*xs, *ys)``) passes parameters that
are not shown.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping


def spread_result(node: ast.Call, assigned: Mapping[str, ast.expr]) -> ast.Name | None:
    """The local of ``node``'s one, trailing ``*local`` when ``assigned`` (each local's
    last value) says it holds what a call returned, awaited or not."""
    if not node.args:
        return None
    last = node.args[-1]
    if not isinstance(last, ast.Starred) or not isinstance(last.value, ast.Name):
        return None
    if any(isinstance(arg, ast.Starred) for arg in node.args[:-1]):
        return None
    source = assigned.get(last.value.id)
    if isinstance(source, ast.Await):
        source = source.value
    return last.value if isinstance(source, ast.Call) else None
