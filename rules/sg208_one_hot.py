"""SG208: ``one_hot`` without ``num_classes`` on device data."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import literal, match_op


class OneHotSync(Rule):
    """Flags ``F.one_hot(idx)`` (``torch.nn.functional.one_hot``) on data that may live on
    the accelerator when ``num_classes`` is missing or ``-1``.

    Why it syncs: without ``num_classes`` the width of the result is
    ``idx.max() + 1``, which the host reads back from the GPU.

    How to fix: pass the number of classes you know on the host:
    ``F.one_hot(idx, num_classes=vocab_size)``.
    """

    code = "SG208"
    sweep_ops = ("nn.functional.one_hot",)
    name = "one-hot-sync"
    message = "`one_hot` without `num_classes` reads the largest index on the host"
    tokens = ("one_hot",)
    cost = (
        "blocks until all queued GPU work drains: 30.22 ms with 30 ms queued; 0.03 ms with "
        "num_classes (operator sweep, H200)"
    )

    VALID = [
        Valid(
            """
import torch.nn.functional as F
from torch import nn

class Embed(nn.Module):
    def forward(self, idx, num_experts: int):
        a = F.one_hot(idx, num_experts)
        b = F.one_hot(idx, num_classes=num_experts)
        return a, b
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch.nn.functional as F
from torch import nn

class Embed(nn.Module):
    def forward(self, logits):
        return F.one_hot(logits.argmax(-1))
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        op = match_op(node, ctx, ("one_hot",), modules=("torch.nn.functional",))
        if op is None or op.is_method or not op.args:
            return
        classes = op.argument(1, "num_classes")
        if classes is not None and literal(classes) != -1:
            return
        ctx.report(
            node,
            subject=op.args[0],
            suggestion=f"`F.one_hot({ctx.source(op.args[0])}, num_classes=<n>)`",
        )
