"""SG303: a ``non_blocking=True`` host-to-device copy from pageable memory."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import host_to_device_copy
from syncguard.values import PAGEABLE


class PageableNonBlockingCopy(Rule):
    """Flags ``host.to(device, non_blocking=True)``, ``host.cuda(non_blocking=True)`` and
    ``device_buf.copy_(host, non_blocking=True)`` when ``host`` is a host tensor not known
    to be pinned.

    Pageable means made here in ordinary memory: ``torch.from_numpy``,
    ``torch.tensor(list)``, a host factory without ``pin_memory``, a torch op on
    host data (``torch.cat``), a slice or view of one, or a ``self`` attribute
    made so in ``__init__``. Pinned means ``.pin_memory()``, ``pin_memory=``
    anything but False (a flag such as ``PIN_MEMORY`` counts, also on helpers
    like ``make_tensor_with_pad``), or a name that says ``pinned``. A host
    tensor made elsewhere (another object's ``*_cpu`` buffer, a helper's
    result) is not reported: whether it is pinned is decided where it is made.

    Why it syncs: the driver can only copy asynchronously from page-locked
    memory; from pageable memory it stages the data and returns after the copy,
    which is queued behind all earlier GPU work, so ``non_blocking=True`` still
    blocks. ``torch.cuda.set_sync_debug_mode`` does not report it.

    How to fix: allocate a pinned stage once (``torch.empty(n, pin_memory=True)``
    in ``__init__``), fill it on the host, then ``dst.copy_(stage[:n],
    non_blocking=True)``.
    """

    code = "SG303"
    name = "pageable-non-blocking-copy"
    message = "`non_blocking=True` from pageable host memory still blocks (and no warning says so)"
    tokens = ("non_blocking",)
    cost = (
        "blocks until all queued GPU work drains: 30.46 ms with 30 ms queued (H200); "
        "0 set_sync_debug_mode warnings"
    )

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.ids_cpu = torch.zeros(4096, dtype=torch.long, pin_memory=True)
        self.ids = torch.zeros(4096, dtype=torch.long, device="cuda")

    def forward(self, x, n: int, staging_pinned):
        self.ids[:n].copy_(self.ids_cpu[:n], non_blocking=True)
        more = staging_pinned.to(x.device, non_blocking=True)
        once = torch.randn(8).pin_memory().to("cuda", non_blocking=True)
        return self.ids[:n], more, once
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def forward(self, x, lens_np):
        lens = torch.from_numpy(lens_np).to(x.device, non_blocking=True)
        return x, lens
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.ids = torch.zeros(4096, dtype=torch.long, device="cuda")

    def forward(self, x, token_ids):
        host = torch.tensor(token_ids)
        self.ids[: len(token_ids)].copy_(host, non_blocking=True)
        return x
""",
            line=11,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        copy = host_to_device_copy(node, ctx)
        if copy is None or not copy.non_blocking or copy.pinned:
            return
        if PAGEABLE not in ctx.value(copy.source).tags:
            return  # made elsewhere (another object, a helper): its memory is not known
        ctx.report(
            node,
            subject=copy.subject,
            message=f"`{ctx.source(copy.source)}` is pageable: {self.message}",
            suggestion=(
                "fill a pinned stage allocated once (`torch.empty(n, pin_memory=True)`) "
                "and copy that"
            ),
        )
