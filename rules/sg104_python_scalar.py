"""SG104: converting a device tensor to a Python number or index."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import device_tensor_in, is_builtin_call, is_device_tensor, short
from syncguard.values import PYSEQ

_CONVERSIONS = ("int", "float", "bool", "complex")
_ORDERINGS = ("max", "min", "sorted")


class PythonScalarSync(Rule):
    """Flags Python conversions of a tensor that may live on the accelerator:
    ``int(t)``, ``float(t)``, ``bool(t)``, ``complex(t)``, ``operator.index(t)``,
    ``math.*(t)``, ``range(t)``, indexing or slicing with a tensor
    (``xs[t]`` on a Python list or tuple, ``xs[:t]`` on anything), ``max``/``min``/
    ``sorted`` over tensors, and ``torch.tensor([t0, t1])`` built from device scalars.

    The operand must be known to be a tensor: it is on the device, a ``torch.Tensor``
    parameter, or the result of a torch op or tensor method on data that may be on
    the device (``int(idx.max())``, ``bool(mask.any())``). An operand whose kind is
    unknown (``int(n)`` for a parameter ``n``) might be a Python number and is not
    reported; ``len(x)``, ``x.shape[0]`` and ``x.size(0)`` are host values.

    Why it syncs: ``__int__``/``__float__``/``__bool__``/``__index__`` of a tensor
    return Python values, so the host copies the value back
    (``aten::_local_scalar_dense``) after waiting for every queued kernel.

    How to fix: keep the value a tensor (tensor arithmetic, ``torch.where``,
    ``torch.maximum``, ``torch.stack``); take sizes and counts from host data
    (``seq_lens_cpu``, ``x.shape``); in a loop, accumulate on the device and read
    once after it.
    """

    code = "SG104"
    sweep_ops = ("extra:python_scalar",)
    name = "python-scalar-sync"
    message = "converting a device tensor to a Python value copies it to the host and waits"
    tokens = ("int(", "float(", "bool(", "complex(", "index(", "range(", "[", "max(", "min(",
              "sorted(", "math.", "tensor(")  # fmt: skip
    cost = "blocks until all queued GPU work drains: 30.17 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import math
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, x, seq_lens_cpu, n: int, lens: list[int], chunk):
        rows = int(x.shape[0])                  # host metadata
        total = int(seq_lens_cpu.sum())         # host tensor
        steps = range(len(lens))
        width = math.ceil(n / 64)
        count = int(chunk)                      # unknown kind: might be a Python int
        longest = max(lens)
        first = lens[n]
        top = torch.maximum(x.amax(), x.amin())   # stays on the device
        stacked = torch.stack([x.sum(), x.mean()])
        return x[:rows], total, steps, width, count, longest, first, top, stacked
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits, idx):
        best = int(idx.max())
        return logits[:, :best]
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Packer(nn.Module):
    def forward(self, x: torch.Tensor, chunks: list):
        count = x.sum()
        for i in range(count):
            pass
        head = chunks[count]
        return x[:count], head
""",
            line=7,
        ),
        Invalid(
            """
import torch
from torch import nn

class Packer(nn.Module):
    def forward(self, x: torch.Tensor):
        a, b = x.amax(), x.amin()
        widest = max([a, b])
        return torch.tensor([a, b]), widest
""",
            line=7,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        builtin = is_builtin_call(node, ctx, (*_CONVERSIONS, "range", *_ORDERINGS))
        if builtin in _CONVERSIONS or builtin == "range":
            operand = device_tensor_in(node.args, ctx)
            if operand is not None:
                self._conversion(node, operand, f"{builtin}()", ctx)
            return
        if builtin in _ORDERINGS:
            operand = device_tensor_in(node.args, ctx)
            if operand is not None:
                self._ordering(node, operand, builtin, ctx)
            return
        qualified = ctx.qualified_name(node.func) or ""
        if qualified == "operator.index" or qualified.startswith("math."):
            operand = device_tensor_in(node.args, ctx)
            if operand is not None:
                self._conversion(node, operand, f"{qualified}()", ctx)
        elif qualified in ("torch.tensor", "torch.as_tensor") and node.args:
            data = node.args[0]
            element = (
                device_tensor_in([data], ctx) if isinstance(data, (ast.List, ast.Tuple)) else None
            )
            if element is not None:
                ctx.report(
                    node,
                    subject=element,
                    message=(
                        f"`{qualified}` of a list of device scalars reads each one back to the "
                        "host and waits"
                    ),
                    suggestion=f"`torch.stack({short(ctx, data)})` keeps the values on the device",
                )

    def visit_Subscript(self, node: ast.Subscript, ctx: Context) -> None:
        index = node.slice
        for bound in _slice_bounds(index):
            if is_device_tensor(bound, ctx):
                ctx.report(
                    node,
                    subject=bound,
                    message="a device tensor as a slice bound is read back (`__index__`) and waits",
                    suggestion=(
                        f"slice with a host bound (from a `*_cpu` copy or `x.shape`), or keep a "
                        f"static size and mask instead of `:{short(ctx, bound)}`"
                    ),
                )
                return
        if isinstance(index, (ast.Slice, ast.Tuple)):
            return
        if PYSEQ in ctx.value(node.value).tags and is_device_tensor(index, ctx):
            ctx.report(
                node,
                subject=index,
                message="indexing a Python sequence with a device tensor reads it back and waits",
                suggestion=(
                    f"index with a host int, or stack the sequence into a device tensor and "
                    f"index that with `{short(ctx, index)}`"
                ),
            )

    def _conversion(self, node: ast.Call, operand: ast.expr, op: str, ctx: Context) -> None:
        if ctx.in_loop:
            suggestion = "accumulate on the device and read once after the loop"
        elif op == "range()":
            suggestion = "loop over a host bound (from a `*_cpu` copy), or vectorise on the device"
        elif op == "bool()":
            suggestion = "keep the condition a tensor (`torch.where`), or decide from host data"
        else:
            suggestion = (
                f"keep `{short(ctx, operand)}` a tensor in tensor ops, or take the number from "
                "host data (a `*_cpu` copy)"
            )
        ctx.report(
            node,
            subject=operand,
            message=f"`{op}` of a device tensor copies it to the host and waits",
            suggestion=suggestion,
        )

    def _ordering(self, node: ast.Call, operand: ast.expr, op: str, ctx: Context) -> None:
        replacement = {
            "max": "`torch.maximum(a, b)` or `torch.stack(values).max()`",
            "min": "`torch.minimum(a, b)` or `torch.stack(values).min()`",
            "sorted": "`torch.sort(torch.stack(values))`",
        }[op]
        ctx.report(
            node,
            subject=operand,
            message=f"`{op}()` compares device tensors as Python bools: each comparison waits",
            suggestion=f"{replacement} keeps the result on the device",
        )


def _slice_bounds(index: ast.expr) -> list[ast.expr]:
    """The ``lower``/``upper``/``step`` expressions of the slices in ``index``."""
    slices = index.elts if isinstance(index, ast.Tuple) else [index]
    bounds: list[ast.expr] = []
    for item in slices:
        if isinstance(item, ast.Slice):
            bounds += [b for b in (item.lower, item.upper, item.step) if b is not None]
    return bounds
