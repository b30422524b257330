"""SG116: ``GradScaler.step(optimizer)`` and ``GradScaler.get_scale()`` in a hot path."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.values import FUSED, GRAD_SCALER


class GradScalerSync(Rule):
    """Flags ``scaler.step(optimizer)`` and ``scaler.get_scale()`` on a gradient scaler
    (``torch.amp.GradScaler``, ``torch.cuda.amp.GradScaler``) the source shows: a local or
    a ``self`` attribute given ``GradScaler(...)``, or a parameter annotated as one. A scaler
    built for the CPU (``GradScaler("cpu")``) or with ``enabled=False``, and ``step`` of an
    optimizer built with ``fused=True`` where the source shows it, are not reported.

    Why it syncs: ``step`` must skip the optimizer step when the scaled gradients hold an
    inf or NaN. Unless the optimizer handles AMP scaling itself (the fused optimizers,
    ``Adam(..., fused=True)``, take the inf flag as a tensor and skip on the device), the
    scaler reads its ``found_inf`` flags with ``.item()``: once per optimizer step the host
    waits for the backward pass and everything queued before it. ``get_scale()`` returns
    the current scale as a Python float, read from the device with ``.item()``.

    How to fix: use a fused optimizer (``torch.optim.AdamW(params, fused=True)``, also
    ``Adam`` and ``SGD``), whose step unscales and skips on the device; call ``get_scale``
    only when you log, every N steps, or keep the scale on the device (the private
    ``scaler._get_scale_async()`` returns the tensor, without the read).
    """

    code = "SG116"
    name = "grad-scaler-sync"
    message = "`GradScaler.step()` reads its inf check on the host: it waits for the GPU"
    sweep_ops = ("extra:grad_clip_and_scale",)
    tokens = ("GradScaler",)
    cost = (
        "not timed separately: the operator sweep (H200) saw `scaler.step(optimizer)` of an "
        "SGD optimizer sync, once per step"
    )

    VALID = [
        Valid(
            """
import torch

def train(model, loader):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    scaler = torch.amp.GradScaler("cuda")
    for batch in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(batch)
        scaler.scale(loss).backward()
        scaler.step(optimizer)              # fused: unscales and skips on the device
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
"""
        ),
        Valid(
            """
import torch

def train(model, loader, optimizer, scheduler):
    scaler = torch.amp.GradScaler("cuda", enabled=False)   # disabled: a plain step
    for batch in loader:
        loss = model(batch)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scheduler.step()                    # not a scaler
"""
        ),
        Valid(
            """
import torch

class Trainer:
    def __init__(self, model, scaler: torch.amp.GradScaler, cpu_model):
        self.model, self.cpu_model = model, cpu_model
        self.optimizer = torch.optim.AdamW(model.parameters(), fused=True)
        self.scaler = scaler
        self.cpu_optimizer = torch.optim.SGD(cpu_model.parameters(), lr=0.1)
        self.cpu_scaler = torch.amp.GradScaler("cpu")

    def training_step(self, batch, cpu_batch):  # syncguard: hot
        self.scaler.scale(self.model(batch)).backward()
        self.scaler.step(self.optimizer)    # fused, where __init__ shows it
        self.scaler.update()
        self.cpu_scaler.scale(self.cpu_model(cpu_batch)).backward()
        self.cpu_scaler.step(self.cpu_optimizer)   # host memory: no GPU wait
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch

def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for batch in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(batch)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
""",
            line=10,
        ),
        Invalid(
            """
import torch

class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters())
        self.scaler = torch.cuda.amp.GradScaler()

    def training_step(self, batch):  # syncguard: hot
        loss = self.model(batch)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        return {"loss": loss.detach(), "scale": self.scaler.get_scale()}
""",
            line=14,
        ),
        Invalid(
            """
from typing import Optional

from torch.amp import GradScaler

def train_step(model, batch, optimizer, scaler: Optional[GradScaler] = None):  # syncguard: hot
    loss = model(batch)
    if scaler is None:
        loss.backward()
        optimizer.step()
    else:
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
""",
            line=12,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or func.attr not in ("step", "get_scale"):
            return
        if GRAD_SCALER not in ctx.value(func.value).tags:
            return
        if func.attr == "get_scale":
            ctx.report(
                node,
                subject=None,
                message="`GradScaler.get_scale()` reads the scale back to the host: it waits",
                suggestion="read the scale only when you log it (every N steps), or keep it on "
                "the device",
            )
            return
        optimizer = node.args[0] if node.args else None
        for keyword in node.keywords:
            if keyword.arg == "optimizer":
                optimizer = keyword.value
        if optimizer is not None and FUSED in ctx.value(optimizer).tags:
            return
        ctx.report(
            node,
            subject=None,
            suggestion="build the optimizer with `fused=True` (Adam, AdamW, SGD): its step "
            "unscales and skips on the device",
        )
