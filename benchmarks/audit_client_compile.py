"""Audit client: a ``torch.compile``d module's forward (inductor), a few steps.

A small pre-norm transformer block compiled with the default mode (and, on CUDA, a second
copy with ``mode="reduce-overhead"``: CUDA graphs). The first call compiles; the audit sees
what compilation and the compiled code do on the host.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

STEPS = 4


class Block(torch.nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(dim, 4 * dim), torch.nn.GELU(), torch.nn.Linear(4 * dim, dim)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in (q, k, v))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, length, dim))
        return x + self.mlp(self.norm2(x))


def make(device: str, seed: int) -> dict[str, Any]:
    torch.manual_seed(seed)
    torch._dynamo.reset()  # every run compiles (warm caches on disk make later ones faster)
    block = Block().to(device).eval()
    compiled = {"default": torch.compile(block)}
    if device == "cuda":
        compiled["reduce-overhead"] = torch.compile(block, mode="reduce-overhead")
    inputs = [torch.randn(2, 16, 64, device=device) for _ in range(STEPS)]
    return {"compiled": compiled, "inputs": inputs}


def run(state: dict[str, Any], on_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    outputs: dict[str, list[torch.Tensor]] = {name: [] for name in state["compiled"]}
    with torch.no_grad():
        for step, x in enumerate(state["inputs"]):
            for name, forward in state["compiled"].items():
                outputs[name].append(forward(x).clone())
            if on_step is not None:
                on_step(step)
    return {name: torch.stack(values) for name, values in outputs.items()}
