"""Function summaries: which parameters reach which syncs, through long chains and cycles."""

from __future__ import annotations

from syncguard.testing import lint_tree


def helpers(count: int, *, cycle: bool = False, root_passes: str = "") -> str:
    """A module whose hot ``forward`` calls ``h0(x)``; each ``h<i>`` syncs on ``x`` under
    ``if flag:`` and passes both on to ``h<i+1>`` (the last one back to ``h0`` in a cycle)."""
    lines = ["import torch", "from torch import nn", ""]
    for index in range(count):
        following = index + 1 if index + 1 < count else (0 if cycle else None)
        lines += [f"def h{index}(x, flag=True):", "    if flag:", "        x.max().item()"]
        if following is not None:
            lines.append(f"    return h{following}(x, flag=flag)")
        lines.append("")
    lines += ["class Model(nn.Module):", "    def forward(self, x):", f"        h0(x{root_passes})"]
    return "\n".join(lines)


def test_a_long_chain_of_syncing_helpers_is_one_finding_at_the_hot_call() -> None:
    """It counts every site the chain reaches and shows the way to the first one; a
    suppression at any of them applies (the finding lists each site's statement)."""
    result = lint_tree({"model.py": helpers(300)})
    (finding,) = result.findings
    assert finding.message.startswith("`h0()` syncs, 300 sites:")
    assert [step.function for step in finding.chain] == ["model.Model.forward", "model.h0"]
    assert len(finding.suppressible_at) == 301


def test_a_branch_no_caller_takes_is_decided_through_hundreds_of_forwarding_helpers() -> None:
    """The root passes ``flag=False``; every helper passes its own flag on: no sync runs
    (decided without recursing once per helper)."""
    result = lint_tree({"model.py": helpers(400, root_passes=", flag=False")})
    assert result.findings == [] and result.problems == []


def test_a_cycle_of_syncing_helpers_terminates_with_every_site() -> None:
    result = lint_tree({"model.py": helpers(200, cycle=True)})
    (finding,) = result.findings
    assert finding.message.startswith("`h0()` syncs, 200 sites:")


def test_the_chain_shown_is_the_shortest_way_to_the_sync() -> None:
    """``a`` reaches the sync in ``c`` directly and through ``b``; whichever call comes
    first, the finding shows the shorter chain."""
    for calls in (["b(x)", "c(x)"], ["c(x)", "b(x)"]):
        source = "\n".join(
            [
                "import torch",
                "from torch import nn",
                "def c(x):",
                "    return x.tolist()",
                "def b(x):",
                "    return c(x)",
                "def a(x):",
                *(f"    {call}" for call in calls),
                "class Model(nn.Module):",
                "    def forward(self, x):",
                "        return a(x)",
            ]
        )
        (finding,) = lint_tree({"model.py": source}).findings
        assert [step.function for step in finding.chain] == [
            "model.Model.forward",
            "model.a",
            "model.c",
        ]
