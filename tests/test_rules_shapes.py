"""SG202-SG208: data-dependent output shapes, op by op, in one hot forward."""

from __future__ import annotations

import pytest

from syncguard.testing import lint_snippet

HOT = """
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

class Model(nn.Module):
    def forward(self, x, idx, lens: list[int], n: int, arr: np.ndarray, x_cpu, mask_cpu):
{body}
"""
FIRST_BODY_LINE = 7  # the forward line: body lines count from 1


def findings(body: str) -> list[tuple[str, int]]:
    """(code, line within ``body``) of the SG2xx findings for ``body`` in a hot forward."""
    indented = "\n".join("        " + line for line in body.strip().splitlines())
    result = lint_snippet(HOT.format(body=indented), select=("SG2",))
    assert not result.problems
    return [(f.code, f.span.line - FIRST_BODY_LINE) for f in result.findings]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # boolean masks, however they are made
        ("x[x > 0]", "SG202"),
        ("m = (x > 0) & ~torch.isnan(x)\nx[m]", "SG202"),
        ("x[torch.logical_not(x.isinf())]", "SG202"),
        ("x[idx.bool()]", "SG202"),
        ("x[idx.to(torch.bool)]", "SG202"),
        ("keep = torch.ones(n, dtype=torch.bool, device=x.device)\nx[keep]", "SG202"),
        ("x[:, idx == 3]", "SG202"),
        ("x[x.isfinite()] += 1", "SG202"),
        ("x.masked_select(x > 0)", "SG203"),
        ("torch.masked_select(x, idx > 0)", "SG203"),
        ("torch.unique(idx)", "SG204"),
        ("idx.unique(return_counts=True)", "SG204"),
        ("torch.unique_consecutive(idx)", "SG204"),
        ("torch.repeat_interleave(idx)", "SG205"),
        ("x.repeat_interleave(idx.long(), dim=0)", "SG205"),
        ("torch.repeat_interleave(x, torch.diff(idx), dim=0)", "SG205"),
        ("torch.bincount(idx)", "SG206"),
        ("idx.bincount(minlength=8)", "SG206"),
        ("torch.histc(x)", "SG207"),
        ("x.histc(16, 0, 0)", "SG207"),
        ("torch.histc(x, bins=4, min=0, max=0)", "SG207"),
        ("F.one_hot(idx)", "SG208"),
        ("F.one_hot(idx, -1)", "SG208"),
        ("torch.nn.functional.one_hot(idx, num_classes=-1)", "SG208"),
    ],
)
def test_blocking_shape_op_is_reported(body: str, expected: str) -> None:
    assert [code for code, _ in findings(body)] == [expected]


@pytest.mark.parametrize(
    "body",
    [
        "x[x > 0] = 0.0",  # assignment through a mask keeps the shape
        "x.masked_fill(x > 0, 0.0)",
        "torch.where(x > 0, x, 0.0)",
        "x[idx.long()]",  # an index tensor, not a mask
        "x[mask_cpu]",  # a host mask does not sync
        "x_cpu[x_cpu > 0]",  # host data
        "arr[arr > 0]",
        "torch.nonzero_static(x > 0, size=8)",
        "torch.unique(x_cpu)",
        "np.unique(arr)",
        "torch.repeat_interleave(idx, output_size=n)",
        "x.repeat_interleave(4, dim=1)",
        "x.repeat_interleave(n, dim=0)",  # a Python int of repeats
        "torch.repeat_interleave(x_cpu)",
        "torch.bincount(x_cpu)",
        "torch.histc(x, bins=4, min=-1.0, max=1.0)",
        "torch.histc(x, 8, -1, 1)",
        "F.one_hot(idx, 8)",
        "F.one_hot(idx, num_classes=n)",
        "torch.sort(idx)",
        "torch.cumsum(idx, 0)",
    ],
)
def test_sync_free_form_is_not_reported(body: str) -> None:
    assert findings(body) == []


def test_mask_names_are_boolean_but_assignments_through_them_are_free() -> None:
    body = "token_mask = build(x)\nx[token_mask]\nx[attn_masks] = 0\ny = x[is_valid]"
    assert findings(body) == [("SG202", 2)]


def test_each_finding_says_how_to_keep_the_shape_static() -> None:
    indented = "        torch.repeat_interleave(idx)\n        x[x > 0]"
    result = lint_snippet(HOT.format(body=indented), select=("SG2",))
    suggestions = {f.code: f.suggestion for f in result.findings}
    assert "output_size=" in suggestions["SG205"]
    assert "torch.where(x > 0, x, 0)" in suggestions["SG202"]
    assert "nonzero_static" in suggestions["SG202"]
