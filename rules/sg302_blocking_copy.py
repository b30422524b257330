"""SG302: a blocking host-to-device copy (no ``non_blocking=True``)."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import host_to_device_copy


class BlockingHostToDeviceCopy(Rule):
    """Flags ``host.to(device)``, ``host.cuda()`` and ``device_buf.copy_(host)`` without
    ``non_blocking=True``, where ``host`` is known to be a host tensor (a ``*_cpu``
    name, ``torch.from_numpy``, a host factory, a ``.pin_memory()`` result...).

    Copies from data of unknown placement are not reported (they may already be
    on the device, where ``.to(device)`` is a no-op).

    Why it syncs: a blocking copy returns only when the data has arrived, and it
    is queued behind every kernel already on the stream, so the host waits for
    the whole queue to drain -- even from pinned memory.

    How to fix: copy from a persistent pinned stage with ``non_blocking=True``
    (``dst.copy_(stage, non_blocking=True)``); stream order makes the data
    visible to every later kernel without the host waiting.
    """

    code = "SG302"
    sweep_ops = ("extra:Tensor.copy_",)
    name = "blocking-host-to-device-copy"
    message = "a blocking host-to-device copy waits for all queued GPU work"
    tokens = (".to(", ".cuda(", ".copy_(")
    cost = "blocks until all queued GPU work drains: 30.14 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage = torch.empty(1024, dtype=torch.int32, pin_memory=True)
        self.positions = torch.empty(1024, dtype=torch.int32, device="cuda")

    def forward(self, x, positions_cpu):
        n = positions_cpu.shape[0]
        self.stage[:n].copy_(positions_cpu)                        # host to host
        self.positions[:n].copy_(self.stage[:n], non_blocking=True)
        y = x.to(torch.float16)                                    # a dtype conversion
        z = x.to("cuda")                                           # x may already be there
        return y, z
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import numpy as np
import torch
from torch import nn

class Runner(nn.Module):
    def forward(self, x, lens_np):
        lens = torch.from_numpy(lens_np).to(x.device)
        return x, lens
""",
            line=7,
        ),
        Invalid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.slots = torch.zeros(64, dtype=torch.long, device="cuda")

    def forward(self, x, slots_cpu):
        self.slots.copy_(slots_cpu)
        return x[self.slots]
""",
            line=10,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        copy = host_to_device_copy(node, ctx)
        if copy is None or copy.non_blocking:
            return
        if copy.pinned:
            suggestion = "add `non_blocking=True`: the source is pinned"
        else:
            suggestion = (
                "copy from a persistent pinned stage: `dst.copy_(stage, non_blocking=True)`"
            )
        ctx.report(
            node,
            subject=copy.subject,
            message=f"`.{copy.spelling}(...)`: {self.message}",
            suggestion=suggestion,
        )
