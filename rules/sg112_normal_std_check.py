"""SG112: ``torch.normal`` with a tensor of standard deviations."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import is_device_tensor, literal, short
from syncguard.values import SCALAR


class NormalStdCheckSync(Rule):
    """Flags ``torch.normal(mean, std)`` when ``std`` is known to be a tensor that may
    live on the accelerator and ``mean`` is not a Python number.

    A Python-number ``std`` is checked on the host without a copy and is not reported;
    nor is ``torch.normal(0.0, std)``: the sweep of torch's operator database found that
    a Python-number ``mean`` with a tensor ``std`` does not sync on CUDA.

    Why it syncs: ``torch.normal`` checks ``std >= 0`` over the whole tensor and
    raises a Python error when it fails; reading that check's result waits for every
    queued kernel (a value check hidden in the op).

    How to fix: sample without the check: ``mean + std * torch.randn_like(mean)``
    (clamp ``std`` on the device if it might be negative).
    """

    code = "SG112"
    name = "normal-std-check-sync"
    message = "`torch.normal` checks a tensor `std` on the host: it waits for the GPU"
    tokens = ("normal(",)
    sweep_ops = ("normal",)
    cost = (
        "blocks until all queued GPU work drains: 30.22 ms with 30 ms queued; 0.25 ms with a "
        "Python std (operator sweep, H200)"
    )
    graph_break = False  # traced as ops under torch.compile: a sync, not a break

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Noise(nn.Module):
    def forward(self, mean, std):
        a = torch.normal(mean, 0.5)                       # a Python std
        b = mean + std.exp() * torch.randn_like(mean)     # no check
        return a, b
"""
        ),
        Valid(
            """
import torch
from torch import nn

class Noise(nn.Module):
    def forward(self, std):
        return torch.normal(0.0, std.exp())           # a Python mean: no check on CUDA
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Noise(nn.Module):
    def forward(self, mean, log_std):
        return torch.normal(mean, log_std.exp())
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        if ctx.qualified_name(node.func) != "torch.normal":
            return
        std = node.args[1] if len(node.args) > 1 else None
        std = std or next((k.value for k in node.keywords if k.arg == "std"), None)
        if std is None or not is_device_tensor(std, ctx):
            return
        mean = node.args[0] if node.args else None
        mean = mean or next((k.value for k in node.keywords if k.arg == "mean"), None)
        number = literal(mean)
        if mean is None or SCALAR in ctx.value(mean).tags or isinstance(number, (int, float)):
            return
        mean_text = short(ctx, mean, 24) if mean is not None else "mean"
        ctx.report(
            node,
            subject=std,
            suggestion=(
                f"`{mean_text} + {short(ctx, std, 24)} * torch.randn_like({mean_text})` samples "
                "without the host-side check"
            ),
        )
