"""SG106: printing or formatting a device tensor's values."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import device_tensor_in, is_builtin_call, is_device_tensor, short

_FORMATTERS = ("print", "str", "repr", "format", "ascii")


class TensorFormatSync(Rule):
    """Flags ``print(t)``, ``str(t)``, ``repr(t)``, ``format(t)``, f-strings
    (``f"{t}"``), ``"...".format(t)`` and ``"..." % t`` when ``t`` is a tensor that may
    live on the accelerator (or a list / tuple literal holding one).

    Host metadata (``t.shape``, ``t.dtype``, ``t.device``) is not reported. Lazy
    logging (``logger.debug("%s", t)``) formats only when the record is emitted and
    is not reported; an f-string passed to a logger is built (and syncs) every time.
    A message built only on the error path (``raise ValueError(f"{t}")``, an assert's
    message) is not reported either: it runs when the step fails, not every step.

    Why it syncs: printing needs the values, so the tensor is copied to the host
    after every queued kernel has run; ``repr`` of one tensor can copy several times
    (8 sync warnings for one ``print(t)``).

    How to fix: log host data (shapes, ``*_cpu`` copies), or log outside the step
    (every N steps, after one explicit copy) instead of on every step.
    """

    code = "SG106"
    name = "tensor-format-sync"
    message = "formatting a device tensor's values copies it to the host and waits"
    tokens = ("print(", "str(", "repr(", "format(", "ascii(", 'f"', "f'", "%")
    cost = "blocks until all queued GPU work drains: 31.06 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import logging
import torch
from torch import nn

logger = logging.getLogger(__name__)

class Decoder(nn.Module):
    def forward(self, x, step: int, seq_lens_cpu):
        print(f"step {step}: shape {x.shape} dtype {x.dtype}")
        logger.debug("lens %s", seq_lens_cpu)
        label = str(x.device)
        return x
"""
        ),
        Valid(
            """
import torch
from torch import nn

class Decoder(nn.Module):
    def forward(self, x, lens_cpu):
        if lens_cpu.min() < 0:
            raise ValueError(f"negative lengths for batch {x}")
        return x
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Decoder(nn.Module):
    def forward(self, x):
        total = x.sum()
        print(total)
        return x
""",
            line=7,
        ),
        Invalid(
            """
import logging
import torch
from torch import nn

logger = logging.getLogger(__name__)

class Decoder(nn.Module):
    def forward(self, x: torch.Tensor):
        logger.debug(f"max logit {x.max():.3f}")
        note = "lens: %s" % (x.argmax(-1),)
        return x, note
""",
            line=9,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        builtin = is_builtin_call(node, ctx, _FORMATTERS)
        if builtin is not None:
            self._check(node, device_tensor_in(node.args, ctx), f"`{builtin}()`", ctx)
        elif (
            isinstance(func, ast.Attribute)
            and func.attr == "format"
            and isinstance(func.value, ast.Constant)
            and isinstance(func.value.value, str)
        ):
            operands = [*node.args, *(keyword.value for keyword in node.keywords)]
            self._check(node, device_tensor_in(operands, ctx), "`str.format()`", ctx)

    def visit_BinOp(self, node: ast.BinOp, ctx: Context) -> None:
        if (
            isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
        ):
            self._check(node, device_tensor_in([node.right], ctx), "`%` formatting", ctx)

    def visit_FormattedValue(self, node: ast.FormattedValue, ctx: Context) -> None:
        if is_device_tensor(node.value, ctx):
            self._check(node.value, node.value, "an f-string field", ctx)

    def _check(self, node: ast.AST, tensor: ast.expr | None, how: str, ctx: Context) -> None:
        if tensor is None:
            return
        ctx.report(
            node,
            subject=tensor,
            message=f"{how} of a device tensor copies its values to the host and waits",
            suggestion=(
                f"format host data instead of `{short(ctx, tensor)}` (its shape, a `*_cpu` "
                "copy), or log it outside the per-step path"
            ),
        )
