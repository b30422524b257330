"""SG305: indexing a device tensor with a host index tensor."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import short
from syncguard.values import BOOL, INDEX, PAGEABLE, PINNED, PYSEQ, TENSOR, maybe_device_tensor


class HostIndexOnDevice(Rule):
    """Flags ``x[idx]`` where ``x`` is a device tensor and ``idx`` is an integer tensor known
    to be on the host (``torch.arange(n)``, ``idx_cpu.long()``, a host factory...), or a
    list literal of indices (``x[[0, 3]]``, ``x[:, [1, 2]]``), which torch turns into a host
    tensor first.

    A host *boolean* mask (``x[mask_cpu]``) does not sync and is not reported;
    neither is a device index (``x[gpu_idx]``).

    Why it syncs: advanced indexing needs the indices on the device, so the host
    index tensor is copied there with a blocking host-to-device copy, queued
    behind all earlier GPU work.

    How to fix: keep the index on the device (build it there, or copy it once
    per step from a pinned stage with ``non_blocking=True``), then index with the
    device tensor.
    """

    code = "SG305"
    name = "host-index-on-device"
    message = "indexing a device tensor with a host index tensor copies it, blocking"
    tokens = ("[",)
    sweep_ops = ("__getitem__",)
    cost = (
        "blocks until all queued GPU work drains (H200, about 20 ms queued); a list index "
        "x[[1, 2]]: 30.10 ms with 30 ms queued (operator sweep)"
    )

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Gather(nn.Module):
    def forward(self, x, keep_mask_cpu, n: int):
        idx = torch.arange(n, device=x.device)
        rows = x[idx]                                  # device index
        kept = x[keep_mask_cpu > 0]                    # host boolean mask
        first = x[0]
        return rows, kept, first
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Gather(nn.Module):
    def forward(self, x, n: int):
        idx = torch.arange(n)
        return x.cuda()[idx]
""",
            line=7,
        ),
        Invalid(
            """
import torch
from torch import nn

class Pick(nn.Module):
    def forward(self, hidden: torch.Tensor):
        return hidden[:, [0, -1]]
""",
            line=6,
        ),
    ]

    def visit_Subscript(self, node: ast.Subscript, ctx: Context) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        index = node.slice
        elements = index.elts if isinstance(index, ast.Tuple) else [index]
        for element in elements:
            if _index_list(element):
                if maybe_device_tensor(ctx.value(node.value)):
                    ctx.report(
                        node,
                        subject=node.value,
                        suggestion=(
                            f"index with a device tensor made once (`torch.tensor("
                            f"{short(ctx, element, 20)}, device=...)` outside the step) or "
                            "with slices"
                        ),
                    )
                return
            value = ctx.value(element)
            if not value.on_host or not value.tags & {TENSOR, INDEX, PINNED, PAGEABLE}:
                continue
            if value.tags & {BOOL, PYSEQ}:
                continue
            if not maybe_device_tensor(ctx.value(node.value)):
                return
            ctx.report(
                node,
                subject=node.value,
                suggestion=(
                    f"keep `{ctx.source(element)}` on the device (build it there, or copy it "
                    "once from a pinned stage with `non_blocking=True`)"
                ),
            )
            return


def _index_list(node: ast.expr) -> bool:
    """A list literal of integers or names (not booleans): advanced indexing by a list."""
    if not isinstance(node, ast.List) or not node.elts:
        return False
    for element in node.elts:
        if isinstance(element, ast.List):
            if not _index_list(element):
                return False
        elif isinstance(element, ast.Constant):
            if isinstance(element.value, bool) or not isinstance(element.value, int):
                return False
        elif not isinstance(element, (ast.Name, ast.UnaryOp, ast.Attribute)):
            return False
    return True
