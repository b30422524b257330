"""SG203: ``masked_select`` on device data."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import match_op


class MaskedSelectSync(Rule):
    """Flags ``torch.masked_select(x, mask)`` and ``x.masked_select(mask)`` on data that may
    live on the accelerator.

    Why it syncs: the output holds one element per true mask element; the host
    must wait for the GPU to count them before it can allocate the result.

    How to fix: keep the shape: ``torch.where(mask, x, 0)`` or
    ``x.masked_fill(~mask, 0)``; to compact, gather with
    ``torch.nonzero_static(mask.flatten(), size=<bound>)``.
    """

    code = "SG203"
    sweep_ops = ("masked_select", "extra:aten.masked_select")
    name = "masked-select-sync"
    message = "`masked_select` has a data-dependent size: the host waits for the GPU to count it"
    tokens = ("masked_select",)
    cost = "blocks until all queued GPU work drains: 30.31 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Gate(nn.Module):
    def forward(self, x, mask, lens_cpu):
        y = torch.where(mask, x, 0.0)
        z = x.masked_fill(~mask, 0.0)
        host = torch.masked_select(lens_cpu, lens_cpu > 0)   # host data: no sync
        return y + z
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Gate(nn.Module):
    def forward(self, x):
        return torch.masked_select(x, x > 0)
""",
            line=6,
        ),
        Invalid(
            """
from torch import nn

class Gate(nn.Module):
    def forward(self, x, keep):
        return x.masked_select(keep)
""",
            line=5,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        op = match_op(node, ctx, ("masked_select",))
        if op is None or not op.args:
            return
        data = op.args[0]
        mask = op.argument(1, "mask")
        mask_text = ctx.source(mask) if mask is not None else "mask"
        ctx.report(
            node,
            subject=data,
            suggestion=f"keep the shape: `torch.where({mask_text}, {ctx.source(data)}, 0)`",
        )
