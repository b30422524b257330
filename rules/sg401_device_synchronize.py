"""SG401: ``torch.cuda.synchronize()`` in a hot path."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid

_SYNCHRONIZE = frozenset(
    {"torch.cuda.synchronize", "torch.accelerator.synchronize", "torch.xpu.synchronize",
     "torch.mps.synchronize"}
)  # fmt: skip


class DeviceSynchronize(Rule):
    """Flags ``torch.cuda.synchronize()`` (however imported: ``from torch.cuda import
    synchronize``, ``import torch.cuda as tc``), and ``torch.accelerator`` /
    ``torch.xpu`` / ``torch.mps`` ``synchronize()``, in a hot path.

    Why it syncs: it is the synchronization: the host waits until every stream on
    the device has drained. ``set_sync_debug_mode`` does not warn about it.

    How to fix: remove it from the step. Order GPU work with streams and events
    (``stream.wait_stream``, ``stream.wait_event``), which wait on the device; for
    timing, record CUDA events each step and read them after the run.
    """

    code = "SG401"
    sweep_ops = ("extra:synchronize",)
    name = "device-synchronize"
    message = "`synchronize()` blocks the host until all GPU work has finished"
    tokens = ("synchronize",)
    cost = "waits for all queued GPU work: 30.12 ms with 30 ms queued (H200), no sync warning"
    graph_break = False

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        torch.cuda.synchronize()              # setup, not per step

    def forward(self, x, side):
        torch.cuda.current_stream().wait_stream(side)
        return x
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def forward(self, x):
        y = x * 2
        torch.cuda.synchronize()
        return y
""",
            line=7,
        ),
        Invalid(
            """
from torch.cuda import synchronize
from torch import nn

class Runner(nn.Module):
    def forward(self, x):
        synchronize()
        return x
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        qualified = ctx.qualified_name(node.func)
        if qualified in _SYNCHRONIZE:
            ctx.report(
                node,
                subject=None,
                message=f"`{qualified}()` blocks the host until all GPU work has finished",
                suggestion=(
                    "remove it from the step: order work with `stream.wait_stream`/"
                    "`wait_event` (device-side), time with events read after the run"
                ),
            )
