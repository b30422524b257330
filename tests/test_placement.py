"""Where data lives: host values are never reported."""

from __future__ import annotations

import pytest

from syncguard.testing import lint_snippet

HOT = """
import numpy as np
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage_cpu = torch.zeros(8)
        self.table = torch.zeros(8, device="cuda")
        self.counts = torch.zeros(8)

    def forward(self, x, lens: list[int], n: int, arr: np.ndarray, chunk_size=64):
{body}
"""


def findings(body: str) -> list[tuple[str, int]]:
    indented = "\n".join("        " + line for line in body.strip().splitlines())
    # Only the rules whose findings depend on placement alone (no copy/conversion rules).
    result = lint_snippet(HOT.format(body=indented), select=("SG101", "SG102", "SG201"))
    assert not result.problems
    return [(f.code, f.span.line - 12) for f in result.findings]


@pytest.mark.parametrize(
    "body",
    [
        "x_cpu = x.cpu()\nx_cpu.tolist()",  # the .cpu() itself belongs to another rule
        "cpu_ids = get_ids()\ncpu_ids.tolist()",
        "x_np.tolist()",
        "x_host.item()",
        "np.arange(4).sum().item()",
        "torch.from_numpy(arr).tolist()",
        "torch.arange(10).tolist()",
        "torch.zeros(3, device='cpu').sum().item()",
        "torch.zeros(3, device=torch.device('cpu')).tolist()",
        "lens_t = torch.tensor(lens)\n(lens_t[1:] - lens_t[:-1]).tolist()",
        "[1, 2, 3].index(2)",
        "{'a': 1}.items()",
        "arr.nonzero()",
        "arr[arr > 0].tolist()",
        "self.stage_cpu.tolist()",
        "self.counts.tolist()",
        "y = [1, 2]\nz = torch.tensor(y)\nz.tolist()",
        "len(lens)",
        "torch.tensor(n).item()",
        "t = torch.ones(n)\nfor i in range(n):\n    t[i].item()",
        "(torch.arange(n) * chunk_size).tolist()",
    ],
)
def test_host_values_are_not_reported(body: str) -> None:
    assert findings(body) == []


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("x.tolist()", [("SG102", 1)]),
        ("y = x * 2\ny.sum().item()", [("SG101", 2)]),
        ("self.table.tolist()", [("SG102", 1)]),
        ("t = torch.zeros(4, device=x.device)\nt.item()", [("SG101", 2)]),
        ("t = torch.arange(4).cuda()\nt.tolist()", [("SG102", 2)]),
        ("t = torch.from_numpy(arr).to('cuda')\nt.tolist()", [("SG102", 2)]),
        ("with torch.device('cuda'):\n    t = torch.arange(4)\n    t.tolist()", [("SG102", 3)]),
        ("y = x if n else x.cpu()\ny.tolist()", [("SG102", 2)]),
        ("ids = x.argmax(-1)\nids_cpu = ids.cpu()\nids.tolist()", [("SG102", 3)]),
    ],
)
def test_device_values_are_reported(body: str, expected: list[tuple[str, int]]) -> None:
    assert findings(body) == expected


def test_default_device_makes_factories_unknown() -> None:
    result = lint_snippet(
        """
        import torch
        torch.set_default_device("cuda")

        @torch.compile
        def f(n):
            return torch.arange(n).tolist()
        """
    )
    assert [f.span.line for f in result.findings] == [6]
