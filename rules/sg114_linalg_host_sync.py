"""SG114: linear-algebra ops that read back to the host and have no sync-free variant."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import Op, literal, match_op, short

_ON_HOST = "computes on the host (the matrix is copied to the CPU and back)"
_INFO = "checks the solver's `info` code on the host"
_VIA_SVD = "is built on `svd` / `eigh`, which check the solver's `info` on the host"
_CHECKED = "inverts or solves with an error check on the host"
_DEGREE = "picks its approximation degree from the matrix norm on the host"
_SILENT = "synchronizes inside the solver (without a `set_sync_debug_mode` warning)"

# op (function name, or method name for ``x.op()``) -> why it reads back
_OPS = {
    "linalg.eig": _ON_HOST,
    "linalg.eigvals": _ON_HOST,
    "linalg.eigh": _INFO,
    "linalg.eigvalsh": _INFO,
    "linalg.svd": _INFO,
    "svd": _INFO,
    "linalg.svdvals": _INFO,
    "linalg.lstsq": _INFO,
    "linalg.pinv": _VIA_SVD,
    "pinverse": _VIA_SVD,
    "linalg.matrix_rank": _VIA_SVD,
    "linalg.cond": _VIA_SVD,
    "svd_lowrank": _VIA_SVD,
    "pca_lowrank": _VIA_SVD,
    "linalg.tensorinv": _CHECKED,
    "linalg.tensorsolve": _CHECKED,
    "linalg.matrix_exp": _DEGREE,
    "matrix_exp": _DEGREE,
    "linalg.ldl_factor": _SILENT,
    "linalg.ldl_factor_ex": _SILENT,
    "linalg.ldl_solve": _SILENT,
}
_METHODS = ("svd", "pinverse", "matrix_exp")
# norms whose order needs singular values: op -> (position of the order, its keyword)
_NORMS = {"norm": (1, "p"), "linalg.norm": (1, "ord"), "linalg.matrix_norm": (1, "ord")}
_POWERS = ("matrix_power", "linalg.matrix_power")


class LinalgHostSync(Rule):
    """Flags, on data that may live on the accelerator, the linear-algebra ops with no
    sync-free variant: ``torch.linalg.eig`` / ``eigvals`` / ``eigh`` / ``eigvalsh`` /
    ``svd`` / ``svdvals`` / ``lstsq`` / ``pinv`` / ``matrix_rank`` / ``cond`` /
    ``tensorinv`` / ``tensorsolve`` / ``matrix_exp`` / ``ldl_factor`` / ``ldl_factor_ex`` /
    ``ldl_solve``, ``torch.svd``, ``torch.pinverse``, ``torch.matrix_exp``,
    ``torch.svd_lowrank``, ``torch.pca_lowrank`` (and the methods ``x.svd()``,
    ``x.pinverse()``, ``x.matrix_exp()``); nuclear and spectral norms
    (``torch.norm(x, p="nuc")``, ``torch.linalg.norm(x, "nuc")``,
    ``torch.linalg.matrix_norm(x, ord)`` with ``ord`` ``"nuc"``, ``2`` or ``-2``); and
    ``matrix_power`` with a negative exponent written in the source.

    Empty inputs return early and do not sync; per-step data is not empty. Other norms
    (``"fro"``, ``1``, ``inf``), non-negative matrix powers and ``torch.linalg.qr`` do
    not sync and are not reported.

    Why it syncs: each op reads something back on the host before it returns.
    ``eig`` / ``eigvals`` run their algorithm on the CPU (the matrix is copied there and
    back); ``eigh``, ``svd`` and ``lstsq`` copy the solver's ``info`` code to the host to
    raise on failure, and have no ``*_ex`` variant that skips it; ``pinv``,
    ``matrix_rank``, ``cond``, the low-rank SVDs and the nuclear / spectral norms are
    built on them; ``tensorinv`` / ``tensorsolve`` and a negative ``matrix_power`` invert
    with an error check; ``matrix_exp`` picks its approximation degree from the matrix
    norm on the host; the ``ldl`` solvers synchronize inside, without a debug-mode
    warning (found by timing them in the operator sweep). Whatever the reason, the host
    waits for every queued kernel.

    How to fix: move the decomposition out of the per-step path (compute it once at
    setup, or every N steps, and reuse the result); for symmetric positive-definite
    systems use ``torch.linalg.cholesky_ex`` + ``torch.cholesky_solve`` (no host
    check); replace nuclear / spectral norms by the Frobenius norm where the algorithm
    allows; write a negative power as ``torch.linalg.inv_ex(x)`` then a positive power.
    """

    code = "SG114"
    sweep_ops = (
        *(name for name in _OPS if name != "linalg.matrix_exp"),
        "linalg.lstsq.grad_oriented",
        "linalg.matrix_rank.hermitian",
        "linalg.pinv.hermitian",
        "linalg.pinv.singular",
        "norm.nuc",
        "linalg.norm",
        "linalg.norm.subgradients_at_zero",
        "linalg.matrix_norm",
        "linalg.matrix_power",
    )
    name = "linalg-host-sync"
    message = "the linear-algebra op reads back to the host (no sync-free variant): it waits"
    tokens = ("linalg", "svd", "pinverse", "pca_lowrank", "matrix_exp", "norm", "matrix_power")
    cost = (
        "blocks until all queued GPU work drains: 29.97-31.22 ms with 30 ms queued "
        "(24 ops of the operator sweep, H200)"
    )
    graph_break = False  # traced as ops under torch.compile: a sync, not a break

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Whiten(nn.Module):
    def forward(self, cov, rhs, x, cov_cpu):
        chol, info = torch.linalg.cholesky_ex(cov)      # no host check
        sol = torch.cholesky_solve(rhs, chol)
        q, r = torch.linalg.qr(x)
        fro = torch.linalg.matrix_norm(x)               # Frobenius: no SVD
        sq = torch.linalg.matrix_power(x, 2)
        host = torch.linalg.eigh(cov_cpu)               # host data
        return sol, q, fro, sq, host
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Spectral(nn.Module):
    def forward(self, weight):
        sigma = torch.linalg.svdvals(weight)[0]
        return weight / sigma
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Spectral(nn.Module):
    def forward(self, weight):
        return torch.linalg.matrix_norm(weight, ord=2), weight.norm(p="nuc")
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Gate(nn.Module):
    def forward(self, x, a):
        vals, vecs = torch.linalg.eig(a)
        return x @ torch.linalg.matrix_power(a, -1)
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        op = match_op(node, ctx, (*_OPS, *_NORMS, *_POWERS), modules=("torch",))
        if op is None:
            op = _linalg_call(node, ctx)
        if op is None or not op.args or (op.is_method and op.name not in _METHODS + _POWERS
                                         + ("norm",)):  # fmt: skip
            return
        if op.name in _NORMS:
            why = _norm_reason(op)
        elif op.name in _POWERS:
            why = _CHECKED if _negative(op.argument(1, "n")) else None
        else:
            why = _OPS.get(op.name)
        if why is None:
            return
        matrix = op.args[0]
        ctx.report(
            node,
            subject=matrix,
            message=f"`{op.name}` {why}: the host waits for the GPU",
            suggestion=(
                f"compute it once outside the step and reuse it, or keep `{short(ctx, matrix)}` "
                "on the host if it is small"
            ),
        )


def _linalg_call(node: ast.Call, ctx: Context) -> Op | None:
    """``torch.linalg.<op>(...)`` as an op named ``linalg.<op>``."""
    qualified = ctx.qualified_name(node.func) or ""
    if not qualified.startswith("torch.linalg.") or any(
        isinstance(argument, ast.Starred) for argument in node.args
    ):
        return None
    keywords = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
    return Op(qualified.removeprefix("torch."), tuple(node.args), keywords, is_method=False)


def _norm_reason(op: Op) -> str | None:
    position, keyword = _NORMS[op.name]
    order = literal(op.argument(position, keyword))
    if order == "nuc" or (op.name == "linalg.matrix_norm" and order in (2, -2)):
        return _VIA_SVD
    return None


def _negative(node: ast.expr | None) -> bool:
    power = literal(node)
    return isinstance(power, int) and not isinstance(power, bool) and power < 0
