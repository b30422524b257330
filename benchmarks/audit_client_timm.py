"""Audit client: a timm vision model's training step with AMP, grad scaling and clipping.

The loop follows timm's train script: autocast forward, scaled backward, unscale, clip the
gradient norm, scaler step and update, and the loss logged every step. A random-init
ResNet on random 32x32 images (no network). ``make`` builds the state, ``run`` the steps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import timm
import torch
from timm.loss import LabelSmoothingCrossEntropy
from timm.optim import create_optimizer_v2

STEPS = 3


def make(device: str, seed: int) -> dict[str, Any]:
    torch.manual_seed(seed)
    model = timm.create_model("resnet18", pretrained=False, num_classes=10).to(device)
    optimizer = create_optimizer_v2(model, opt="sgd", lr=0.05, momentum=0.9, weight_decay=1e-4)
    generator = torch.Generator().manual_seed(seed)
    batches = [
        (
            torch.randn(8, 3, 32, 32, generator=generator),
            torch.randint(0, 10, (8,), generator=generator),
        )
        for _ in range(STEPS)
    ]
    amp_dtype = torch.float16 if device == "cuda" else torch.bfloat16
    return {
        "model": model,
        "optimizer": optimizer,
        "scaler": torch.amp.GradScaler(device),
        "loss_fn": LabelSmoothingCrossEntropy(smoothing=0.1),
        "batches": [(x.to(device), y.to(device)) for x, y in batches],
        "device": device,
        "amp_dtype": amp_dtype,
    }


def train_step(state: dict[str, Any], images: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    model, optimizer, scaler = state["model"], state["optimizer"], state["scaler"]
    with torch.autocast(device_type=state["device"], dtype=state["amp_dtype"]):
        output = model(images)
        loss = state["loss_fn"](output, targets)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()


def run(state: dict[str, Any], on_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    state["model"].train()
    losses = []
    logged = []
    for step, (images, targets) in enumerate(state["batches"]):
        loss = train_step(state, images, targets)
        losses.append(loss)
        logged.append(loss.item())  # the per-step log line
        if on_step is not None:
            on_step(step)
    return {
        "losses": torch.stack(losses),
        "logged": logged,
        "scale": state["scaler"].get_scale(),
        "params": {name: p.detach().clone() for name, p in state["model"].named_parameters()},
    }
