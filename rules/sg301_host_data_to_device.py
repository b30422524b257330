"""SG301: building a device tensor from host data (``torch.tensor(data, device=...)``)."""

from __future__ import annotations

import ast

from syncguard.facts import Fix
from syncguard.fixes import UNSAFE, codemod_fix
from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.values import PYSEQ, maybe_device_tensor

_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})


class HostDataToDevice(Rule):
    """Flags ``torch.tensor(data, device=dev)``, ``torch.as_tensor(data, device=dev)``,
    ``torch.asarray(data, device=dev)`` and ``t.new_tensor(data)`` when the result may
    live on the accelerator (also under a default device), unless ``data`` is already
    device data (no host copy then).

    Why it syncs: the data is first laid out in ordinary (pageable) host memory,
    then copied with a blocking host-to-device copy, which waits for the GPU's
    queue to drain.

    How to fix: build host data once into a persistent pinned stage and copy it
    with ``non_blocking=True`` into a persistent device buffer; or, for a
    one-off, ``torch.tensor(data, pin_memory=True).to(dev, non_blocking=True)``
    (the unsafe autofix: it allocates pinned memory on every call, and the
    device tensor is filled asynchronously).
    """

    code = "SG301"
    sweep_ops = ("extra:tensor", "extra:as_tensor", "extra:Tensor.new_tensor", "extra:from_numpy")
    name = "host-data-to-device"
    message = "a device tensor built from host data is copied with a blocking host-to-device copy"
    tokens = ("tensor(", "asarray(")
    cost = "blocks until all queued GPU work drains: 30.11 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, x, lens):
        host = torch.tensor(lens)                           # stays on the host
        staged = torch.tensor(lens, pin_memory=True).to(x.device, non_blocking=True)
        ids = torch.as_tensor(x.argmax(-1), device=x.device)  # device data: no host copy
        empty = torch.tensor([], device=x.device)             # nothing to copy
        return staged
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, x, lens):
        t = torch.tensor(lens, dtype=torch.int32, device=x.device)
        return x, t
""",
            line=6,
            fixed="""
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, x, lens):
        t = torch.tensor(lens, dtype=torch.int32, pin_memory=True).to(x.device, non_blocking=True)
        return x, t
""",
        ),
        Invalid(
            """
from torch import nn

class Sampler(nn.Module):
    def forward(self, x, lens):
        return x.new_tensor([len(lens), 0])
""",
            line=5,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        qualified = ctx.qualified_name(func)
        if qualified in _FACTORIES:
            spelling = qualified
        elif qualified is None and isinstance(func, ast.Attribute) and func.attr == "new_tensor":
            spelling = "new_tensor"
        else:
            return
        if not node.args or any(isinstance(a, ast.Starred) for a in node.args):
            return
        if isinstance(node.args[0], (ast.List, ast.Tuple)) and not node.args[0].elts:
            return  # torch.tensor([], device=d): nothing to copy
        data = ctx.value(node.args[0])
        if maybe_device_tensor(data) or (PYSEQ in data.tags and not data.on_host):
            return  # device data: a device copy, or a conversion another rule reports
        ctx.report(
            node,
            subject=node,
            message=f"`{spelling.rpartition('.')[2]}(...)`: {self.message}",
            suggestion=(
                "fill a persistent pinned stage and copy it `non_blocking=True` into a "
                "persistent device buffer"
            ),
            fix=_pinned_fix(node, ctx) if spelling == "torch.tensor" else None,
        )


def _pinned_fix(node: ast.Call, ctx: Context) -> Fix | None:
    """``torch.tensor(data, device=d)`` -> ``torch.tensor(data, pin_memory=True).to(d,
    non_blocking=True)``; comments and layout inside the call are kept."""
    keywords = {keyword.arg: keyword for keyword in node.keywords}
    device = keywords.get("device")
    if (
        device is None
        or None in keywords
        or "pin_memory" in keywords
        or "requires_grad" in keywords
        or len(node.args) != 1
    ):
        return None
    description = "build the data in pinned memory and copy it non-blocking"
    return codemod_fix(ctx, node, "pinned-copy", UNSAFE, description)
