"""What each name a ``for`` loop or a comprehension binds takes from what it iterates."""

from __future__ import annotations

import ast


def loop_parts(target: ast.expr, iterable: ast.expr) -> list[tuple[ast.expr, ast.expr | None]]:
    """``(part of the target, the iterable it is an element of)`` pairs: ``for i, x in
    enumerate(xs)`` binds ``i`` to a host index (None) and ``x`` to an element of ``xs``;
    ``for a, b in zip(xs, ys)`` binds an element of each; other loops bind the whole target
    to an element of what they iterate."""
    call = iterable if isinstance(iterable, ast.Call) and not iterable.keywords else None
    name = call.func.id if call is not None and isinstance(call.func, ast.Name) else ""
    parts = target.elts if isinstance(target, ast.Tuple) else []
    if call is None or any(isinstance(part, ast.Starred) for part in parts):
        return [(target, iterable)]
    sources = call.args
    if name == "enumerate" and len(sources) == 1 and len(parts) == 2:
        return [(parts[0], None), (parts[1], sources[0])]
    if name == "zip" and parts and len(sources) == len(parts):
        return list(zip(parts, sources, strict=True))
    return [(target, iterable)]
