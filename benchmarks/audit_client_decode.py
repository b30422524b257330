"""Audit client: a decoding loop in the style of real generation code.

A tiny random-init decoder-only transformer with a preallocated KV cache; the loop samples
each token from float32 logits copied with ``logits.to(copy=True, dtype=torch.float32,
device=...)`` (as Hugging Face's generate does), streams the tokens every step, and checks
every token whether all sequences have finished.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

STEPS = 12  # new tokens at most
VOCAB, DIM, HEADS, LAYERS, MAX_LEN = 96, 64, 4, 2, 64
EOS = 3


class KVCache:
    def __init__(self, batch: int, device: str, dtype: torch.dtype) -> None:
        shape = (LAYERS, 2, batch, HEADS, MAX_LEN, DIM // HEADS)
        self.data = torch.zeros(shape, device=device, dtype=dtype)

    def update(self, layer: int, start: int, k: torch.Tensor, v: torch.Tensor) -> tuple[Any, Any]:
        end = start + k.shape[2]
        self.data[layer, 0, :, :, start:end] = k
        self.data[layer, 1, :, :, start:end] = v
        return self.data[layer, 0, :, :, :end], self.data[layer, 1, :, :, :end]


class Layer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1, self.norm2 = torch.nn.RMSNorm(DIM), torch.nn.RMSNorm(DIM)
        self.qkv = torch.nn.Linear(DIM, 3 * DIM, bias=False)
        self.out = torch.nn.Linear(DIM, DIM, bias=False)
        self.up = torch.nn.Linear(DIM, 4 * DIM, bias=False)
        self.down = torch.nn.Linear(4 * DIM, DIM, bias=False)

    def forward(self, x: torch.Tensor, cache: KVCache, index: int, start: int) -> torch.Tensor:
        batch, length, _ = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(DIM, dim=-1)
        q, k, v = (t.view(batch, length, HEADS, -1).transpose(1, 2) for t in (q, k, v))
        keys, values = cache.update(index, start, k, v)
        attended = F.scaled_dot_product_attention(q, keys, values, is_causal=length > 1)
        x = x + self.out(attended.transpose(1, 2).reshape(batch, length, DIM))
        return x + self.down(F.silu(self.up(self.norm2(x))))


class TinyLM(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, DIM)
        self.layers = torch.nn.ModuleList(Layer() for _ in range(LAYERS))
        self.norm = torch.nn.RMSNorm(DIM)
        self.head = torch.nn.Linear(DIM, VOCAB, bias=False)

    def forward(self, tokens: torch.Tensor, cache: KVCache, start: int) -> torch.Tensor:
        x = self.embed(tokens)
        for index, layer in enumerate(self.layers):
            x = layer(x, cache, index, start)
        return self.head(self.norm(x))


class TokenStreamer:
    """Receives each new token as it comes (the shape of a text streamer's ``put``)."""

    def __init__(self, on_step: Callable[[int], None] | None) -> None:
        self.tokens: list[list[int]] = []
        self.on_step = on_step

    def put(self, value: torch.Tensor) -> None:
        self.tokens.append(value.tolist())
        if self.on_step is not None:
            self.on_step(len(self.tokens) - 1)


def generate(
    model: TinyLM, input_ids: torch.Tensor, generator: torch.Generator, streamer: TokenStreamer
) -> torch.Tensor:
    batch, prompt = input_ids.shape
    dtype = torch.bfloat16
    cache = KVCache(batch, str(input_ids.device.type), dtype)
    unfinished = torch.ones(batch, dtype=torch.bool, device=input_ids.device)
    tokens = input_ids
    logits = model(input_ids, cache, start=0)
    for step in range(STEPS):
        next_logits = logits[:, -1, :].to(copy=True, dtype=torch.float32, device=input_ids.device)
        probs = F.softmax(next_logits / 0.8, dim=-1)
        next_tokens = torch.multinomial(probs, num_samples=1, generator=generator).squeeze(1)
        next_tokens = torch.where(unfinished, next_tokens, torch.full_like(next_tokens, EOS))
        tokens = torch.cat([tokens, next_tokens[:, None]], dim=1)
        streamer.put(next_tokens)
        unfinished = unfinished & (next_tokens != EOS)
        if unfinished.max() == 0:  # every sequence has finished
            break
        logits = model(next_tokens[:, None], cache, start=prompt + step)
    return tokens


def make(device: str, seed: int) -> dict[str, Any]:
    torch.manual_seed(seed)
    model = TinyLM().to(device=device, dtype=torch.bfloat16).eval()
    prompts = torch.randint(4, VOCAB, (4, 8), generator=torch.Generator().manual_seed(seed))
    generator = torch.Generator(device=device).manual_seed(seed)
    return {"model": model, "prompts": prompts.to(device), "generator": generator}


def run(state: dict[str, Any], on_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    streamer = TokenStreamer(on_step)
    with torch.no_grad():
        tokens = generate(state["model"], state["prompts"], state["generator"], streamer)
    return {"tokens": tokens, "stream": streamer.tokens}
