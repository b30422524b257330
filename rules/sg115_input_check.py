"""SG115: ops that check their inputs' values, or read their lengths, on the host."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import Op, match_op, short

# op -> (what it reads on the host, how to avoid it)
_CHECKS = {
    "cov": (
        "checks its weights and normalisation on the host",
        "compute it with tensor ops: `xc = x - x.mean(1, keepdim=True); xc @ xc.T / (n - 1)`",
    ),
    "corrcoef": (
        "computes `cov`, which checks its normalisation on the host",
        "normalise a covariance computed with tensor ops (see `cov`)",
    ),
    "istft": (
        "checks the window's overlap-add envelope (NOLA) on the host",
        "run it outside the per-step path, or invert with `irfft` and an overlap-add you "
        "check once at setup",
    ),
    "gaussian_nll_loss": (
        "checks `var >= 0` on the host (`torch.any(var < 0)`)",
        "write the loss out: `0.5 * (var.clamp_min(eps).log() + (input - target) ** 2 / "
        "var.clamp_min(eps))`",
    ),
    "ctc_loss": (
        "reads `input_lengths` / `target_lengths` on the host (the CUDA kernel needs them there)",
        "there is no sync-free CUDA CTC loss: compute it once per batch, not per step, or "
        "use the cuDNN path with host lengths",
    ),
    "_segment_reduce": (
        "checks `lengths` on the host unless `unsafe=True`",
        "validate the lengths once where they are made, then pass `unsafe=True` (or `offsets=`)",
    ),
    "segment_reduce": (
        "checks `lengths` on the host unless `unsafe=True`",
        "validate the lengths once where they are made, then pass `unsafe=True` (or `offsets=`)",
    ),
    "searchsorted": (
        "with `sorter`, reads back on the host (the same searches without `sorter` do not)",
        "sort the boundaries once (`sorted_seq = seq.gather(-1, sorter)`) and search "
        "`sorted_seq` without `sorter`",
    ),
    "clip_grad_norm_": (
        "with `error_if_nonfinite=True`, checks the total norm on the host",
        "keep the default `error_if_nonfinite=False` and check `total_norm.isfinite()` on "
        "the device, or every N steps",
    ),
}
_TORCH = ("cov", "corrcoef", "istft", "_segment_reduce", "segment_reduce", "searchsorted")
_FUNCTIONS = ("gaussian_nll_loss", "ctc_loss")  # torch.nn.functional
_UTILS = ("clip_grad_norm_",)  # torch.nn.utils


class InputCheckSync(Rule):
    """Flags, on data that may live on the accelerator: ``torch.cov`` / ``corrcoef``,
    ``torch.istft``, ``F.gaussian_nll_loss`` with a tensor ``var``, ``F.ctc_loss``,
    ``torch.segment_reduce`` / ``torch._segment_reduce`` with ``lengths`` and without
    ``unsafe=True``, ``torch.searchsorted(..., sorter=...)`` and
    ``torch.nn.utils.clip_grad_norm_(..., error_if_nonfinite=True)`` (also as methods,
    ``x.cov()``, ``x.istft(...)``).

    ``segment_reduce`` with ``offsets``, ``searchsorted`` without ``sorter`` and
    ``clip_grad_norm_`` with its defaults do not sync and are not reported.

    Why it syncs: each op validates its input values (or reads a length list) on the
    host before it launches its kernels: a whole-tensor check whose Python ``if`` needs the
    result, so the host waits for every queued kernel (a value check hidden in the op).

    How to fix: use the unchecked form where one exists (``unsafe=True``, the default
    ``error_if_nonfinite=False``, sorted boundaries instead of ``sorter``), or write the
    computation with plain tensor ops; otherwise move the op out of the per-step path.
    """

    code = "SG115"
    sweep_ops = (
        "cov",
        "corrcoef",
        "istft",
        "nn.functional.gaussian_nll_loss",
        "nn.functional.ctc_loss",
        "_segment_reduce.lengths",
        "searchsorted",
        "extra:grad_clip_and_scale",
    )
    name = "input-check-sync"
    message = "the op checks its input values on the host: it waits for the GPU"
    tokens = ("cov(", "corrcoef", "istft", "nll_loss", "ctc_loss", "segment_reduce",
              "sorter", "error_if_nonfinite")  # fmt: skip
    cost = (
        "blocks until all queued GPU work drains: 30.08-30.37 ms with 30 ms queued "
        "(8 ops of the operator sweep, H200)"
    )
    graph_break = False  # traced as ops under torch.compile: a sync, not a break

    VALID = [
        Valid(
            """
import torch
import torch.nn.functional as F
from torch import nn

class Head(nn.Module):
    def forward(self, x, target, seq, values, lengths, params):
        loss = F.gaussian_nll_loss(x, target, 0.5)             # a Python var
        idx = torch.searchsorted(seq, values)                  # no sorter
        seg = torch.segment_reduce(x, "sum", lengths=lengths, unsafe=True)
        norm = torch.nn.utils.clip_grad_norm_(params, 1.0)     # no host check
        return loss, idx, seg, norm
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch.nn.functional as F
from torch import nn

class Head(nn.Module):
    def forward(self, mean, target, log_var):
        return F.gaussian_nll_loss(mean, target, log_var.exp())
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Stats(nn.Module):
    def forward(self, feats):
        return torch.cov(feats.T)
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch.nn.utils import clip_grad_norm_

def train_step(model, loss):  # syncguard: hot
    loss.backward()
    return clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        op = (
            match_op(node, ctx, _TORCH)
            or match_op(node, ctx, _FUNCTIONS, modules=("torch.nn.functional",))
            or match_op(node, ctx, _UTILS, modules=("torch.nn.utils", "torch.nn.utils.clip_grad"))
        )
        if op is None or not op.args or not self._checks(op):
            return
        if op.is_method and op.name not in ("cov", "corrcoef", "istft"):
            return
        subject = op.args[0]
        if op.name == "gaussian_nll_loss":
            subject = op.argument(2, "var") or subject
        why, fix = _CHECKS[op.name]
        ctx.report(
            node,
            subject=None if op.name == "clip_grad_norm_" else subject,
            message=f"`{op.name}` {why}: the host waits for the GPU",
            suggestion=fix.replace("`x`", f"`{short(ctx, subject, 24)}`"),
        )

    @staticmethod
    def _checks(op: Op) -> bool:
        """False for the forms that do not check: see the class docstring."""
        if op.name in ("_segment_reduce", "segment_reduce"):
            unsafe = op.keywords.get("unsafe")
            return "lengths" in op.keywords and not (
                isinstance(unsafe, ast.Constant) and unsafe.value is True
            )
        if op.name == "searchsorted":
            return "sorter" in op.keywords
        if op.name == "clip_grad_norm_":
            flag = op.argument(3, "error_if_nonfinite")
            return flag is not None and not (isinstance(flag, ast.Constant) and not flag.value)
        if op.name == "gaussian_nll_loss":
            var = op.argument(2, "var")
            return not (isinstance(var, ast.Constant) and isinstance(var.value, (int, float)))
        return True
