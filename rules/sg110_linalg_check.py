"""SG110: linear-algebra ops that check their result for errors on the host."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import is_device_tensor, short

# The checking op -> its ``*_ex`` variant, which returns the error code as a tensor.
_CHECKED = {
    "torch.linalg.inv": "torch.linalg.inv_ex",
    "torch.linalg.cholesky": "torch.linalg.cholesky_ex",
    "torch.linalg.solve": "torch.linalg.solve_ex",
    "torch.linalg.lu_factor": "torch.linalg.lu_factor_ex",
    "torch.inverse": "torch.linalg.inv_ex",
    "torch.cholesky": "torch.linalg.cholesky_ex",
}
_EX_VARIANTS = frozenset(_CHECKED.values())
_METHODS = {"inverse": "torch.linalg.inv_ex", "cholesky": "torch.linalg.cholesky_ex"}


class LinalgCheckSync(Rule):
    """Flags ``torch.linalg.inv`` / ``cholesky`` / ``solve`` / ``lu_factor`` (and
    ``torch.inverse``, ``torch.cholesky``, ``t.inverse()``), and the ``*_ex`` variants
    called with ``check_errors=True``, on data that may live on the accelerator.
    (``ldl_factor`` syncs even as ``ldl_factor_ex``: SG114 reports it.)

    Why it syncs: these ops compute an ``info`` code on the device and raise a Python
    error when a matrix is singular or not positive-definite; to decide whether to
    raise, the host copies ``info`` back and waits for all queued work (a value
    check hidden in the op).

    How to fix: call the ``*_ex`` variant (``torch.linalg.inv_ex``), which returns
    ``(result, info)`` without checking, and inspect ``info`` on the device or once
    outside the step. (The operator sweep found ``lu_factor_ex`` still synchronizing,
    without a debug-mode warning, for rectangular matrices; square ones do not.)
    """

    code = "SG110"
    sweep_ops = (
        "cholesky",
        "linalg.cholesky",
        "linalg.inv",
        "linalg.solve",
        "linalg.lu_factor",
    )
    name = "linalg-check-sync"
    message = "the op checks its result for errors on the host: it waits for the GPU"
    tokens = ("inv", "cholesky", "solve", "lu_factor")
    cost = (
        "blocks until all queued GPU work drains: 29.97-30.19 ms with 30 ms queued "
        "(5 ops of the operator sweep, H200)"
    )
    graph_break = False  # traced as ops under torch.compile: a sync, not a break

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Whitening(nn.Module):
    def forward(self, cov, rhs, cov_cpu):
        inv, info = torch.linalg.inv_ex(cov)
        chol, _ = torch.linalg.cholesky_ex(cov)
        sol, _ = torch.linalg.solve_ex(cov, rhs)
        host = torch.linalg.inv(cov_cpu)          # host data
        return inv, chol, sol, host
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Whitening(nn.Module):
    def forward(self, cov, rhs):
        chol = torch.linalg.cholesky(cov)
        return torch.linalg.solve(chol, rhs)
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Whitening(nn.Module):
    def forward(self, cov: torch.Tensor):
        inv, info = torch.linalg.inv_ex(cov, check_errors=True)
        return inv, cov.inverse()
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        qualified = ctx.qualified_name(func)
        if qualified in _CHECKED and node.args:
            self._report(node, node.args[0], qualified, _CHECKED[qualified], ctx)
        elif qualified in _EX_VARIANTS and node.args and _checks_errors(node):
            self._report(
                node, node.args[0], qualified, f"{qualified}(..., check_errors=False)", ctx
            )
        elif (
            qualified is None
            and isinstance(func, ast.Attribute)
            and func.attr in _METHODS
            and is_device_tensor(func.value, ctx)
        ):
            self._report(node, func.value, f".{func.attr}()", _METHODS[func.attr], ctx)

    def _report(
        self, node: ast.Call, matrix: ast.expr, op: str, replacement: str, ctx: Context
    ) -> None:
        ctx.report(
            node,
            subject=matrix,
            message=f"`{op}` checks its result for errors on the host: it waits for the GPU",
            suggestion=(
                f"use `{replacement}` on `{short(ctx, matrix, 24)}` and inspect `info` on the "
                "device or once outside the step"
            ),
        )


def _checks_errors(node: ast.Call) -> bool:
    return any(
        keyword.arg == "check_errors"
        and not (isinstance(keyword.value, ast.Constant) and not keyword.value.value)
        for keyword in node.keywords
    )
