"""SG205: ``repeat_interleave`` with a tensor of repeats and no ``output_size``."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import match_op
from syncguard.values import BOOL, INDEX, TENSOR, Place


class RepeatInterleaveSync(Rule):
    """Flags ``torch.repeat_interleave(repeats)``, ``torch.repeat_interleave(x, repeats)`` and
    ``x.repeat_interleave(repeats)`` when ``repeats`` is a tensor that may live on the
    accelerator and ``output_size=`` is not given.

    Repeats count as a tensor when the analysis knows one (device data, a torch
    op's result, an index tensor) or in the one-argument form, which only takes
    a tensor. Integer repeats (``x.repeat_interleave(group, dim=1)``) are
    static and not reported, nor are repeats on the host.

    Why it syncs: the output length is ``repeats.sum()``, which the host reads
    from the GPU (two syncs per call in the measurement: the sum, then the
    allocation).

    How to fix: pass the total you already know on the host:
    ``torch.repeat_interleave(x, repeats, output_size=num_tokens)``; or compute
    the mapping on the host from ``*_cpu`` data and copy it once.
    """

    code = "SG205"
    sweep_ops = ("repeat_interleave", "extra:aten.repeat_interleave.Tensor")
    name = "repeat-interleave-sync"
    message = "`repeat_interleave` with tensor repeats reads their sum on the host"
    tokens = ("repeat_interleave",)
    cost = (
        "blocks until all queued GPU work drains: 30.39 ms with 30 ms queued (H200); "
        "2 sync events per call"
    )

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Expand(nn.Module):
    def forward(self, x, query_lens, num_tokens: int, lens_cpu):
        a = torch.repeat_interleave(query_lens, output_size=num_tokens)
        b = x.repeat_interleave(4, dim=1)                  # integer repeats
        c = torch.repeat_interleave(lens_cpu)              # host tensor
        return a, b, c
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Expand(nn.Module):
    def forward(self, query_start_loc):
        query_lens = query_start_loc.diff()
        return torch.repeat_interleave(query_lens)
""",
            line=7,
        ),
        Invalid(
            """
import torch
from torch import nn

class Expand(nn.Module):
    def forward(self, x, counts):
        per_row = counts.long()
        return x.repeat_interleave(per_row, dim=0)
""",
            line=7,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        op = match_op(node, ctx, ("repeat_interleave",))
        if op is None or not op.args or "output_size" in op.keywords:
            return
        if not op.is_method and len(op.args) == 1 and "repeats" not in op.keywords:
            repeats: ast.expr | None = op.args[0]  # torch.repeat_interleave(repeats)
        else:
            repeats = op.argument(1, "repeats")
            if repeats is None or not self._is_tensor(repeats, ctx):
                return
        assert repeats is not None
        text = ctx.source(repeats)
        ctx.report(
            node,
            subject=repeats,
            suggestion=f"pass the total known on the host: `..., {text}, output_size=<n>)`",
        )

    @staticmethod
    def _is_tensor(repeats: ast.expr, ctx: Context) -> bool:
        value = ctx.value(repeats)
        return value.place is Place.DEVICE or bool(value.tags & {TENSOR, INDEX, BOOL})
