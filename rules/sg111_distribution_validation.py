"""SG111: torch.distributions objects built with argument validation on."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid


class DistributionValidationSync(Rule):
    """Flags ``torch.distributions.<Distribution>(...)`` built from data that may live
    on the accelerator without ``validate_args=False``.

    Validation is on by default (it follows ``__debug__``, so ``python -O`` turns it
    off). A process-wide ``Distribution.set_default_validate_args(False)`` is not
    seen by this rule: pass ``validate_args=False`` explicitly, or ignore SG111 in
    the config for such projects.

    Why it syncs: the constructor checks its parameters (``probs`` in the simplex,
    ``scale > 0``...) with tensor ops and raises a Python ``ValueError`` on failure;
    deciding whether to raise reads the check's result on the host, after every
    queued kernel.

    How to fix: pass ``validate_args=False`` in the per-step path (validate once,
    outside it, if needed), or sample directly (``torch.multinomial``,
    ``mean + std * torch.randn_like(mean)``).
    """

    code = "SG111"
    sweep_ops = ("extra:distributions.Categorical",)
    name = "distribution-validation-sync"
    message = "building a distribution validates its arguments on the host: it waits for the GPU"
    tokens = ("distributions",)
    cost = (
        "blocks until all queued GPU work drains: 29.96 ms with 30 ms queued; 0.02 ms with "
        "validate_args=False (operator sweep, H200)"
    )

    VALID = [
        Valid(
            """
import torch
from torch import nn
from torch.distributions import Categorical

class Sampler(nn.Module):
    def forward(self, probs):
        dist = Categorical(probs=probs, validate_args=False)
        prior = torch.distributions.Normal(0.0, 1.0)          # host numbers
        return dist.sample(), prior
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
from torch import nn
from torch.distributions import Categorical

class Sampler(nn.Module):
    def forward(self, logits):
        return Categorical(logits=logits).sample()
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, mean, scale):
        dist = torch.distributions.Normal(mean, scale, validate_args=True)
        return dist.rsample()
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        qualified = ctx.qualified_name(node.func) or ""
        module, _, name = qualified.rpartition(".")
        if not module.startswith("torch.distributions") or not name[:1].isupper():
            return
        validate = None
        data: list[ast.expr] = list(node.args)
        for keyword in node.keywords:
            if keyword.arg == "validate_args":
                validate = keyword.value
            elif keyword.arg is not None:
                data.append(keyword.value)
        if validate is not None and not (
            isinstance(validate, ast.Constant) and validate.value in (True, None)
        ):
            return  # validate_args=False, or a flag the caller controls
        if not data:
            return
        subject = max(data, key=lambda argument: ctx.value(argument).place)
        ctx.report(
            node,
            subject=subject,
            message=f"`{name}(...)` validates its arguments on the host: it waits for the GPU",
            suggestion=f"pass `validate_args=False` to `{name}` in the per-step path",
        )
