"""SG102: ``.tolist()`` on a device tensor."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid


class TolistSync(Rule):
    """Flags ``t.tolist()`` when ``t`` may live on the accelerator.

    Why it syncs: building a Python list needs every element on the host, so
    the tensor is copied device-to-host and the host waits for all queued GPU
    work first. A classic hidden case: a kernel wrapper computes chunk indices
    with ``cu_seqlens.tolist()`` on the device ``cu_seqlens`` every step.

    How to fix: compute the host-side values from the host copy the metadata
    builder already has (``cu_seqlens_cpu``, ``query_start_loc_cpu``) and pass
    the result down (see ``syncguard.runtime.reference.prepare_chunk_indices``);
    or keep the computation on the device with a static bound.
    """

    code = "SG102"
    sweep_ops = ("extra:Tensor.tolist",)
    name = "tolist-sync"
    message = "`.tolist()` copies a device tensor to the host and waits for the GPU"
    tokens = (".tolist(",)
    cost = "blocks until all queued GPU work drains: 30.21 ms with 30 ms queued (H200)"

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Attention(nn.Module):
    def forward(self, q, cu_seqlens_cpu, lens_np):
        bounds = cu_seqlens_cpu.tolist()     # host copy kept by the metadata builder
        more = lens_np.tolist()              # numpy array
        return q
"""
        ),
        Valid(
            """
import torch
from torch import nn

def chunk_bounds(cu_seqlens, chunk_size):
    return [x // chunk_size for x in cu_seqlens.tolist()]

class Builder:
    def build(self, query_start_loc_cpu):    # hot via config; passes host data
        return chunk_bounds(query_start_loc_cpu, 64)

class Model(nn.Module):
    def forward(self, x, meta):
        return chunk_bounds(meta.cu_seqlens_cpu, 64)
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Attention(nn.Module):
    def forward(self, q, cu_seqlens):
        bounds = cu_seqlens.tolist()
        return q
""",
            line=6,
        ),
        Invalid(
            """
import torch

def chunk_bounds(cu_seqlens, chunk_size):
    return [x // chunk_size for x in cu_seqlens.tolist()]

@torch.compile
def attention(q, cu_seqlens):
    bounds = chunk_bounds(cu_seqlens, 64)   # the sync is hidden in the helper
    return q
""",
            line=8,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "tolist" and not node.args:
            ctx.report(
                node,
                subject=func.value,
                suggestion="use the host copy (e.g. `cu_seqlens_cpu`) the metadata builder keeps",
            )
