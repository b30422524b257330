"""SG306: copying a freshly pinned tensor to the device, every step."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import host_to_device_copy


class PinMemoryPerStep(Rule):
    """Flags a host-to-device copy whose source was pinned with ``.pin_memory()`` in the same
    function -- ``x.pin_memory().to(dev, non_blocking=True)``, or ``staged =
    x.pin_memory()`` then ``buf.copy_(staged, non_blocking=True)`` -- in a hot path.

    A bare ``.pin_memory()`` is not reported (measured: it does not wait for the
    GPU), nor are ``torch.empty(..., pin_memory=True)`` (the caching host
    allocator) or pinning in ``__init__`` and other cold code. Pinning done inside a
    helper (``np_to_pinned_tensor``) or by a per-call ``torch.empty(..., pin_memory=True)``
    that is then copied is SG502's finding; the two never report the same copy.

    Why it costs: each step allocates page-locked memory and copies the data
    into it on the host before the device copy can start. It does not sync,
    but it is the slow half of "pin and copy": the measured reference fix (a
    persistent pinned stage, filled and copied once) cut the host time of a
    token-to-request mapping from 110.48 us to 21.28 us per step at decode
    batch 32.

    How to fix: allocate the pinned stage once (``__init__``:
    ``self.stage = torch.empty(max_n, dtype=..., pin_memory=True)``), fill
    ``self.stage[:n]`` each step and copy it with ``non_blocking=True``.
    """

    code = "SG306"
    name = "pin-memory-per-step"
    message = "a tensor pinned afresh every step before its copy: page-locked allocation per step"
    tokens = ("pin_memory(",)
    cost = "host time: 110.48 us per step naive vs 21.28 us with a persistent pinned stage (H200)"
    graph_break = False
    blocks_host = False

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage = torch.zeros(4096, dtype=torch.long).pin_memory()   # once, cold

    def forward(self, x, ids_cpu):
        n = ids_cpu.shape[0]
        self.stage[:n].copy_(ids_cpu)
        scratch = torch.randn(4096).pin_memory()        # no copy follows: no cost claimed
        return self.stage[:n].to(x.device, non_blocking=True)
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def forward(self, x, ids_np):
        ids = torch.from_numpy(ids_np).pin_memory()
        return ids.to(x.device, non_blocking=True)
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
        self.positions = torch.zeros(4096, dtype=torch.long, device="cuda")

    def forward(self, x, positions_cpu):
        self.positions.copy_(positions_cpu.pin_memory(), non_blocking=True)
        return x
""",
            line=10,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        copy = host_to_device_copy(node, ctx)
        if copy is None or not copy.pinned or not _freshly_pinned(copy.source, ctx):
            return
        ctx.report(
            node,
            subject=copy.subject,
            suggestion="allocate a pinned stage once in `__init__` and fill `stage[:n]` each step",
        )


def _freshly_pinned(source: ast.expr, ctx: Context) -> bool:
    """``x.pin_memory()``, or a local name last assigned one (a slice of it counts)."""
    while isinstance(source, ast.Subscript):
        source = source.value
    if isinstance(source, ast.Name):
        assigned = ctx.assigned(source.id)
        if assigned is None:
            return False
        source = assigned
    return (
        isinstance(source, ast.Call)
        and isinstance(source.func, ast.Attribute)
        and source.func.attr == "pin_memory"
        and not source.args
    )
