"""SG101: ``.item()`` on a device tensor."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import torch_op

# Function spellings of ``t.item()``: the aten ops behind it, called directly.
_FUNCTIONS = ("torch.item", "torch._local_scalar_dense")


class ItemSync(Rule):
    """Flags ``t.item()`` when ``t`` may live on the accelerator, and its aten spellings
    ``torch.ops.aten.item(t)`` / ``torch.ops.aten._local_scalar_dense(t)``.

    Why it syncs: ``.item()`` returns a Python number, so the host must wait
    until every kernel queued before it has finished and the value is copied
    back (``aten::_local_scalar_dense``). In a per-step path the CPU stops
    queueing work, and the GPU idles while the host catches up.

    How to fix: keep the value on the device and use the 0-d tensor in tensor
    ops; take Python numbers from host data you already have (``seq_lens_cpu``);
    if the host really needs it, copy it ``non_blocking=True`` into pinned memory
    and read it after an event, once per step, not once per iteration.
    """

    code = "SG101"
    name = "item-sync"
    message = "`.item()` copies a device value to the host and waits for the GPU"
    tokens = (".item(", "_local_scalar_dense")
    sweep_ops = ("item", "extra:Tensor.item", "extra:aten.item", "extra:aten._local_scalar_dense")
    cost = "blocks until all queued GPU work drains: 30.14 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits, seq_lens_cpu):
        longest = seq_lens_cpu.max().item()   # host tensor: no sync
        cfg = {"a": 1}
        for key, value in cfg.items():        # dict.items(), not .item()
            pass
        return logits[:, :longest]
"""
        ),
        Valid(
            """
import numpy as np

def summarize(losses):                        # not hot: not reported by default
    return losses.mean().item()

def host_only():
    return np.arange(4).sum().item()
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
        top = logits.argmax(-1)
        return top.item()
""",
            line=7,
        ),
        Invalid(
            """
import torch

@torch.compile
def decode_step(hidden, counts):
    total = 0
    for i in range(4):
        total += counts[i].item()
    return hidden * total
""",
            line=7,
        ),
        Invalid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits):
        return torch.ops.aten._local_scalar_dense.default(logits.argmax())
""",
            line=6,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if torch_op(func, ctx) in _FUNCTIONS and len(node.args) == 1:
            subject = node.args[0]
        elif isinstance(func, ast.Attribute) and func.attr == "item" and not node.args:
            subject = func.value
        else:
            return
        suggestion = (
            "accumulate on the device and read once after the loop"
            if ctx.in_loop
            else "keep the 0-d tensor on the device, or take the number from host data"
        )
        ctx.report(node, subject=subject, suggestion=suggestion)
