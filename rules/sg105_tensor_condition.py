"""SG105: a device tensor used as a truth value (``if``, ``while``, ``assert``, ``and``/``not``)."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import is_device_tensor, short


class TensorConditionSync(Rule):
    """Flags a tensor that may live on the accelerator used as a truth value: the
    test of ``if``/``while``/``assert`` or of a conditional expression, and the
    operands of ``and``/``or``/``not``.

    The operand must be known to be a tensor (a comparison or reduction of tensor
    data such as ``x.sum() > 0``, ``mask.any()``, a ``torch.Tensor`` parameter): an
    unknown ``if flag:`` might test a Python bool and is not reported. Identity and
    membership tests (``x is None``, ``key in table``) are host bools. An ``assert``
    disappears under ``python -O``, but runs (and syncs) in normal runs.

    Why it syncs: the branch is taken on the host, so ``Tensor.__bool__`` copies
    the value back (``aten::_local_scalar_dense``) after every queued kernel has run.

    How to fix: keep both outcomes on the device (``torch.where(cond, a, b)``,
    masking); decide from host data the scheduler already has; check invariants with
    ``torch._assert_async(cond)``, which raises on the device without waiting.
    """

    code = "SG105"
    name = "tensor-condition-sync"
    message = "branching on a device tensor copies its truth value to the host and waits"
    tokens = ("if", "while", "assert", " and ", " or ", "not ")
    cost = "blocks until all queued GPU work drains: 30.15 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits, bias, flag, seq_lens_cpu, cache: dict):
        if bias is not None and flag:            # host values
            logits = logits + bias
        if seq_lens_cpu.max() > 128:             # a host tensor
            logits = logits * 2
        if "key" in cache and not flag:
            pass
        found = logits.any()                      # kept as a tensor: no sync
        torch._assert_async(found)
        return torch.where(logits > 0, logits, 0.0)
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits):
        if (logits.sum() > 0):
            logits = logits * 2
        return logits
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, x: torch.Tensor, flag):
        assert (x >= 0).all(), "negative"
        y = 1 if x.max() > 3 else 0
        ok = flag and not x.isnan().any()
        return x, y, ok
""",
            line=6,
        ),
    ]

    def visit_If(self, node: ast.If, ctx: Context) -> None:
        self._check(_tested(node.test), ctx, "branch on the host")

    def visit_While(self, node: ast.While, ctx: Context) -> None:
        self._check(_tested(node.test), ctx, "loop")

    def visit_Assert(self, node: ast.Assert, ctx: Context) -> None:
        self._check(_tested(node.test), ctx, "assert")

    def visit_IfExp(self, node: ast.IfExp, ctx: Context) -> None:
        self._check(_tested(node.test), ctx, "branch on the host")

    def visit_BoolOp(self, node: ast.BoolOp, ctx: Context) -> None:
        # Every operand but the last is truth-tested by ``and``/``or`` itself.
        for operand in node.values[:-1]:
            self._check(_tested(operand), ctx, "branch on the host")

    def visit_UnaryOp(self, node: ast.UnaryOp, ctx: Context) -> None:
        if isinstance(node.op, ast.Not):
            self._check(_tested(node.operand), ctx, "branch on the host")

    def _check(self, tested: ast.expr | None, ctx: Context, use: str) -> None:
        if tested is None or not is_device_tensor(tested, ctx):
            return
        condition = short(ctx, tested)
        if use == "assert":
            suggestion = f"`torch._assert_async({condition})` checks on the device without waiting"
        elif use == "loop":
            suggestion = "bound the loop on the host (a static maximum) and mask finished work"
        else:
            suggestion = (
                f"keep both outcomes on the device with `torch.where({condition}, a, b)`, or "
                "decide from host data"
            )
        message = {
            "assert": "asserting on a device tensor copies its truth value to the host and waits",
            "loop": "a loop condition on a device tensor copies it to the host and waits",
        }.get(use)
        ctx.report(tested, subject=tested, suggestion=suggestion, message=message)


def _tested(test: ast.expr) -> ast.expr | None:
    """The expression whose ``__bool__`` a truth test of ``test`` calls, unless another
    visit reports it: ``a and b`` tests ``a`` itself and leaves ``b``; ``not a`` tests
    ``a`` itself."""
    while isinstance(test, ast.BoolOp):
        test = test.values[-1]
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return None
    return test
