"""SG503: the same host-to-device copy or index build repeated in every iteration of a loop."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from syncguard.canonical import canonical_form
from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.values import Place

_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})
# Methods that change their receiver in place (Python containers, numpy, torch).
_MUTATORS = frozenset(
    {"append", "extend", "insert", "pop", "popleft", "appendleft", "update", "add", "clear",
     "remove", "discard", "setdefault", "sort", "reverse", "fill", "put", "resize", "itemset"}
)  # fmt: skip
# Attributes that stay the same when their object is rebound in the loop.
_STABLE_ATTRIBUTES = frozenset({"device", "dtype"})
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
# Call names that may copy to the device or build an index (a prefilter).
_WORK_CALLS = frozenset(
    {"to", "cuda", "copy_", "tensor", "as_tensor", "asarray", "repeat", "repeat_interleave",
     "diff", "ediff1d", "cumsum", "searchsorted", "cat", "concat", "concatenate", "stack",
     "pad", "cdiv", "ceil_div", "ceildiv", "div_up", "div_round_up", "ceil"}
)  # fmt: skip
# The same, as text: a loop whose source has none of these holds no work (a faster look).
_WORK_TEXT = re.compile(
    r"\.to\(|\.cuda\(|copy_\(|tensor\(|asarray\(|repeat|diff|cumsum|searchsorted|cat\(|"
    r"concat|stack\(|pad\(|cdiv|ceil|div_up|div_round_up|\[1:"
)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


class LoopInvariantDeviceWork(Rule):
    """Flags a host-to-device copy (``.to(device)``, ``.cuda()``, ``torch.tensor(...,
    device=)``, ``device_buffer.copy_(host)``) or an index build (see SG501) inside a
    ``for`` loop when nothing it reads changes in the loop.

    Why it is waste: a loop over layers or components that copies the same host data,
    or rebuilds the same index, does identical work once per iteration: host time to
    compute and stage it, one more copy queued per layer. Nothing here needs to wait
    for the GPU, so no sync warning points at it.

    How to fix: hoist the copy or the build above the loop and reuse the result in
    every iteration (or compute it once per step in the shared metadata).
    """

    code = "SG503"
    name = "loop-invariant-device-work"
    message = "the same host-to-device copy or index build runs in every iteration of the loop"
    tokens = (".to(", ".cuda(", "copy_(", "tensor(", "repeat", "diff", "cumsum", "searchsorted")
    cost = "one host-to-device copy (and its host staging) per iteration instead of one per step"
    graph_break = False
    blocks_host = False

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Model(nn.Module):
    def forward(self, x, positions_cpu, layer_scales_cpu):
        positions = positions_cpu.to(x.device, non_blocking=True)   # hoisted: once
        for index, layer in enumerate(self.layers):
            scale = layer_scales_cpu[index].to(x.device)            # changes per layer
            x = layer(x, positions) * scale
        return x
"""
        ),
        Valid(
            """
import torch
from torch import nn

class Model(nn.Module):
    def forward(self, x, tokens_cpu):
        ids = []
        for layer in self.layers:
            ids.append(len(ids))
            marks = torch.tensor(ids, device=x.device)              # ids grows in the loop
            x = layer(x, marks)
        return x
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Model(nn.Module):
    def forward(self, x, positions_cpu):
        for layer in self.layers:
            positions = positions_cpu.to(x.device, non_blocking=True)
            x = layer(x, positions)
        return x
""",
            line=7,
        ),
        Invalid(
            """
import numpy as np
import torch

class Runner:
    def execute_model(self, hidden, query_start_loc_cpu):  # syncguard: hot
        for layer in self.layers:
            lens = np.diff(query_start_loc_cpu)
            token_to_req = np.repeat(np.arange(len(lens)), lens)
            hidden = layer(hidden, token_to_req)
        return hidden
""",
            line=8,
        ),
    ]

    def visit_For(self, node: ast.For, ctx: Context) -> None:
        if not _WORK_TEXT.search(ctx.text(node)) or not _may_hold_work(node):
            return
        changing, bound = _changing_names(node)
        names = _LoopNames(ctx, bound)
        stored = set(bound) | changing
        iterable = ctx.source(node.iter)
        for candidate, found in _work(_invariant_roots(node.body, changing), ctx, names, stored):
            ctx.report(
                candidate,
                subject=None,
                message=(
                    f"{found} inside the loop over `{iterable}` is the same in every iteration: "
                    "nothing it reads changes in the loop"
                ),
                suggestion=f"hoist it above the loop at line {node.lineno} and reuse the result",
            )


class _LoopNames:
    """Name resolution inside the loop body: its invariant assignments, then the function's."""

    def __init__(self, ctx: Context, bound: dict[str, ast.expr]) -> None:
        self.ctx = ctx
        self.bound = bound

    def qualified_name(self, node: ast.expr) -> str | None:
        return self.ctx.qualified_name(node)

    def assigned(self, name: str) -> ast.expr | None:
        return self.bound.get(name) or self.ctx.assigned(name)


