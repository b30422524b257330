"""SG207: ``histc`` with default bounds on device data."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import is_zero_or_absent, match_op


class HistcSync(Rule):
    """Flags ``torch.histc(x)`` and ``x.histc()`` on data that may live on the accelerator
    when ``min`` and ``max`` are left at their default ``0`` (or written as ``0``).

    Why it syncs: with ``min == max == 0`` the bins span the data's own minimum
    and maximum, which the host reads back from the GPU before launching the
    histogram.

    How to fix: pass the bounds you know: ``torch.histc(x, bins=n, min=lo,
    max=hi)`` -- with explicit bounds ``histc`` does not sync.
    """

    code = "SG207"
    sweep_ops = ("histc",)
    name = "histc-sync"
    message = "`histc` with default bounds reads the data's min and max on the host"
    tokens = ("histc",)
    cost = (
        "blocks until all queued GPU work drains: 30.32 ms with 30 ms queued; 0.02 ms with "
        "explicit bounds (operator sweep, H200)"
    )

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Stats(nn.Module):
    def forward(self, x):
        return torch.histc(x, bins=32, min=-1.0, max=1.0)
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Stats(nn.Module):
    def forward(self, x):
        return torch.histc(x, bins=32)
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        op = match_op(node, ctx, ("histc",))
        if op is None or not op.args:
            return
        if not (
            is_zero_or_absent(op.argument(2, "min")) and is_zero_or_absent(op.argument(3, "max"))
        ):
            return
        ctx.report(
            node,
            subject=op.args[0],
            suggestion=f"pass known bounds: `torch.histc({ctx.source(op.args[0])}, bins=<n>, "
            "min=<lo>, max=<hi>)`",
        )
