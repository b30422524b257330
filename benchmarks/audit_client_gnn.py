"""Audit client: a torch_geometric GCN training step, written as PyG's tutorial writes it.

Node classification on a random graph (no dataset download): two GCNConv layers, the loss
on the training nodes (a boolean mask), the loss and the test accuracy logged each step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv
from torch_geometric.utils import erdos_renyi_graph

STEPS = 3


class GCN(torch.nn.Module):
    def __init__(self, features: int, hidden: int, classes: int) -> None:
        super().__init__()
        self.conv1 = GCNConv(features, hidden)
        self.conv2 = GCNConv(hidden, classes)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index)


def make(device: str, seed: int) -> dict[str, Any]:
    torch.manual_seed(seed)
    nodes, features, classes = 200, 16, 4
    edge_index = erdos_renyi_graph(nodes, edge_prob=0.05)
    train_mask = torch.rand(nodes) < 0.6
    data = Data(
        x=torch.randn(nodes, features),
        edge_index=edge_index,
        y=torch.randint(0, classes, (nodes,)),
        train_mask=train_mask,
        test_mask=~train_mask,
    ).to(device)
    model = GCN(features, 32, classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    return {"model": model, "optimizer": optimizer, "data": data}


def train_step(model: GCN, optimizer: torch.optim.Optimizer, data: Data) -> torch.Tensor:
    model.train()
    optimizer.zero_grad()
    out = model(data.x, data.edge_index)
    loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
    loss.backward()
    optimizer.step()
    return loss.detach()


def test_accuracy(model: GCN, data: Data) -> float:
    model.eval()
    pred = model(data.x, data.edge_index).argmax(dim=1)
    correct = (pred[data.test_mask] == data.y[data.test_mask]).sum()
    return int(correct) / int(data.test_mask.sum())


def run(state: dict[str, Any], on_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    model, optimizer, data = state["model"], state["optimizer"], state["data"]
    torch.manual_seed(1)  # dropout
    losses, log = [], []
    for step in range(STEPS):
        loss = train_step(model, optimizer, data)
        losses.append(loss)
        log.append((float(loss), test_accuracy(model, data)))
        if on_step is not None:
            on_step(step)
    return {
        "losses": torch.stack(losses),
        "log": log,
        "params": {name: p.detach().clone() for name, p in model.named_parameters()},
    }
