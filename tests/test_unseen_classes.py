"""Classes of patterns found missing on engines the analysis was not tuned on, each written
as engine code would write it: reported where it syncs every step, not where it does not."""

from __future__ import annotations

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
