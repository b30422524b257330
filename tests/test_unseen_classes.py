"""Classes of patterns found missing on engines the analysis was not tuned on, each written
as engine code would write it: reported where it syncs every step, not where it does not."""

from __future__ import annotations

from syncguard.config import Settings
from syncguard.testing import lint_tree


def reported(files: dict[str, str]) -> list[tuple[str, int, str]]:
    result = lint_tree(files)
    assert result.problems == []
    return sorted((f.path, f.span.line, f.code) for f in result.findings)


def test_a_container_annotation_says_where_items_live_only_through_its_element_types() -> None:
    source = """
        from typing import Any

        def train_step(model, batch, state: dict[str, Any]):
            out = model(batch)
            state["loss"] = out.mean()
            print(state["loss"].item())

        def log_sizes(model, batch, sizes: dict[str, int], lens: list[int]):
            out = model(batch)
            print(sizes["tokens"].item(), lens[0].item())

        def train(model, loader, opt):
            state = {}
            for batch in loader:
                train_step(model, batch, state)
                log_sizes(model, batch, {"tokens": 1}, [1])
                opt.step()
        """
    # The item stored from the model's output is device data whatever the annotation;
    # dict[str, int] and list[int] do say their items are host numbers.
    assert reported({"train.py": source}) == [("train.py", 15, "SG101")]


def test_a_sync_at_the_end_of_a_chain_over_lines_is_reported_on_its_own_line() -> None:
    source = """
        from torch import nn

        class Allocator(nn.Module):
            def forward(self, counts, start, stop):
                return (
                    counts[start:stop]
                    .sum()
                    .item()
                )
        """
    assert reported({"alloc.py": source}) == [("alloc.py", 8, "SG101")]


def test_calls_into_a_namespace_package_by_its_full_name_are_followed() -> None:
    # ``engine/`` has no __init__.py: its subpackage ``core`` is imported as engine.core.
    files = {
        "engine/core/__init__.py": "",
        "engine/core/serving/__init__.py": "",
        "engine/core/serving/respond.py": """
            import torch

            def respond(batch):
                lengths = torch.ones(len(batch), device="cuda")
                return lengths.tolist()
            """,
        "engine/core/serving/server.py": """
            from torch import nn
            from engine.core.serving.respond import respond

            class Handler(nn.Module):
                def forward(self, batch):
                    return respond(batch)
            """,
    }
    # The helper's sync does not depend on what it is given: reported where it is, as hot.
    assert reported(files) == [("engine/core/serving/respond.py", 5, "SG102")]


def test_containers_of_containers_filled_from_an_enumerated_gather_hold_device_data() -> None:
    source = """
        from collections import defaultdict

        import torch
        import torch.distributed as dist
        from torch import nn

        class SequenceSharder(nn.Module):
            def __init__(self, world):
                super().__init__()
                self.world = world

            def forward(self, batch):
                shards = defaultdict(dict)
                for key in batch.keys():
                    gathered = [torch.empty_like(batch[key]) for _ in range(self.world)]
                    dist.all_gather(gathered, batch[key])
                    for rank, tensor in enumerate(gathered):
                        shards[rank][key] = tensor
                for shard in shards.values():
                    for key in shard.keys():
                        shard[key] = shard[key][:, :16].cpu()
                sizes = defaultdict(int)
                for rank, size in enumerate([4, 8]):
                    sizes[rank] = size
                return shards[0], [sizes[rank].bit_length() for rank in sizes]
        """
    # The gathered tensors are device data in every shard; the sizes are host numbers.
    assert reported({"shard.py": source}) == [("shard.py", 21, "SG103")]


def test_a_loop_in_a_state_dict_function_is_no_step_loop() -> None:
    source = """
        from torch import nn

        class Engine(nn.Module):
            def forward(self, x):
                return x * 2

            def sharded_state_dict(self, chunks):
                saved = {}
                for index, chunk in enumerate(chunks):
                    saved[index] = self(chunk).sum().item()
                return saved

            def run_chunks(self, chunks):
                done = []
                for chunk in chunks:
                    done.append(self(chunk).sum().item())
                return done
        """
    # Saving a checkpoint runs once per checkpoint; the other loop runs the model per step.
    assert reported({"engine.py": source}) == [("engine.py", 16, "SG101")]


def test_an_item_the_host_parameters_name_is_host_data_where_it_is_read() -> None:
    source = """
        from torch import nn

        from buffers import make

        class Sampler(nn.Module):
            def __init__(self, metadata):
                super().__init__()
                self.metadata = {name: make(t) for name, t in metadata.items()}

            def forward(self, logits, rows):
                top_k = self.metadata["top_k"][rows].tolist()
                ends = self.metadata["end_ids"][rows].tolist()
                return logits, top_k, ends
        """
    settings = Settings(host_parameters=("top_k",))
    found = sorted(
        (f.path, f.span.line) for f in lint_tree({"s.py": source}, settings=settings).findings
    )
    assert found == [("s.py", 12)]
