"""SG1xx reads, value checks and SG4xx syncs beyond the embedded examples: what counts
as a device tensor, what is host data, and which receivers are streams or events."""

from __future__ import annotations

import pytest

from syncguard.testing import lint_snippet

HOT = """
import threading
import numpy as np
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.zeros(8, device="cuda")
        self.stream = torch.cuda.Stream()
        self.lock_event = threading.Event()

    def forward(self, x: torch.Tensor, idx, n: int, lens: list, flag, meta, lens_cpu, comm):
{body}
"""
FIRST_BODY_LINE = 13


def findings(body: str, select: str = "SG1,SG4") -> list[tuple[str, int]]:
    indented = "\n".join("        " + line for line in body.strip().splitlines())
    result = lint_snippet(HOT.format(body=indented), select=tuple(select.split(",")))
    assert not result.problems
    return [(f.code, f.span.line - FIRST_BODY_LINE) for f in result.findings]


@pytest.mark.parametrize(
    "body",
    [
        "int(n)",  # an int parameter
        "int(idx)",  # unknown kind: might be a Python number
        "int(len(lens))",
        "float(x.shape[0])",
        "int(x.size(0))",
        "range(x.numel())",
        "lens[n]",
        "max(lens)",
        "if flag:\n    pass",
        "if meta is not None and flag:\n    pass",
        "if 'k' in meta:\n    pass",
        "assert x.is_floating_point()",
        "print(x.shape, x.dtype)",
        "total = int(lens_cpu.sum())",
        "y = torch.zeros(x.shape[0], device=x.device)",
        "ok = (lens_cpu + meta.block_size - 1) // meta.block_size\nint(ok.sum())",
        "mask = lens_cpu > 0\nmask |= meta.extra\nif mask.any():\n    pass",
        "p = torch.rand([])\nif p < meta.drop:\n    pass",
        "comm.synchronize()",
        "self.lock_event.wait()",
        "torch.equal(x, x)",
        "x.to('cpu', non_blocking=True)",
        "x.to(torch.float16)",
        "torch.cuda.current_stream().wait_stream(self.stream)",
        "torch._assert_async(x.any())",
    ],
)
def test_host_values_and_non_syncs_are_not_reported(body: str) -> None:
    assert findings(body) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("int(x)", [("SG104", 1)]),  # a torch.Tensor parameter
        ("int(idx.max())", [("SG104", 1)]),  # a tensor method on unknown data
        ("float(self.table[0])", [("SG104", 1)]),  # a device buffer from __init__
        ("n_dev = x.sum()\nfor i in range(n_dev):\n    pass", [("SG104", 2)]),
        ("if x.sum() > 0 or flag:\n    pass", [("SG105", 1)]),
        ("while x.any():\n    x = x - 1", [("SG105", 1)]),
        ("ok = not x.all()", [("SG105", 1)]),
        ("s = f'{x.max():.2f}'", [("SG106", 1)]),
        ("ok = x.equal(self.table)", [("SG107", 1)]),
        ("y = x.view(x.sum(), -1)", [("SG108", 1)]),
        ("self.stream.synchronize()", [("SG402", 1)]),
        ("meta.copy_stream.synchronize()", [("SG402", 1)]),  # named like a stream
        ("import torch.cuda as tc\ntc.synchronize()", [("SG401", 2)]),
        ("for t in x:\n    if t > 0:\n        pass", [("SG105", 2)]),  # elements of a tensor
    ],
)
def test_device_tensors_are_reported(body: str, expected: list[tuple[str, int]]) -> None:
    assert findings(body) == expected


def test_in_loop_conversions_say_so() -> None:
    result = lint_snippet(
        HOT.format(body="        for i in range(n):\n            total = float(x[i])"),
        select=("SG104",),
    )
    (finding,) = result.findings
    assert "once per iteration" in finding.message
    assert "after the loop" in finding.suggestion


def test_recursive_helper_swapping_parameters_is_analysed() -> None:
    source = """
    import torch
    from torch import nn

    def walk(a, b, depth: int):
        if depth:
            walk(b, a, depth - 1)
        return b.item()

    class Model(nn.Module):
        def forward(self, x, y):
            return walk(x, y, 3)
    """
    result = lint_snippet(source, select=("SG101",))
    assert not result.problems
    assert [(f.code, f.span.line) for f in result.findings] == [("SG101", 11)]
