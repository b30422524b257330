"""SG301-SG306: host-to-device copies, and the placement facts they rely on."""

from __future__ import annotations

import pytest

from syncguard.testing import lint_snippet

HOT = """
import numpy as np
import torch
from torch import nn

class Model(nn.Module):
    def __init__(self, flag):
        super().__init__()
        self.dev = torch.zeros(64, device="cuda")
        self.stage = torch.empty(64, pin_memory=True)
        self.stage_maybe = torch.empty(64, pin_memory=flag)
        self.pageable = torch.zeros(64)
        self.weight = nn.Parameter(torch.zeros(64))
        self.late = None
        if flag:
            self.late = torch.empty(64, pin_memory=True)

    def forward(self, x, lens: list[int], n: int, arr: np.ndarray, ids_cpu, seq_lens_cpu):
{body}
"""
FIRST_BODY_LINE = 17  # the forward line: body lines count from 1


def findings(body: str) -> list[tuple[str, int]]:
    """(code, line within ``body``) of the SG3xx findings for ``body`` in a hot forward."""
    indented = "\n".join("        " + line for line in body.strip().splitlines())
    result = lint_snippet(HOT.format(body=indented), select=("SG3",))
    assert not result.problems
    return [(f.code, f.span.line - FIRST_BODY_LINE) for f in result.findings]


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("torch.tensor(lens, device=x.device)", "SG301"),
        ("torch.as_tensor(lens, device='cuda')", "SG301"),
        ("torch.asarray(arr, device=x.device)", "SG301"),
        ("x.new_tensor(lens)", "SG301"),
        ("torch.from_numpy(arr).to(x.device)", "SG302"),
        ("torch.from_numpy(arr).cuda()", "SG302"),
        ("ids_cpu.to('cuda')", "SG302"),
        ("self.stage.to(x.device)", "SG302"),  # pinned, but blocking without non_blocking
        ("self.dev.copy_(ids_cpu)", "SG302"),
        ("self.dev.copy_(self.pageable, non_blocking=True)", "SG303"),
        ("self.pageable[:n].to(x.device, non_blocking=True)", "SG303"),
        ("torch.tensor(lens).cuda(non_blocking=True)", "SG303"),
        ("torch.cat([torch.from_numpy(arr)]).to(x.device, non_blocking=True)", "SG303"),
        ("self.dev[0] = 0", "SG304"),
        ("self.dev[-1] = 1.5", "SG304"),
        ("self.dev[n] = len(lens)", "SG304"),
        ("x.cuda()[torch.arange(n)]", "SG305"),
        ("self.dev[ids_cpu.long()]", "SG305"),
        ("self.dev.copy_(ids_cpu.pin_memory(), non_blocking=True)", "SG306"),
    ],
)
def test_blocking_copy_is_reported(body: str, expected: str) -> None:
    assert [code for code, _ in findings(body)] == [expected]


@pytest.mark.parametrize(
    "body",
    [
        "torch.tensor(lens)",  # stays on the host
        "torch.tensor([], device=x.device)",
        "torch.as_tensor(x.argmax(-1), device=x.device)",  # already device data
        "torch.tensor(lens, pin_memory=True).to(x.device, non_blocking=True)",
        "self.stage.to(x.device, non_blocking=True)",
        "self.stage_maybe[:n].to(x.device, non_blocking=True)",  # pin_memory=FLAG
        "self.late.to(x.device, non_blocking=True)",  # None on the other branch
        "self.dev.copy_(self.stage[:n], non_blocking=True)",
        "self.stage.copy_(x, non_blocking=True)",  # into pinned memory
        "torch.empty(n, pin_memory=True)",
        "torch.randn(n).pin_memory()",  # no copy follows
        "seq_lens_cpu.to(x.device, non_blocking=True)",  # made elsewhere: pinning unknown
        "self.weight.to(x.device)",  # a parameter moves with the module
        "x.to('cuda')",  # may already be on the device
        "x.to(torch.float16)",
        "self.dev[:1] = 0",
        "self.dev[0] = x.sum()",
        "self.dev[mask_cpu > 0]",
        "ids_cpu[0] = 1",
        "lens[0] = 1",
        "x[torch.arange(n, device=x.device)]",
    ],
)
def test_sync_free_or_unknown_copy_is_not_reported(body: str) -> None:
    assert findings(body) == []


def test_method_of_self_returns_data_where_its_arguments_live() -> None:
    # self.mlp(x) is not host data: moving it is not a host-to-device copy.
    assert findings("h = self.mlp(x)\nh.to(x.device)\nself.proj.forward(x).cuda()") == []


def test_lazy_initialisation_runs_once_and_is_not_reported() -> None:
    body = """
if self.late is None or self.late.device != x.device:
    self.late = torch.ones(4).to(x.device)
if n not in _CACHE:
    _CACHE[n] = torch.from_numpy(arr).to(x.device)
out = None
if out is None:
    out = torch.from_numpy(arr).to(x.device)
"""
    source = HOT.replace("class Model", "_CACHE = dict()\n\nclass Model")
    indented = "\n".join("        " + line for line in body.strip().splitlines())
    result = lint_snippet(source.format(body=indented), select=("SG3",))
    # Only the local `out`, rebuilt every call, is per-step work.
    assert [(f.code, f.span.line - FIRST_BODY_LINE - 2) for f in result.findings] == [("SG302", 7)]


def test_copy_findings_carry_the_documented_fixes() -> None:
    body = "self.dev[0] = 0\nself.dev[n] = 0\nt = torch.tensor(lens, device=x.device)"
    indented = "\n".join("        " + line for line in body.splitlines())
    result = lint_snippet(HOT.format(body=indented), select=("SG3",))
    fixes = {(f.code, f.span.line - FIRST_BODY_LINE): f.fix for f in result.findings}
    literal, variable, tensor = fixes[("SG304", 1)], fixes[("SG304", 2)], fixes[("SG301", 3)]
    assert literal is not None and literal.applicability == "safe"
    assert (literal.codemod, literal.span.line - FIRST_BODY_LINE) == ("one-element-slice", 1)
    assert variable is None  # [n:n+1] would be wrong for n == -1: suggestion only
    assert tensor is not None and tensor.applicability == "unsafe"
    assert tensor.codemod == "pinned-copy"
