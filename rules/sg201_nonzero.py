"""SG201: the nonzero family, whose output shape depends on the data."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import torch_op

_FUNCTIONS = {"torch.nonzero": "nonzero", "torch.argwhere": "argwhere", "torch.where": "where"}


class NonzeroSync(Rule):
    """Flags ``x.nonzero()``, ``torch.nonzero``, ``torch.argwhere`` and one-argument
    ``torch.where(cond)`` on device data (also spelled ``torch.ops.aten.nonzero``).

    Why it syncs: the number of output rows is the number of true elements,
    which only the GPU knows; the host must wait for the count before it can
    allocate the result, so every queued kernel drains first.

    How to fix: bound the output statically with
    ``torch.nonzero_static(mask, size=<bound>, fill_value=-1)``, or avoid
    materialising indices: three-argument ``torch.where(cond, x, y)``,
    ``masked_fill``, or boolean ``__setitem__`` (``x[mask] = 0.0``).
    """

    code = "SG201"
    name = "nonzero-sync"
    message = "data-dependent output shape: the host waits for the GPU to count the result"
    tokens = ("nonzero", "argwhere", "where(")
    sweep_ops = ("nonzero", "argwhere", "extra:aten.nonzero")
    cost = "blocks until all queued GPU work drains: 30.23 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Router(nn.Module):
    def forward(self, x, mask):
        idx = torch.nonzero_static(mask, size=16, fill_value=-1)
        y = torch.where(mask, x, 0.0)
        kept_cpu = torch.nonzero(mask.cpu())    # already on the host: the .cpu() is the sync
        return idx, y
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Router(nn.Module):
    def forward(self, x):
        rows = (x > 0).nonzero()
        return rows
""",
            line=6,
        ),
        Invalid(
            """
import torch as th
from torch import nn

class Router(nn.Module):
    def forward(self, x):
        (rows,) = th.where(x > 0)
        return rows
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "nonzero":
            qualified = ctx.qualified_name(func)
            if qualified is None:  # a method: x.nonzero()
                self._report(node, func.value, "nonzero", ctx)
                return
        op = _FUNCTIONS.get(torch_op(func, ctx) or "")
        if op is None or not node.args:
            return
        if op == "where" and (len(node.args) > 1 or node.keywords):
            return  # three-argument where is sync-free
        self._report(node, node.args[0], op, ctx)

    def _report(self, node: ast.Call, subject: ast.expr, op: str, ctx: Context) -> None:
        if op == "where":
            suggestion = "use three-argument `torch.where(cond, x, y)` or `nonzero_static`"
        else:
            suggestion = f"`torch.nonzero_static({ctx.source(subject)}, size=<bound>)`"
        ctx.report(
            node, subject=subject, suggestion=suggestion, message=f"`{op}` has a {self.message}"
        )
