"""SG209: ops that count their result on the host inside (a nonzero or masked select)."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import match_op, short

_FIXES = {
    "combinations": (
        "selects its index pairs with a masked select, whose size the host counts",
        "build the index pairs once (`torch.combinations(torch.arange(n))` at setup, kept on "
        "the device) and gather with them",
    ),
    "to_sparse": (
        "counts the non-zero elements on the host to size the sparse tensor",
        "keep the tensor dense on the device, or convert once outside the step",
    ),
}


class HiddenCountSync(Rule):
    """Flags ``torch.combinations(x, ...)`` and ``x.to_sparse()`` on data that may live on the
    accelerator.

    Why it syncs: the size of the result is computed from the data inside the op:
    ``combinations`` builds its index pairs with a boolean mask and a masked select, and
    ``to_sparse`` counts the non-zero elements to size the sparse tensor. The host waits
    for that count, and so for every queued kernel, before it can allocate the output
    (a data-dependent shape hidden in the op).

    How to fix: for ``combinations`` of a fixed size, build the index pairs once (they
    depend only on ``n`` and ``r``) and gather with them each step; keep tensors dense in
    the per-step path, converting to sparse once outside it.
    """

    code = "SG209"
    sweep_ops = ("combinations", "to_sparse")
    name = "hidden-count-sync"
    message = "the op counts its result on the host inside: the host waits for the GPU"
    tokens = ("combinations", "to_sparse")
    cost = (
        "blocks until all queued GPU work drains: 30.15 ms (`combinations`), 30.34 ms "
        "(`to_sparse`) with 30 ms queued (operator sweep, H200)"
    )

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Pairs(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.register_buffer("pairs", torch.combinations(torch.arange(n), r=2))

    def forward(self, x):
        return x[:, self.pairs[:, 0]] * x[:, self.pairs[:, 1]]
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Pairs(nn.Module):
    def forward(self, x, experts):
        pairs = torch.combinations(experts, r=2)
        return x[pairs]
""",
            line=6,
        ),
        Invalid(
            """
from torch import nn

class Sparse(nn.Module):
    def forward(self, scores):
        return (scores * (scores > 0.5)).to_sparse()
""",
            line=5,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        op = match_op(node, ctx, tuple(_FIXES))
        if op is None or not op.args or (op.name == "to_sparse") != op.is_method:
            return
        why, fix = _FIXES[op.name]
        ctx.report(
            node,
            subject=op.args[0],
            message=f"`{op.name}` {why}: the host waits for the GPU",
            suggestion=fix if op.name != "to_sparse" else f"{fix} (`{short(ctx, op.args[0])}`)",
        )
