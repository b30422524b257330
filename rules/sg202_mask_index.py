"""SG202: indexing a tensor with a boolean mask on the device."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.values import BOOL


class MaskIndexSync(Rule):
    """Flags ``x[mask]`` (and ``x[:, mask]``, ``x[mask] += 1``) when ``mask`` is a boolean
    tensor that may live on the accelerator.

    A mask is known boolean when it comes from a comparison, ``~``/``&``/``|`` of
    masks, ``logical_*``, ``isnan``/``isinf``/``isfinite``, ``.bool()``,
    ``dtype=torch.bool``, or when its name says so (``mask``, ``keep_mask``).
    Assigning through a mask (``x[mask] = 0.0``) is not reported: it keeps the
    shape and does not sync. A host mask (``x[mask_cpu]``) does not sync either.

    Why it syncs: the result has one row per true element, a count only the GPU
    knows; the host waits for every queued kernel before it can allocate it
    (``aten::nonzero`` under the hood).

    How to fix: keep shapes static -- ``torch.where(mask, x, 0)``,
    ``x.masked_fill(~mask, 0)`` or ``x[mask] = value``; when rows really must be
    gathered, ``torch.nonzero_static(mask, size=<bound>, fill_value=-1)`` and
    ``index_select`` with a bound known on the host.
    """

    code = "SG202"
    name = "mask-index-sync"
    message = (
        "boolean-mask indexing: the result's size is the mask's count, which the host waits for"
    )
    tokens = ("[",)
    cost = "blocks until all queued GPU work drains: 30.4 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Filter(nn.Module):
    def forward(self, x, idx, mask_cpu):
        mask = x > 0
        x[mask] = 0.0                        # assignment through a mask keeps the shape
        y = x.masked_fill(~mask, 0.0)
        z = torch.where(mask, x, 0.0)
        picked = x[idx.long()]               # an index tensor, not a mask
        kept = x[mask_cpu]                   # a host mask does not sync
        return y + z + picked + kept
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Filter(nn.Module):
    def forward(self, x):
        valid = ~torch.isnan(x) & (x > 0)
        return x[valid]
""",
            line=7,
        ),
        Invalid(
            """
from torch import nn

class Router(nn.Module):
    def forward(self, hidden, token_mask):
        hidden[:, token_mask] += 1
        return hidden
""",
            line=5,
        ),
    ]

    def visit_Subscript(self, node: ast.Subscript, ctx: Context) -> None:
        if isinstance(node.ctx, ast.Load):
            self._check(node, ctx)

    def visit_AugAssign(self, node: ast.AugAssign, ctx: Context) -> None:
        if isinstance(node.target, ast.Subscript):
            self._check(node.target, ctx)  # x[mask] += 1 reads x[mask] first

    def _check(self, node: ast.Subscript, ctx: Context) -> None:
        index = node.slice
        elements = index.elts if isinstance(index, ast.Tuple) else [index]
        for element in elements:
            if BOOL not in ctx.value(element).tags:
                continue
            mask, data = ctx.source(element), ctx.source(node.value)
            ctx.report(
                node,
                subject=element,
                suggestion=(
                    f"keep the shape static: `torch.where({mask}, {data}, 0)`; to gather rows, "
                    f"`torch.nonzero_static({mask}, size=<bound>)`"
                ),
            )
            return
