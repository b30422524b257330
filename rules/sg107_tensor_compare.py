"""SG107: whole-tensor comparisons that return a Python bool."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import short

_FUNCTIONS = {
    "torch.equal": "equal",
    "torch.allclose": "allclose",
    "torch.is_nonzero": "is_nonzero",
}


class TensorCompareSync(Rule):
    """Flags ``torch.equal(a, b)``, ``torch.allclose(a, b)``, ``t.is_nonzero()`` and
    their method spellings (``a.equal(b)``, ``a.allclose(b)``) on data that may live
    on the accelerator.

    ``torch.equal(x, x)`` with the very same name on both sides is not reported: it
    short-circuits on identity without reading the data. Nor is a comparison with a
    host tensor: both operands must live on the same device, so the other one is on
    the host too.

    Why it syncs: the answer is a Python ``bool``, so the comparison runs on the
    device and the host waits for it -- and for every kernel queued before it -- to
    read the result back.

    How to fix: keep the answer a tensor (``(a == b).all()``,
    ``torch.isclose(a, b).all()``, ``t != 0``) and use it in tensor ops; check with
    ``torch._assert_async`` where it is an invariant; or compare once, outside the step.
    """

    code = "SG107"
    sweep_ops = ("allclose", "equal")
    name = "tensor-compare-sync"
    message = "a whole-tensor comparison returns a Python bool: the host waits for the GPU"
    tokens = ("equal(", "allclose(", "is_nonzero(")
    cost = "blocks until all queued GPU work drains: 30.18 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Checker(nn.Module):
    def forward(self, x, y, ref_cpu, out_cpu):
        same = torch.equal(x, x)                     # identity short-circuits
        close = torch.isclose(x, y).all()            # stays a tensor
        host = torch.allclose(out_cpu, ref_cpu)      # host data
        host = host and torch.equal(x, ref_cpu)     # a host operand: both on the host
        torch._assert_async((x == y).all())
        return same, close, host
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Checker(nn.Module):
    def forward(self, x, y):
        if torch.allclose(x, y):
            return x
        return y
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Checker(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor):
        flag = x.sum().is_nonzero()
        same = x.equal(y)
        return flag, same
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        qualified = ctx.qualified_name(func)
        if qualified is not None:
            op = _FUNCTIONS.get(qualified)
            operands = list(node.args[:2])
        elif isinstance(func, ast.Attribute) and func.attr in _FUNCTIONS.values():
            op = func.attr
            operands = [func.value, *node.args[:1]]
        else:
            return
        if op is None or not operands:
            return
        if op == "equal" and len(operands) == 2 and _same_object(*operands):
            return
        values = [ctx.value(operand) for operand in operands]
        if len(operands) == 2 and any(value.on_host for value in values):
            return  # both operands share a device: a host one puts the other there too
        subject = max(operands, key=lambda operand: ctx.value(operand).place)
        sides = [short(ctx, operand, 24) for operand in operands] + ["b"]
        keep = {
            "equal": f"`({sides[0]} == {sides[1]}).all()`",
            "allclose": f"`torch.isclose({sides[0]}, {sides[1]}).all()`",
            "is_nonzero": f"`{sides[0]} != 0`",
        }[op]
        ctx.report(
            node,
            subject=subject,
            message=f"`{op}` returns a Python bool: the host waits for the GPU to compare",
            suggestion=f"keep the answer a tensor, {keep}, or compare once outside the step",
        )


def _same_object(first: ast.expr, second: ast.expr) -> bool:
    """``x`` and ``x`` (or ``self.x`` and ``self.x``): one object, compared by identity."""
    names = (ast.Name, ast.Attribute)
    return (
        isinstance(first, names)
        and isinstance(second, names)
        and ast.dump(first, annotate_fields=False) == ast.dump(second, annotate_fields=False)
    )
