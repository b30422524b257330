"""SG402: ``Stream.synchronize()`` / ``Event.synchronize()`` in a hot path."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._handles import handle_kind, unbound_kind


class StreamSynchronize(Rule):
    """Flags ``stream.synchronize()`` (including
    ``torch.cuda.current_stream().synchronize()``) and ``event.synchronize()``.

    Heuristic: the receiver must be known to be a stream or event (created by
    ``torch.cuda.Stream``/``current_stream``/``default_stream``/``Event``, also via
    ``self`` attributes set in ``__init__``), or be named like one (``copy_stream``,
    ``done_event``) without being a known host object. ``synchronize()`` on anything
    else (a ``threading`` object, a communicator) is not reported.

    Why it syncs: the host blocks until the stream has drained (or the event's work
    has completed) -- even an idle stream's synchronize is a host round trip, and
    ``set_sync_debug_mode`` does not warn about either.

    How to fix: let the consumer wait on the device instead:
    ``torch.cuda.current_stream().wait_stream(s)`` or ``wait_event(e)``; when the host
    truly needs the data (a non-blocking copy to pinned memory), synchronize on the
    event once, as late as possible, outside the per-step loop.
    """

    code = "SG402"
    name = "stream-synchronize"
    message = "`synchronize()` on a stream or event blocks the host until its work finishes"
    tokens = ("synchronize",)
    cost = "waits for the stream's queued work: 30.13 ms with 30 ms queued (H200)"
    graph_break = False

    VALID = [
        Valid(
            """
import threading
import torch
from torch import nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.copy_stream = torch.cuda.Stream()
        self.ready = threading.Event()

    def forward(self, x, comm):
        torch.cuda.current_stream().wait_stream(self.copy_stream)
        comm.synchronize()                     # not known to be a stream or event
        self.ready.wait()
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
        torch.cuda.current_stream().synchronize()
        return x
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
        self.copy_stream = torch.cuda.Stream()

    def forward(self, x, done_event):
        self.copy_stream.synchronize()
        done_event.synchronize()
        return x
""",
            line=10,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr != "synchronize":
            return
        kind = unbound_kind(func, ctx, "synchronize")
        if kind is None:
            if ctx.qualified_name(func) is not None:
                return  # a module function: torch.cuda.synchronize is SG401
            kind = handle_kind(func.value, ctx)
        if kind is None:
            return
        wait = "wait_stream(<stream>)" if kind == "stream" else "wait_event(<event>)"
        ctx.report(
            node,
            subject=None,
            message=f"`{kind}.synchronize()` blocks the host until the {kind}'s work finishes",
            suggestion=(
                f"make the consuming stream wait on the device (`current_stream().{wait}`); "
                "synchronize once, outside the step, only if the host needs the data"
            ),
        )
