"""SG204: ``unique`` and ``unique_consecutive`` on device data."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import match_op


class UniqueSync(Rule):
    """Flags ``torch.unique``, ``torch.unique_consecutive`` and their method forms on data
    that may live on the accelerator.

    Why it syncs: the number of distinct values decides the output size; the
    host waits for the GPU to finish counting before it can allocate it
    (``aten::_unique2``), however the call is spelled.

    How to fix: avoid materialising the distinct values per step -- keep the
    set on the host where it is built (request ids, LoRA slots, expert ids you
    already know), or work at a static size: ``torch.sort`` plus a
    ``diff != 0`` mask and ``torch.nonzero_static(..., size=<bound>)``.
    """

    code = "SG204"
    sweep_ops = ("unique", "unique_consecutive", "extra:unique", "extra:unique_consecutive")
    name = "unique-sync"
    message = "data-dependent output size: the host waits for the GPU to count distinct values"
    tokens = ("unique",)
    cost = "blocks until all queued GPU work drains: 30.22 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import numpy as np
import torch
from torch import nn

class Lora(nn.Module):
    def forward(self, x, slots_cpu, ids_np):
        active = torch.unique(slots_cpu)          # host tensor: no sync
        more = np.unique(ids_np)
        order, _ = torch.sort(x)                  # static shape
        return order
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Lora(nn.Module):
    def forward(self, x, slot_ids):
        active = torch.unique(slot_ids)
        return x, active
""",
            line=6,
        ),
        Invalid(
            """
from torch import nn

class Dedup(nn.Module):
    def forward(self, tokens):
        runs, counts = tokens.argmax(-1).unique_consecutive(return_counts=True)
        return runs, counts
""",
            line=5,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        op = match_op(node, ctx, ("unique", "unique_consecutive"))
        if op is None or not op.args:
            return
        ctx.report(
            node,
            subject=op.args[0],
            message=f"`{op.name}` has a {self.message}",
            suggestion=(
                "keep the distinct values on the host where they are built, or use "
                "`torch.sort` + `nonzero_static(..., size=<bound>)`"
            ),
        )
