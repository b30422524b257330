"""SG403: ``Event.elapsed_time()`` in a hot path."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._handles import handle_kind, unbound_kind


class EventElapsedTime(Rule):
    """Flags ``start.elapsed_time(end)`` on CUDA events (same receiver heuristic as
    SG402: known events, or names that say ``event``).

    Why it costs: ``elapsed_time`` does not wait itself -- it raises unless both
    events have already completed (it checks ``query()``) -- so per-step timing
    only works behind a host wait for the timed work (``end.synchronize()`` or
    ``torch.cuda.synchronize()``, reported by SG402 / SG401). The finding marks
    the timing code that forces that wait into the step; it is not counted as a
    sync itself.

    How to fix: record the events every step, keep them, and read the elapsed times
    after the run (or every N steps, outside the hot path).
    """

    code = "SG403"
    name = "event-elapsed-time"
    message = "`Event.elapsed_time()` needs completed events: timing each step forces a host wait"
    tokens = ("elapsed_time",)
    cost = "no wait itself; the synchronize it needs waits for the timed work"
    graph_break = False
    blocks_host = False

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Timed(nn.Module):
    def __init__(self):
        super().__init__()
        self.marks = []

    def forward(self, x):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        y = x * 2
        end.record()
        self.marks.append((start, end))    # read after the run
        return y
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Timed(nn.Module):
    def forward(self, x):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        y = x * 2
        end.record()
        end.synchronize()
        print(start.elapsed_time(end))
        return y
""",
            line=12,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "elapsed_time":
            return
        kind = unbound_kind(func, ctx, "elapsed_time")
        if kind is None and ctx.qualified_name(func) is None:
            kind = handle_kind(func.value, ctx)
        if kind != "event":
            return
        ctx.report(
            node,
            subject=None,
            suggestion="keep the events and read `elapsed_time` after the run (or every N steps)",
        )
