"""SG307: ops that build a small tensor from Python values and copy it to the device."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import literal, short

# torch.masked reductions and normalisations whose mask arguments make them build a fill value
_MASKED = (
    "amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax", "logaddexp",
    "logsumexp", "mean", "median", "norm", "prod", "softmax", "softmin", "std", "sum", "var",
)  # fmt: skip
_MASKS = ("mask", "input_mask", "other_mask")
# torch.signal.windows functions that build their coefficients on the host for M >= 2
_WINDOWS = ("blackman", "general_cosine", "general_hamming", "hamming", "hann", "kaiser",
            "nuttall")  # fmt: skip


class HostBuiltConstant(Rule):
    """Flags ``torch.unravel_index(idx, shape)`` on data that may live on the
    accelerator, ``torch.masked.<op>(x, ..., mask=m)`` (``sum``, ``mean``, ``amax``,
    ``softmax``, ``cumsum``, ...) with a mask, and ``torch.signal.windows.<window>(M,
    device=...)`` (``hann``, ``hamming``, ``blackman``, ``kaiser``, ``nuttall``,
    ``general_cosine``, ``general_hamming``) on a device other than the CPU.

    ``torch.masked.<op>`` without a mask (``mask=None``), windows of length 0 or 1 and
    ``torch.hann_window(M, device=...)`` do not sync and are not reported.

    Why it syncs: inside, the op builds a small tensor from Python values with
    ``torch.tensor(..., device=x.device)`` (the strides of ``shape``, the masked fill
    value, the window's coefficients) and copies it host-to-device: a blocking copy
    from pageable memory, queued behind every earlier kernel.

    How to fix: ``unravel_index`` is integer arithmetic with Python strides:
    ``(idx // stride) % size`` per dimension; for a masked reduction,
    ``torch.where(mask, x, fill).sum(dim)`` with a Python ``fill`` keeps it on the device;
    build a window once (``register_buffer`` in ``__init__``) or use
    ``torch.hann_window(M, device=...)``.
    """

    code = "SG307"
    sweep_ops = (
        "unravel_index",
        *(f"masked.{op}" for op in _MASKED),
        *(f"signal.windows.{window}" for window in _WINDOWS),
    )
    name = "host-built-constant"
    message = "the op copies a tensor it builds from Python values to the device, blocking"
    tokens = ("unravel_index", "masked.", "windows")
    cost = (
        "blocks until all queued GPU work drains: 29.96-30.76 ms with 30 ms queued "
        "(26 ops of the operator sweep, H200)"
    )

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Pool(nn.Module):
    def forward(self, x, mask, idx, cols: int):
        total = torch.where(mask, x, 0.0).sum(-1)
        plain = torch.masked.sum(x, -1, mask=None)
        row, col = idx // cols, idx % cols
        window = torch.hann_window(400, device=x.device)
        return total, plain, row, col, window
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Pool(nn.Module):
    def forward(self, x, mask):
        return torch.masked.mean(x, -1, mask=mask)
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Route(nn.Module):
    def forward(self, flat, rows: int, cols: int):
        return torch.unravel_index(flat.argmax(), (rows, cols))
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Spectrogram(nn.Module):
    def forward(self, audio):
        window = torch.signal.windows.hann(400, device=audio.device)
        return torch.stft(audio, 400, window=window, return_complex=True)
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        qualified = ctx.qualified_name(node.func) or ""
        module, _, name = qualified.rpartition(".")
        keywords = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
        if qualified == "torch.unravel_index" and node.args:
            ctx.report(
                node,
                subject=node.args[0],
                message="`unravel_index` copies the strides of `shape` to the device, blocking",
                suggestion=f"`({short(ctx, node.args[0], 20)} // stride) % size` per dimension",
            )
        elif module in ("torch.masked", "torch.masked._ops") and name in _MASKED and node.args:
            masks = [keywords[key] for key in _MASKS if key in keywords]
            if not masks or all(literal(mask) is None for mask in masks):
                return
            ctx.report(
                node,
                subject=node.args[0],
                message=f"`torch.masked.{name}` with a mask copies its fill value to the device",
                suggestion=(
                    f"`torch.where(mask, {short(ctx, node.args[0], 20)}, fill).{name}(...)` "
                    "with a Python `fill`"
                ),
            )
        elif module == "torch.signal.windows" and name in _WINDOWS and node.args:
            device = keywords.get("device")
            if (
                device is None
                or str(literal(device)).startswith("cpu")
                or _shorter_than_two(node.args[0])
            ):
                return
            ctx.report(
                node,
                subject=None,
                message=f"`{name}` builds its coefficients on the host and copies them, blocking",
                suggestion="build the window once (`register_buffer` in `__init__`) and reuse it",
            )


def _shorter_than_two(node: ast.expr) -> bool:
    return literal(node) in (0, 1)
