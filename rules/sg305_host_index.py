"""SG305: indexing a device tensor with a host index tensor."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.values import BOOL, INDEX, PAGEABLE, PINNED, PYSEQ, TENSOR, maybe_device_tensor


class HostIndexOnDevice(Rule):
    """Flags ``x[idx]`` where ``x`` is a device tensor and ``idx`` is an integer tensor known
    to be on the host (``torch.arange(n)``, ``idx_cpu.long()``, a host factory...).

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
    cost = "blocks until all queued GPU work drains (H200, about 20 ms queued)"

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
    ]

    def visit_Subscript(self, node: ast.Subscript, ctx: Context) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        index = node.slice
        elements = index.elts if isinstance(index, ast.Tuple) else [index]
        for element in elements:
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
