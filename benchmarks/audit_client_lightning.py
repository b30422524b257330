"""Audit client: PyTorch Lightning ``Trainer.fit`` for a few steps, with logging on.

A tiny classifier LightningModule that logs its loss and accuracy every step (progress bar
and CSV logger), on random data (no download), seeded and deterministic.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable
from typing import Any

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader, TensorDataset

STEPS = 4


class Classifier(L.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 5)
        )

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> Any:
        x, y = batch
        logits = self.net(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(dim=1) == y).float().mean()
        self.log("train_loss", loss, prog_bar=True)
        self.log("train_acc", acc, prog_bar=True)
        return loss

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


class StepCallback(L.Callback):
    def __init__(self, on_step: Callable[[int], None] | None) -> None:
        self.on_step = on_step

    def on_train_batch_end(
        self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, i: int
    ) -> None:
        if self.on_step is not None:
            self.on_step(i)


def make(device: str, seed: int) -> dict[str, Any]:
    logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)
    L.seed_everything(seed, verbose=False)
    generator = torch.Generator().manual_seed(seed)
    data = TensorDataset(
        torch.randn(STEPS * 16, 32, generator=generator),
        torch.randint(0, 5, (STEPS * 16,), generator=generator),
    )
    return {
        "module": Classifier(),
        "loader": DataLoader(data, batch_size=16, shuffle=False),
        "accelerator": "gpu" if device == "cuda" else "cpu",
        "folder": tempfile.mkdtemp(prefix="syncguard-lightning-"),
    }


def run(state: dict[str, Any], on_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    trainer = L.Trainer(
        accelerator=state["accelerator"],
        devices=1,
        max_steps=STEPS,
        logger=CSVLogger(state["folder"]),
        log_every_n_steps=1,
        enable_checkpointing=False,
        enable_model_summary=False,
        deterministic=True,
        callbacks=[StepCallback(on_step)],
    )
    trainer.fit(state["module"], state["loader"])
    metrics = {name: value.detach().clone() for name, value in trainer.callback_metrics.items()}
    params = {name: p.detach().clone() for name, p in state["module"].named_parameters()}
    return {"metrics": metrics, "params": params}
