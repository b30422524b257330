"""SG206: ``bincount`` on device data."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import match_op


class BincountSync(Rule):
    """Flags ``torch.bincount(x)`` and ``x.bincount()`` on data that may live on the
    accelerator, with or without ``minlength``.

    Why it syncs: the output length is ``max(x.max() + 1, minlength)``; the host
    reads the maximum from the GPU, so ``minlength`` does not help (measured: it
    still blocks, with two sync events per call).

    How to fix: count into a buffer of a size known on the host:
    ``torch.zeros(n, device=x.device).scatter_add_(0, x, torch.ones_like(x))``
    (or ``index_add_``), with ``n`` the static number of bins.
    """

    code = "SG206"
    sweep_ops = ("bincount",)
    name = "bincount-sync"
    message = "`bincount` reads the input's maximum on the host to size its output"
    tokens = ("bincount",)
    cost = (
        "blocks until all queued GPU work drains: 30.37 ms with 30 ms queued (H200), "
        "30.34 ms with minlength"
    )

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Experts(nn.Module):
    def forward(self, expert_ids, num_experts: int, ids_cpu):
        counts = torch.zeros(num_experts, dtype=torch.long, device=expert_ids.device)
        counts.scatter_add_(0, expert_ids, torch.ones_like(expert_ids))
        host_counts = torch.bincount(ids_cpu)           # host data
        return counts
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Experts(nn.Module):
    def forward(self, expert_ids):
        return torch.bincount(expert_ids, minlength=64)
""",
            line=6,
        ),
        Invalid(
            """
from torch import nn

class Experts(nn.Module):
    def forward(self, logits):
        return logits.argmax(-1).bincount()
""",
            line=5,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        op = match_op(node, ctx, ("bincount",))
        if op is None or not op.args:
            return
        data = ctx.source(op.args[0])
        ctx.report(
            node,
            subject=op.args[0],
            suggestion=(
                f"count into a static buffer: `torch.zeros(<bins>, device={data}.device)"
                f".scatter_add_(0, {data}, torch.ones_like({data}))`"
            ),
        )
