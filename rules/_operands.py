"""Finding the device tensor among an op's operands (shared by the SG1xx read rules)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from syncguard.rule import Context
from syncguard.values import maybe_device_tensor


def is_device_tensor(node: ast.expr, ctx: Context) -> bool:
    """True when ``node`` is known to be a tensor that may live on the accelerator."""
    return maybe_device_tensor(ctx.value(node))


def device_tensor_in(nodes: Iterable[ast.expr | None], ctx: Context) -> ast.expr | None:
    """The first of ``nodes`` -- or of the elements of a list / tuple / set literal among
    them -- that is a tensor which may live on the accelerator."""
    for node in nodes:
        if node is None:
            continue
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            found = device_tensor_in(node.elts, ctx)
            if found is not None:
                return found
        elif isinstance(node, ast.Starred):
            continue
        elif is_device_tensor(node, ctx):
            return node
    return None


def is_builtin_call(node: ast.Call, ctx: Context, names: Iterable[str]) -> str | None:
    """The builtin ``node`` calls (``int``, ``print``...), when it is one of ``names``."""
    func = node.func
    if (
        isinstance(func, ast.Name)
        and func.id in names
        and ctx.qualified_name(func) is None  # not shadowed by an import
    ):
        return func.id
    return None


def short(ctx: Context, node: ast.AST, limit: int = 40) -> str:
    """The source of ``node`` for a one-line suggestion, elided when long."""
    text = ctx.source(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."
