"""SG108: a device tensor used as a size, bound or fill value of a new tensor."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import device_tensor_in, short

# torch functions whose arguments (other than tensors to read) are sizes or scalars:
# name -> (positions of size/scalar arguments, keyword names of the same).
_FACTORIES: dict[str, tuple[tuple[int, ...] | None, tuple[str, ...]]] = {
    "zeros": (None, ("size",)),
    "ones": (None, ("size",)),
    "empty": (None, ("size",)),
    "rand": (None, ("size",)),
    "randn": (None, ("size",)),
    "full": ((0, 1), ("size", "fill_value")),
    "arange": ((0, 1, 2), ("start", "end", "step")),
    "linspace": ((0, 1, 2), ("start", "end", "steps")),
    "logspace": ((0, 1, 2), ("start", "end", "steps")),
    "eye": ((0, 1), ("n", "m")),
    "randint": ((0, 1, 2), ("low", "high", "size")),
    "randperm": ((0,), ("n",)),
    "full_like": ((1,), ("fill_value",)),
    "narrow": ((2, 3), ("start", "length")),
}
_FILL_ARGUMENTS = {"full": 1, "full_like": 1, "new_full": 1}
# Tensor methods taking sizes: name -> positions of size/scalar arguments (None: all).
_METHODS: dict[str, tuple[int, ...] | None] = {
    "view": None,
    "reshape": None,
    "expand": None,
    "repeat": None,
    "new_zeros": None,
    "new_ones": None,
    "new_empty": None,
    "new_full": (0, 1),
    "narrow": (1, 2),
}


class DeviceSizeSync(Rule):
    """Flags a tensor that may live on the accelerator used where torch needs a
    Python number: a size (``torch.zeros(t0)``, ``x.view(t0, -1)``,
    ``x.new_empty(t0)``), a bound (``torch.arange(t0)``, ``x.narrow(0, 0, t0)``), a
    fill value (``torch.full(shape, t0)``) or padding (``F.pad(x, (0, t0))``).

    The argument must be known to be a tensor (``n = x.sum()``, a ``torch.Tensor``
    parameter); sizes from ``x.shape``, ``len()`` or ``*_cpu`` data are host values.

    Why it syncs: sizes and scalars are Python numbers inside torch, so the 0-d
    tensor is read back with ``__index__``/``__float__`` -- a device-to-host copy
    that waits for every queued kernel.

    How to fix: size tensors from host data (``seq_lens_cpu``, ``x.shape``) or a
    static upper bound and mask the tail; fill from the device without reading the
    value (``torch.empty(shape, device=d).fill_(t0)`` does not sync).
    """

    code = "SG108"
    sweep_ops = ("linspace.tensor_overload", "logspace.tensor_overload")
    name = "device-size-sync"
    message = "a device tensor used as a size or scalar argument is read back and waits"
    tokens = ("zeros", "ones", "empty", "rand", "full", "arange", "linspace", "logspace", "eye",
              "narrow", "pad", "view", "reshape", "expand", "repeat", "new_")  # fmt: skip
    cost = "blocks until all queued GPU work drains (like `int(t)`): 30.17 ms with 30 ms queued"

    VALID = [
        Valid(
            """
import torch
import torch.nn.functional as F
from torch import nn

class Packer(nn.Module):
    def forward(self, x, seq_lens_cpu, fill):
        n = int(seq_lens_cpu.sum())
        buf = torch.zeros(n, x.shape[1], device=x.device)
        idx = torch.arange(x.shape[0], device=x.device)
        padded = F.pad(x, (0, 8 - x.shape[-1] % 8))
        filled = torch.empty(4, device=x.device).fill_(x.max())
        view = x.view(x.size(0), -1)
        like = torch.zeros_like(x)
        return buf, idx, padded, filled, view, like
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Packer(nn.Module):
    def forward(self, x, lens):
        total = lens.sum()
        return torch.zeros(total, x.shape[1], device=x.device)
""",
            line=7,
        ),
        Invalid(
            """
import torch
import torch.nn.functional as F
from torch import nn

class Packer(nn.Module):
    def forward(self, x: torch.Tensor):
        pad = x.argmax()
        y = F.pad(x, (0, pad))
        z = torch.full((4,), x.max(), device=x.device)
        return y, z
""",
            line=8,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        qualified = ctx.qualified_name(func)
        keywords = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
        if qualified == "torch.nn.functional.pad":
            pads = node.args[1] if len(node.args) > 1 else keywords.get("pad")
            value = node.args[3] if len(node.args) > 3 else keywords.get("value")
            self._check(node, device_tensor_in([pads, value], ctx), "`F.pad`", None, ctx)
            return
        if qualified is not None:
            module, _, name = qualified.rpartition(".")
            if module != "torch" or name not in _FACTORIES:
                return
            positions, names = _FACTORIES[name]
            what = f"`torch.{name}`"
        elif isinstance(func, ast.Attribute) and func.attr in _METHODS:
            name, positions, names = func.attr, _METHODS[func.attr], ()
            what = f"`.{name}()`"
        else:
            return
        arguments = [
            argument
            for position, argument in enumerate(node.args)
            if positions is None or position in positions
        ]
        arguments += [keywords[keyword] for keyword in names if keyword in keywords]
        fill_position = _FILL_ARGUMENTS.get(name)
        fill = None
        if fill_position is not None:
            fill = node.args[fill_position] if len(node.args) > fill_position else None
            fill = fill or keywords.get("fill_value")
        self._check(node, device_tensor_in(arguments, ctx), what, fill, ctx)

    def _check(
        self,
        node: ast.Call,
        tensor: ast.expr | None,
        what: str,
        fill: ast.expr | None,
        ctx: Context,
    ) -> None:
        if tensor is None:
            return
        name = short(ctx, tensor, 24)
        if tensor is fill:
            suggestion = (
                f"`torch.empty(shape, device=...).fill_({name})` keeps the fill on the device"
            )
        else:
            suggestion = (
                f"take the size from host data (a `*_cpu` copy, `x.shape`) instead of `{name}`, "
                "or use a static upper bound and mask"
            )
        ctx.report(
            node,
            subject=tensor,
            message=f"a device tensor as an argument of {what} is read back to the host and waits",
            suggestion=suggestion,
        )
