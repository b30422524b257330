"""SG113: a device tensor as the value of a masked fill or boolean-mask assignment."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import is_device_tensor, match_op, short
from syncguard.values import BOOL

# op -> position of ``value`` (the tensor counted as argument 0)
_FILLS = {"masked_fill": 2, "masked_fill_": 2, "index_fill": 3, "index_fill_": 3}


class MaskedTensorValueSync(Rule):
    """Flags ``x[mask] = value`` with a boolean ``mask``, ``x.masked_fill(mask,
    value)`` / ``masked_fill_`` and ``x.index_fill(dim, index, value)`` / ``index_fill_``
    (also as ``torch.masked_fill`` / ``torch.index_fill``) when ``value`` is known to be a
    tensor that may live on the accelerator (a 0-d device tensor such as ``x.max()``).

    The same ops with a Python number (``x[mask] = 0.0``, ``masked_fill(mask,
    float("-inf"))``) do not sync and are not reported; nor is ``buf[0] = t0`` with an
    integer index, nor ``fill_(t0)``.

    Why it syncs: ``masked_fill`` and ``index_fill`` read a tensor ``value`` back as a
    Python scalar (``.item()``); a boolean-mask assignment of a tensor goes through ``index_put_``,
    which turns the mask into indices whose count only the GPU knows. Either way
    the host waits for the queue.

    How to fix: ``torch.where(mask, value, x)`` (out of place) or
    ``x.copy_(torch.where(mask, value, x))`` keeps everything on the device; or use
    a Python number from host data.
    """

    code = "SG113"
    name = "masked-tensor-value-sync"
    message = "a device tensor as a masked-fill value is read back to the host and waits"
    tokens = ("masked_fill", "index_fill", "] =")
    sweep_ops = ("masked_fill", "index_fill")
    cost = (
        "blocks until all queued GPU work drains: 21.7 ms with 22 ms queued (H200); "
        "masked_fill / index_fill with a 0-d device value: 29.95 / 29.96 ms with 30 ms queued "
        "(operator sweep)"
    )
    graph_break = False  # traced as ops under torch.compile: a sync, not a break

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Masker(nn.Module):
    def forward(self, x, lens, buf):
        mask = x > 0
        x[mask] = 0.0
        y = x.masked_fill(mask, float("-inf"))
        buf[0] = x.max()                        # integer index: no sync
        buf.fill_(x.min())
        z = torch.where(mask, x.max(), x)
        return y, z
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Masker(nn.Module):
    def forward(self, x):
        mask = x < 0
        return x.masked_fill(mask, x.max())
""",
            line=7,
        ),
        Invalid(
            """
import torch
from torch import nn

class Masker(nn.Module):
    def forward(self, x, pad_mask):
        x[pad_mask] = x.mean()
        return x
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Padder(nn.Module):
    def forward(self, x, pad_rows):
        return x.index_fill(0, pad_rows, x.min())
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        op = match_op(node, ctx, _FILLS)
        if op is None:
            return
        position = _FILLS[op.name]
        value = op.argument(position, "value")
        mask = op.argument(1, "mask" if position == 2 else "dim")
        if value is None or mask is None or not is_device_tensor(value, ctx):
            return
        name = op.name.rstrip("_")
        if name == "masked_fill":
            fix = (
                f"`torch.where({short(ctx, mask, 24)}, {short(ctx, value, 24)}, "
                f"{short(ctx, op.args[0], 24)})` keeps the value on the device"
            )
        else:
            fix = "`x.index_copy(dim, index, value.expand(...))` or a Python number from host data"
        ctx.report(
            node,
            subject=value,
            message=f"`{name}` reads a tensor value back with `.item()`: the host waits",
            suggestion=fix,
        )

    def visit_Assign(self, node: ast.Assign, ctx: Context) -> None:
        for target in node.targets:
            if not isinstance(target, ast.Subscript):
                continue
            index = target.slice
            elements = index.elts if isinstance(index, ast.Tuple) else [index]
            mask = next((e for e in elements if BOOL in ctx.value(e).tags), None)
            if mask is None or ctx.value(mask).on_host or not is_device_tensor(node.value, ctx):
                continue  # a host mask is turned into indices on the host
            data = short(ctx, target.value, 24)
            ctx.report(
                target,
                subject=node.value,
                message=(
                    "assigning a device tensor through a boolean mask counts the mask on the "
                    "host (`index_put_`): it waits for the GPU"
                ),
                suggestion=(
                    f"`{data}.copy_(torch.where({short(ctx, mask, 24)}, "
                    f"{short(ctx, node.value, 24)}, {data}))` keeps it on the device"
                ),
            )