def _kind_of_work(node: ast.expr, ctx: Context, names: _LoopNames, placed: bool) -> str | None:
    """What repeated work ``node`` is: a host-to-device copy, an index build, or None."""
    if isinstance(node, ast.Call) and placed:
        func = node.func
        if isinstance(func, ast.Attribute):
            if (
                func.attr in ("to", "cuda")
                and ctx.value(func.value).on_host
                and (func.attr == "cuda" or ctx.value(node).place is Place.DEVICE)
            ):
                return f"the host-to-device copy `{_short(ctx.source(node))}`"
            if (
                func.attr == "copy_"
                and node.args
                and ctx.value(func.value).may_be_device
                and ctx.value(node.args[0]).on_host
            ):
                return f"the host-to-device copy `{_short(ctx.source(node))}`"
        if (
            ctx.qualified_name(func) in _FACTORIES
            and any(keyword.arg == "device" for keyword in node.keywords)
            and not ctx.value(node).on_host
        ):
            return f"the host-to-device copy `{_short(ctx.source(node))}`"
    form = canonical_form(node, names)
    if form is not None:
        return f"building {form.describe()}"
    return None


def _may_hold_work(loop: ast.For) -> bool:
    """A cheap first look at the body (nested loops look at their own): a call that
    copies or builds an index, or a ``[1:]`` slice."""
    stack: list[ast.AST] = list(loop.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (*_SCOPES, *_COMPREHENSIONS, *_LOOPS)):
            continue
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _WORK_CALLS:
                return True
        elif (
            isinstance(node, ast.Slice)
            and isinstance(node.lower, ast.Constant)
            and node.lower.value == 1
        ):
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _invariant_roots(body: list[ast.stmt], changing: set[str]) -> list[ast.expr]:
    """Outermost expressions of the loop body (not of nested loops or scopes) that read
    nothing changing in the loop."""
    roots: list[ast.expr] = []

    def reads_changing(node: ast.AST) -> bool:
        if isinstance(node, (*_SCOPES, *_COMPREHENSIONS, *_LOOPS, ast.NamedExpr, ast.Await)):
            return True  # nested loops are checked on their own; scopes have their own names
        if isinstance(node, ast.Attribute) and node.attr in _STABLE_ATTRIBUTES:
            return False  # x.device does not change when x is rebound to the next output
        if isinstance(node, ast.Name):
            return node.id in changing
        first_root = len(roots)
        reads = False
        for child in ast.iter_child_nodes(node):
            reads = reads_changing(child) or reads
        if isinstance(node, ast.Attribute) and _dotted(node) in changing:
            reads = True
        if isinstance(node, ast.expr) and not reads:
            del roots[first_root:]
            roots.append(node)
        return reads

    for statement in body:
        reads_changing(statement)
    return roots


def _work(
    roots: list[ast.expr], ctx: Context, names: _LoopNames, stored: set[str]
) -> Iterator[tuple[ast.expr, str]]:
    """The outermost copies and index builds inside the invariant ``roots``."""
    stack: list[ast.AST] = list(reversed(roots))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Call, ast.BinOp, ast.Subscript, ast.UnaryOp)):
            # Placement is known only for data bound before the loop (the analysis has not
            # walked the body yet); index builds need no placement.
            found = _kind_of_work(node, ctx, names, placed=not _reads_any(node, stored))
            if found is not None:
                yield node, found
                continue
        stack.extend(reversed([c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]))


def _reads_any(node: ast.expr, names: set[str]) -> bool:
    stack: list[ast.AST] = [node]
    while stack:
        child = stack.pop()
        if isinstance(child, ast.Attribute) and child.attr in _STABLE_ATTRIBUTES:
            continue  # x.device does not change when x is rebound to the next layer's output
        stack.extend(ast.iter_child_nodes(child))
        if isinstance(child, ast.Name) and child.id in names:
            return True
        if isinstance(child, ast.Attribute) and _dotted(child) in names:
            return True
        if isinstance(child, (*_COMPREHENSIONS, ast.Lambda, ast.NamedExpr, ast.Await)):
            return True  # own scopes, side effects: not worth proving invariant
    return False


def _changing_names(loop: ast.For) -> tuple[set[str], dict[str, ast.expr]]:
    """Names (and ``self.x`` attributes) that may differ between iterations of the loop,
    and the names bound in the body that do not (with their values).

    A name bound once, by a plain assignment in the loop body, to a value that reads
    nothing changing is itself the same in every iteration.
    """
    changing: set[str] = set()
    stores: dict[str, int] = {}
    for node in ast.walk(loop):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            changing.add(node.id)
            stores[node.id] = stores.get(node.id, 0) + 1
        elif isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(
            node.ctx, (ast.Store, ast.Del)
        ):
            changing.add(_root(node))
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and (
                func.attr in _MUTATORS or func.attr.endswith("_")
            ):
                changing.add(_root(func.value))
            for keyword in node.keywords:
                if keyword.arg == "out":
                    changing.add(_root(keyword.value))
    changing.discard("")
    invariant = {
        statement.targets[0].id: statement.value
        for statement in loop.body
        if isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and stores.get(statement.targets[0].id) == 1
    }
    settled = False
    while not settled:
        settled = True
        for name, value in invariant.items():
            if name in changing and not _reads_any(value, changing):
                changing.discard(name)
                settled = False
    return changing, {name: value for name, value in invariant.items() if name not in changing}


def _root(node: ast.expr) -> str:
    """The name a stored-to expression changes: ``x`` for ``x[i]``, ``self.x`` for
    ``self.x[i]`` and ``self.x.y``."""
    while isinstance(node, ast.Subscript) or (
        isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
    ):
        node = node.value
    if isinstance(node, ast.Attribute):
        return _dotted(node)
    return node.id if isinstance(node, ast.Name) else ""


def _dotted(node: ast.Attribute) -> str:
    return f"{node.value.id}.{node.attr}" if isinstance(node.value, ast.Name) else ""


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
