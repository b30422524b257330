"""Simulation: each op that syncs on a GPU gives exactly one event (right kind, op, line);
the sync-free alternatives of the ground-truth tables give none."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from syncguard.runtime import KINDS, SyncAudit, mark_host, sync_audit

DDS, D2H, H2D, SCALAR = (
    "data-dependent-shape",
    "device-to-host",
    "host-to-device",
    "scalar-conversion",
)


def tensors() -> dict[str, Any]:
    """Fresh CPU tensors standing for device tensors."""
    torch.manual_seed(0)
    x = torch.randn(64)
    return {
        "x": x,
        "y": x.clone(),
        "t": torch.tensor(3.0),
        "mask": x > 0,
        "idx": torch.randint(0, 10, (32,)),
        "reps": torch.tensor([1, 2, 3]),
        "buf": torch.zeros(16),
        "probs": torch.ones(4) / 4,
    }


def audit_of(op: Callable[[dict[str, Any]], object]) -> SyncAudit:
    values = tensors()
    with sync_audit("record", simulate=True) as audit:
        op(values)
    return audit


def line_of(op: Callable[..., object]) -> int:
    return op.__code__.co_firstlineno


# (kind, op as written at the call site, the call)
BLOCKING: list[tuple[str, str, Callable[[dict[str, Any]], object]]] = [
    (SCALAR, ".item()", lambda v: v["x"].sum().item()),
    (D2H, ".tolist()", lambda v: v["idx"].tolist()),
    (DDS, ".nonzero()", lambda v: v["mask"].nonzero()),
    (DDS, "torch.nonzero()", lambda v: torch.nonzero(v["mask"])),
    (DDS, "torch.where()", lambda v: torch.where(v["mask"])),
    (DDS, "[...]", lambda v: v["x"][v["mask"]]),
    (DDS, "torch.masked_select()", lambda v: torch.masked_select(v["x"], v["mask"])),
    (DDS, "torch.unique()", lambda v: torch.unique(v["idx"])),
    (DDS, "torch.unique_consecutive()", lambda v: torch.unique_consecutive(v["idx"])),
    (DDS, "torch.repeat_interleave()", lambda v: torch.repeat_interleave(v["reps"])),
    (DDS, "torch.bincount()", lambda v: torch.bincount(v["idx"])),
    (DDS, "torch.bincount()", lambda v: torch.bincount(v["idx"], minlength=100)),
    (DDS, "torch.argwhere()", lambda v: torch.argwhere(v["mask"])),
    (DDS, "torch.histc()", lambda v: torch.histc(v["x"])),
    (SCALAR, "F.one_hot()", lambda v: F.one_hot(v["idx"])),
    (D2H, ".cpu()", lambda v: v["x"].cpu()),
    (D2H, ".to()", lambda v: v["x"].to("cpu")),
    (D2H, ".cpu()", lambda v: v["x"].cpu().numpy()),
    (D2H, ".cpu()", lambda v: v["x"].cpu().tolist()),
    (SCALAR, "bool()", lambda v: bool(v["mask"].any())),
    (SCALAR, "int()", lambda v: int(v["idx"].max())),
    (SCALAR, "float()", lambda v: float(v["t"])),
    (SCALAR, "bool()", lambda v: 1 if (v["x"].sum() > 0) else 0),
    (SCALAR, "format()", lambda v: f"{v['t']}"),
    (SCALAR, "range()", lambda v: range(v["idx"][0])),
    (SCALAR, "torch.zeros()", lambda v: torch.zeros(v["idx"][0])),
    (D2H, "str()", lambda v: str(v["x"])),
    (D2H, "repr()", lambda v: repr(v["x"])),
    (SCALAR, "torch.allclose()", lambda v: torch.allclose(v["x"], v["y"])),
    (SCALAR, "torch.equal()", lambda v: torch.equal(v["x"], v["y"])),
    (SCALAR, ".is_nonzero()", lambda v: v["t"].is_nonzero()),
    (D2H, ".tolist()", lambda v: (v["x"].sum() > 0).tolist()),
    (SCALAR, ".masked_fill()", lambda v: v["x"].masked_fill(v["mask"], v["t"])),
    (DDS, ".__setitem__()", lambda v: v["x"].__setitem__(v["mask"], v["t"])),
    (H2D, ".copy_()", lambda v: v["buf"].copy_(torch.tensor([1.0] * 16))),
    (SCALAR, "torch.normal()", lambda v: torch.normal(v["x"], torch.ones(64))),
    (SCALAR, "torch.linalg.inv()", lambda v: torch.linalg.inv(torch.eye(3))),
    (
        SCALAR,
        "torch.distributions.Categorical()",
        lambda v: torch.distributions.Categorical(probs=v["probs"], validate_args=True),
    ),
    # the torch.ops.aten spellings the operator sweep ran
    (
        SCALAR,
        "torch.ops.aten._local_scalar_dense.default()",
        lambda v: torch.ops.aten._local_scalar_dense.default(v["t"]),
    ),
    (SCALAR, "torch.ops.aten.item.default()", lambda v: torch.ops.aten.item.default(v["t"])),
    (DDS, "torch.ops.aten.nonzero.default()", lambda v: torch.ops.aten.nonzero.default(v["mask"])),
    (DDS, "torch.ops.aten.nonzero()", lambda v: torch.ops.aten.nonzero(v["mask"])),
    (
        DDS,
        "torch.ops.aten.masked_select.default()",
        lambda v: torch.ops.aten.masked_select.default(v["x"], v["mask"]),
    ),
    (
        DDS,
        "torch.ops.aten.repeat_interleave.Tensor()",
        lambda v: torch.ops.aten.repeat_interleave.Tensor(v["reps"]),
    ),
    (
        DDS,
        "torch.ops.aten.index.Tensor()",
        lambda v: torch.ops.aten.index.Tensor(v["x"], [v["mask"]]),
    ),
    (
        DDS,
        "torch.ops.aten.index_put_.default()",
        lambda v: torch.ops.aten.index_put_.default(v["x"], [v["mask"]], v["t"]),
    ),
    (
        D2H,
        "torch.ops.aten._to_copy.default()",
        lambda v: torch.ops.aten._to_copy.default(v["x"], device="cpu"),
    ),
]

SYNC_FREE: list[Callable[[dict[str, Any]], object]] = [
    lambda v: torch.nonzero_static(v["mask"], size=16),
    lambda v: torch.where(v["mask"], v["x"], 0.0),
    lambda v: v["x"].__setitem__(v["mask"], 0.0),
    lambda v: v["x"].masked_fill(v["mask"], 0.0),
    lambda v: torch.repeat_interleave(v["reps"], output_size=6),
    lambda v: v["x"].repeat_interleave(2),
    lambda v: v["x"].to("cpu", non_blocking=True),
    lambda v: torch.cumsum(v["idx"], 0),
    lambda v: torch.arange(10),
    lambda v: torch.topk(v["x"], 8),
    lambda v: torch.sort(v["idx"]),
    lambda v: torch.index_select(v["x"], 0, v["idx"]),
    lambda v: v["x"][v["idx"]],
    lambda v: torch.multinomial(v["probs"], 1),
    lambda v: torch.histc(v["x"], min=-1, max=1),
    lambda v: F.one_hot(v["idx"], 10),
    lambda v: torch.distributions.Categorical(probs=v["probs"], validate_args=False),
    lambda v: v["mask"].any(),
    lambda v: torch.randperm(8),
    lambda v: v["x"].median(),
    lambda v: v["buf"].__setitem__(slice(0, 1), 0),
    lambda v: v["buf"].fill_(v["t"]),
    lambda v: torch.equal(v["x"], v["x"]),
    lambda v: torch._assert_async(v["t"] > 0),
    lambda v: v["x"] * 2 + 1,
    lambda v: torch.ops.aten.repeat_interleave.Tensor(v["reps"], output_size=6),
    lambda v: torch.ops.aten._to_copy.default(v["x"], dtype=torch.float64),
    lambda v: torch.ops.aten.where.self(v["mask"], v["x"], v["y"]),
]


@pytest.mark.parametrize(("kind", "op", "call"), BLOCKING, ids=[row[1] for row in BLOCKING])
def test_each_blocking_op_gives_one_event_at_its_line(
    kind: str, op: str, call: Callable[[dict[str, Any]], object]
) -> None:
    audit = audit_of(call)
    assert audit.count == 1, audit.report()
    event = audit.events[0]
    assert event.kind == kind
    assert event.path == __file__
    assert event.line == line_of(call)
    assert event.simulated
    if sys.version_info >= (3, 11):  # call sites are named from co_positions
        assert event.op.endswith(op), event
    else:
        assert event.op == event.detail


@pytest.mark.parametrize("call", SYNC_FREE, ids=[f"free{i}" for i in range(len(SYNC_FREE))])
def test_sync_free_alternatives_give_no_event(call: Callable[[dict[str, Any]], object]) -> None:
    audit = audit_of(call)
    assert audit.events == [], audit.report()


def test_a_loop_gives_one_event_per_call() -> None:
    values = tensors()
    with sync_audit("record", simulate=True) as audit:
        [values["idx"][i].item() for i in range(3)]
        for _ in range(2):
            torch.repeat_interleave(values["reps"])
    assert [event.line for event in audit.events] == [
        line_of(test_a_loop_gives_one_event_per_call) + 3
    ] * 3 + [line_of(test_a_loop_gives_one_event_per_call) + 5] * 2


def test_calls_inside_a_helper_are_attributed_to_the_helper_line() -> None:
    def helper(t: torch.Tensor) -> float:
        return t.sum().item()

    values = tensors()
    with sync_audit("record", simulate=True) as audit:
        helper(values["x"])
    (event,) = audit.events
    assert event.line == line_of(helper) + 1
    assert event.function.endswith("helper")
    assert event.stack[0].endswith("in " + event.function)
    assert "test_calls_inside_a_helper" in event.stack[1]


def test_host_tensors_do_not_sync() -> None:
    cu_seqlens_cpu = mark_host(torch.tensor([0, 4, 9, 16]))
    array = np.arange(6)
    with sync_audit("record", simulate=True) as audit:
        lengths = cu_seqlens_cpu[1:] - cu_seqlens_cpu[:-1]
        lengths.tolist()
        int(lengths.max())
        torch.from_numpy(array).tolist()
    assert audit.events == [], audit.report()


def test_a_device_copy_to_host_is_a_new_host_tensor() -> None:
    x = torch.randn(4)
    with sync_audit("record", simulate=True) as audit:
        host = x.cpu()
        host.tolist()  # already on the host: no second sync
        x.tolist()  # x still stands for a device tensor
    details = [event.detail for event in audit.events]
    assert details == [".cpu() (simulated)", "tolist() (simulated)"]
    assert host is not x and host.data_ptr() == x.data_ptr()


def test_device_agnostic_to_is_not_a_copy_to_host() -> None:
    device = torch.device("cpu")
    x = torch.randn(4)
    with sync_audit("record", simulate=True) as audit:
        x.to(device)
        x.to(torch.float64)
    assert audit.events == []


def test_kinds_are_the_documented_ones() -> None:
    assert {row[0] for row in BLOCKING} | {"explicit"} == set(KINDS)


def test_the_report_says_it_simulated() -> None:
    audit = audit_of(lambda v: v["x"].sum().item())
    assert "simulation (requested)" in audit.report()


@pytest.mark.skipif(torch.cuda.is_available(), reason="the default is CUDA where it exists")
def test_simulation_is_the_default_without_cuda() -> None:
    with sync_audit("record") as audit:
        torch.ones(2).sum().item()
    assert audit.count == 1
    assert "simulation (CUDA is not available)" in audit.report()


_TORCH_SIDE_CONTEXT = '''
import contextlib
import torch

@contextlib.contextmanager
def entered():
    """Stands for a torch context manager that syncs when entered (cudagraph trees do)."""
    torch.ones(3).sum().item()
    yield
'''


def test_a_sync_inside_the_standard_library_is_the_callers() -> None:
    import os

    namespace: dict[str, Any] = {}
    filename = os.path.join(os.path.dirname(torch.__file__), "_syncguard_test_context.py")
    exec(compile(_TORCH_SIDE_CONTEXT, filename, "exec"), namespace)
    with sync_audit("record", simulate=True) as audit:
        line = sys._getframe().f_lineno + 1
        with namespace["entered"]():  # torch -> contextlib.__enter__ -> this line
            pass
    (event,) = audit.events
    assert (event.path, event.line) == (__file__, line)


@pytest.mark.parametrize("fused", [False, True], ids=["sgd", "fused-sgd"])
def test_a_grad_scaler_step_syncs_unless_the_optimizer_is_fused(fused: bool) -> None:
    """SG116's syncs: ``GradScaler.step`` reads ``found_inf`` with ``.item()`` unless the
    optimizer unscales and skips itself (a fused one); ``get_scale`` reads the scale. A
    scaler for the CPU stands for a GPU one here (``GradScaler("cuda")`` disables itself
    where CUDA is missing)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, fused=fused)
    scaler = torch.amp.GradScaler("cpu")
    x = torch.randn(8, 4)
    with sync_audit("record", simulate=True) as audit:
        start = sys._getframe().f_lineno
        for _ in range(2):
            scaler.scale(model(x).square().mean()).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
        scaler.get_scale()
    sites = [(event.line - start, event.op, event.kind) for event in audit.events]
    steps = [] if fused else [(3, ".step()", SCALAR)] * 2
    assert sites == [*steps, (6, ".get_scale()", SCALAR)], audit.report(rich=False)
