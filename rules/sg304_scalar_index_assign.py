"""SG304: ``buf[i] = python_scalar`` on a device tensor."""

from __future__ import annotations

import ast

from syncguard.facts import Fix
from syncguard.fixes import SAFE, codemod_fix
from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.values import BOOL, INDEX, PAGEABLE, PINNED, PYSEQ, TENSOR, maybe_device_tensor

_NOT_AN_INTEGER = frozenset({TENSOR, INDEX, BOOL, PYSEQ, PINNED, PAGEABLE})


class ScalarIndexAssign(Rule):
    """Flags ``buf[i] = value`` where ``buf`` is a device tensor, every index is an integer
    (a literal or a host Python number) and ``value`` is host data (a Python number).

    Slices (``buf[i:i+1] = 0``), boolean masks and device values
    (``buf[0] = gpu_0d``) are not reported: they do not sync.

    Why it syncs: with an integer index the Python value becomes a 0-d host tensor
    that is copied into the selected element with a blocking host-to-device copy;
    a slice takes the fill path instead and never waits.

    How to fix: write through a one-element slice: ``buf[i:i+1] = value``. The
    autofix does it for literal indices (``buf[0] = 0`` -> ``buf[0:1] = 0``,
    ``buf[-1] = 0`` -> ``buf[-1:] = 0``), which selects the same elements of a
    tensor of any rank.
    """

    code = "SG304"
    name = "scalar-index-assign"
    message = "assigning a Python number at an integer index copies it host-to-device, blocking"
    tokens = ("] =",)
    cost = "blocks until all queued GPU work drains (H200, about 20 ms queued)"

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = torch.zeros(16, device="cuda")

    def forward(self, x, counts):
        self.buf[:1] = 0                   # a slice: filled on the device
        self.buf[0] = x.sum()              # a device value
        counts[0] = 0                      # not known to be a tensor
        host = torch.zeros(4)
        host[0] = 1                        # a host tensor
        return self.buf
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = torch.zeros(16, device="cuda")

    def forward(self, x):
        self.buf[0] = 0
        self.buf[-1] = 1.0
        return self.buf
""",
            line=10,
            fixed="""
import torch
from torch import nn

class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = torch.zeros(16, device="cuda")

    def forward(self, x):
        self.buf[0:1] = 0
        self.buf[-1:] = 1.0
        return self.buf
""",
        ),
        Invalid(
            """
import torch
from torch import nn

class Runner(nn.Module):
    def forward(self, x, n: int):
        flags = torch.zeros(n, dtype=torch.bool, device=x.device)
        for i in range(n):
            flags[i] = True
        return flags
""",
            line=8,
        ),
    ]

    def visit_Assign(self, node: ast.Assign, ctx: Context) -> None:
        value = ctx.value(node.value)
        if not value.on_host or value.tags & (_NOT_AN_INTEGER - {BOOL}):
            return  # device data, or a host tensor / sequence (another kind of copy)
        for target in node.targets:
            if not isinstance(target, ast.Subscript):
                continue
            if not maybe_device_tensor(ctx.value(target.value)):
                continue
            index = target.slice
            elements = index.elts if isinstance(index, ast.Tuple) else [index]
            if not elements or not all(self._is_integer(e, ctx) for e in elements):
                continue
            buf, position = ctx.source(target.value), ctx.source(elements[-1])
            ctx.report(
                target,
                subject=target.value,
                suggestion=f"write through a slice: `{buf}[{position}:{position}+1] = ...`",
                fix=self._slice_fix(target, elements[-1], ctx),
            )

    @staticmethod
    def _is_integer(node: ast.expr, ctx: Context) -> bool:
        if isinstance(node, (ast.Slice, ast.Starred)):
            return False
        if isinstance(node, ast.Constant):
            return isinstance(node.value, int) and not isinstance(node.value, bool)
        value = ctx.value(node)
        return value.on_host and not value.tags & _NOT_AN_INTEGER

    @staticmethod
    def _slice_fix(target: ast.Subscript, index: ast.expr, ctx: Context) -> Fix | None:
        """``[k]`` -> ``[k:k+1]`` for a literal ``k``; ``[-1]`` -> ``[-1:]``."""
        if _literal_int(index) is None:
            return None
        return codemod_fix(
            ctx, target, "one-element-slice", SAFE, "write through a one-element slice"
        )


def _literal_int(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None
