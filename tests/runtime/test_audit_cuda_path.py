"""The CUDA detection path. Its logic runs on CPU too: the debug-mode warning is emitted
the way torch emits it (from a frame inside torch), wrappers record before delegating, and
the arming of the debug mode is observed through a stand-in for torch.cuda. The tests at
the end need a GPU and check the real thing."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from syncguard.runtime import SyncError, _wrappers, audit, sync_audit

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
MESSAGE = "called a synchronizing CUDA operation"

_FAKE_TORCH_SOURCE = f'''
import warnings

def synchronizing_op(warnings_per_call=1):
    """Stands for a torch op that raises the debug-mode warning once or several times."""
    for _ in range(warnings_per_call):
        warnings.warn("{MESSAGE}", UserWarning)

def binding_with_a_python_kernel(op, *args):
    """Stands for a binding whose Python kernel calls ``op``: torch's warning handler emits
    the kernel's debug-mode warning when the binding returns."""
    op(*args)
    warnings.warn("{MESSAGE}", UserWarning)
'''


def _load_fake_torch() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    filename = os.path.join(os.path.dirname(torch.__file__), "_syncguard_test_op.py")
    exec(compile(_FAKE_TORCH_SOURCE, filename, "exec"), namespace)
    return namespace


_FAKE_TORCH = _load_fake_torch()
synchronizing_op: Callable[..., None] = _FAKE_TORCH["synchronizing_op"]
binding_with_a_python_kernel: Callable[..., None] = _FAKE_TORCH["binding_with_a_python_kernel"]


def here() -> int:
    return sys._getframe(1).f_lineno + 1


def cuda_path(mode: str = "record", **options: Any) -> Any:
    return sync_audit(mode, simulate=False, **options)


def test_several_warnings_of_one_call_are_one_event() -> None:
    with cuda_path() as recorded:
        line = here()
        synchronizing_op(2)  # repeat_interleave, bincount
        synchronizing_op(8)  # print(t)
    assert [event.line for event in recorded.events] == [line, line + 1]
    assert all(event.path == __file__ for event in recorded.events)
    assert recorded.events[0].detail == "set_sync_debug_mode"


def test_a_loop_is_one_event_per_call() -> None:
    with cuda_path() as recorded:
        line = here()
        [synchronizing_op(2) for _ in range(3)]
    assert [event.line for event in recorded.events] == [line] * 3


def test_torch_frames_are_skipped_unless_asked_for() -> None:
    with cuda_path(include_torch_frames=True) as recorded:
        synchronizing_op()
    (event,) = recorded.events
    assert event.path.endswith("_syncguard_test_op.py")
    assert any("test_audit_cuda_path.py:" in entry for entry in event.stack)


def test_raise_mode_raises_from_the_warning() -> None:
    with pytest.raises(SyncError, match="synchronizing_op"), cuda_path("raise"):
        synchronizing_op()


def test_sync_warnings_of_other_threads_are_swallowed_not_recorded() -> None:
    with warnings.catch_warnings(record=True) as leaked, cuda_path() as recorded:
        thread = threading.Thread(target=synchronizing_op)
        thread.start()
        thread.join()
    assert recorded.events == []
    assert [str(w.message) for w in leaked] == []


def test_other_warnings_still_reach_the_previous_handler() -> None:
    with pytest.warns(DeprecationWarning, match="unrelated"), cuda_path() as recorded:
        warnings.warn("unrelated", DeprecationWarning, stacklevel=1)
        synchronizing_op()
    assert recorded.count == 1


def test_the_hook_is_reinstalled_by_each_audited_call() -> None:
    @cuda_path()
    def step() -> None:
        synchronizing_op()

    with cuda_path() as outer:
        warnings.resetwarnings()  # what pytest does between tests
        warnings.showwarning = warnings._showwarning_orig  # type: ignore[attr-defined]
        step()
        step()
    assert step.audit.count == 2  # type: ignore[attr-defined]
    assert outer.count == 2


def test_explicit_synchronizes_are_recorded_before_delegating() -> None:
    stream_sync = vars(torch.cuda.Stream)["synchronize"]
    event_sync = vars(torch.cuda.Event)["synchronize"]
    with cuda_path() as recorded:
        line = here()
        with contextlib.suppress(Exception):  # no CUDA: the real call fails after recording
            torch.cuda.synchronize()
        with contextlib.suppress(Exception):
            torch.cuda.Stream.synchronize(object())  # type: ignore[arg-type]
        with contextlib.suppress(Exception):
            torch.cuda.Event.synchronize(object())  # type: ignore[arg-type]
    assert [event.kind for event in recorded.events] == ["explicit"] * 3
    assert [event.detail for event in recorded.events] == [
        "torch.cuda.synchronize",
        "Stream.synchronize",
        "Event.synchronize",
    ]
    assert recorded.events[0].line == line + 1
    assert vars(torch.cuda.Stream)["synchronize"] is stream_sync
    assert vars(torch.cuda.Event)["synchronize"] is event_sync


def test_explicit_synchronize_in_raise_mode_raises_before_waiting() -> None:
    with pytest.raises(SyncError, match="explicit"), cuda_path("raise"):
        torch.cuda.synchronize()


def fake(device: str, pinned: bool = False, contiguous: bool = True) -> Any:
    return SimpleNamespace(
        device=torch.device(device),
        is_cuda=device == "cuda",
        is_cpu=device == "cpu",
        is_pinned=lambda: pinned,
        is_contiguous=lambda: contiguous,
    )


@pytest.mark.parametrize(
    ("source", "target", "non_blocking", "destination", "expected"),
    [
        (fake("cpu"), "cuda", False, None, ("host-to-device", "blocking host-to-device copy")),
        (fake("cpu", pinned=True), "cuda", False, None, ("host-to-device", "blocking")),
        (fake("cpu"), "cuda", True, None, ("host-to-device", "pageable host memory")),
        (fake("cpu", True, contiguous=False), "cuda", True, None, ("host-to-device", "non-cont")),
        (fake("cpu", pinned=True), "cuda", True, None, None),
        (fake("cuda"), "cpu", False, None, ("device-to-host", "blocking device-to-host copy")),
        (fake("cuda"), "cpu", True, None, None),
        (fake("cuda"), "cpu", True, fake("cpu", pinned=True), None),
        (fake("cuda"), "cpu", True, fake("cpu"), ("device-to-host", "into pageable")),
        (fake("cuda"), "cuda", False, None, None),
        (fake("cpu"), "meta", False, None, None),
    ],
)
def test_which_copies_block(
    source: Any, target: str, non_blocking: bool, destination: Any, expected: Any
) -> None:
    found = _wrappers.transfer_check(source, torch.device(target), non_blocking, destination)
    if expected is None:
        assert found is None
    else:
        assert found is not None and found[0] == expected[0] and expected[1] in found[1]


class StandInCuda:
    """Records the sync debug mode the way torch.cuda keeps it."""

    def __init__(self) -> None:
        self.mode = 0
        self.capturing = False
        self.mode_at_capture: list[int] = []

    def set_sync_debug_mode(self, mode: str | int) -> None:
        self.mode = {"default": 0, "warn": 1, "error": 2}.get(mode, mode)  # type: ignore[call-overload]

    def capture_begin(self, graph: object, *args: Any, **kwargs: Any) -> None:
        self.mode_at_capture.append(self.mode)

    def capture_end(self, graph: object) -> None:
        self.mode_at_capture.append(self.mode)


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> StandInCuda:
    cuda = StandInCuda()
    monkeypatch.setattr(audit, "_cuda_available", True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: cuda.capturing)
    monkeypatch.setattr(torch.cuda, "get_sync_debug_mode", lambda: cuda.mode)
    monkeypatch.setattr(torch.cuda, "set_sync_debug_mode", cuda.set_sync_debug_mode)
    monkeypatch.setattr(torch.cuda.CUDAGraph, "capture_begin", cuda.capture_begin)
    monkeypatch.setattr(torch.cuda.CUDAGraph, "capture_end", cuda.capture_end)
    return cuda


def test_debug_mode_is_armed_once_and_restored(stand_in: StandInCuda) -> None:
    with sync_audit("record"):
        assert stand_in.mode == 1
        with sync_audit("record"):
            assert stand_in.mode == 1
        assert stand_in.mode == 1
    assert stand_in.mode == 0


def test_debug_mode_is_never_armed_across_graph_capture(stand_in: StandInCuda) -> None:
    graph = object()
    with sync_audit("record"):
        torch.cuda.CUDAGraph.capture_begin(graph)  # type: ignore[arg-type]
        assert stand_in.mode == 0
        torch.cuda.CUDAGraph.capture_end(graph)  # type: ignore[arg-type]
        assert stand_in.mode == 1
    assert stand_in.mode_at_capture == [0, 0]


def test_an_audit_started_inside_a_capture_does_not_arm(stand_in: StandInCuda) -> None:
    stand_in.capturing = True
    with sync_audit("record"):
        assert stand_in.mode == 0
        stand_in.capturing = False
        torch.cuda.CUDAGraph.capture_end(object())  # type: ignore[arg-type]
        assert stand_in.mode == 1
    assert stand_in.mode == 0


def test_a_user_debug_mode_is_kept(stand_in: StandInCuda) -> None:
    stand_in.mode = 2
    with sync_audit("record"):
        assert stand_in.mode == 1
    assert stand_in.mode == 2


# --- torch.ops calls: their debug-mode warnings never reach Python -------------------
#
# On a GPU, a sync inside ``torch.ops.aten.<op>.<overload>(...)`` only prints torch's C++
# warning to stderr (the operator sweep: 9 such syncs, none recorded). The op-call wrappers
# judge these calls themselves; here CPU tensors stand for device ones.

aten = torch.ops.aten


@pytest.fixture
def on_gpu(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """``on_gpu(t, ...)``: the wrappers take these CPU tensors to live on a CUDA device."""
    chosen: set[int] = set()
    real = _wrappers._device_type
    monkeypatch.setattr(_wrappers, "_device_type", lambda t: "cuda" if id(t) in chosen else real(t))
    return lambda *tensors: chosen.update(map(id, tensors))


def device_values(on_gpu: Callable[..., None]) -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    x = torch.randn(64)
    values = {
        "x": x,
        "buffer": x.clone(),
        "mask": x > 0,
        "reps": torch.tensor([1, 2, 3]),
        "scalar": torch.tensor(3.0),
    }
    on_gpu(*values.values())
    return values


def test_each_syncing_torch_ops_call_is_one_event_at_its_line(on_gpu: Any) -> None:
    v = device_values(on_gpu)
    x, mask, reps, scalar = v["x"], v["mask"], v["reps"], v["scalar"]
    with cuda_path() as recorded:
        line = here()
        aten._local_scalar_dense.default(scalar)
        aten.item.default(scalar)
        aten.nonzero.default(mask)
        aten.masked_select.default(x, mask)
        aten.repeat_interleave.Tensor(reps)
        aten.index.Tensor(x, [mask])
        aten.index_put_.default(v["buffer"], [mask], scalar)
        aten._to_copy.default(x, device="cpu")
        aten.copy_.default(torch.empty(64), x)
        torch.ops.aten.nonzero(mask)  # the packet, resolved to nonzero.default
        aten.repeat_interleave(reps)  # resolved to repeat_interleave.Tensor
        for _ in range(2):
            aten.argwhere.default(mask)
        aten.nonzero.default(self=mask)
    expected = [
        (0, "scalar-conversion", "aten._local_scalar_dense.default()"),
        (1, "scalar-conversion", "aten.item.default()"),
        (2, "data-dependent-shape", "aten.nonzero.default()"),
        (3, "data-dependent-shape", "aten.masked_select.default()"),
        (4, "data-dependent-shape", "aten.repeat_interleave.Tensor()"),
        (5, "data-dependent-shape", "aten.index.Tensor()"),
        (6, "data-dependent-shape", "aten.index_put_.default()"),
        (7, "device-to-host", "aten._to_copy.default()"),
        (8, "device-to-host", "aten.copy_.default()"),
        (9, "data-dependent-shape", "torch.ops.aten.nonzero()"),
        (10, "data-dependent-shape", "aten.repeat_interleave()"),
        (12, "data-dependent-shape", "aten.argwhere.default()"),
        (12, "data-dependent-shape", "aten.argwhere.default()"),
        (13, "data-dependent-shape", "aten.nonzero.default()"),
    ]
    got = [(e.line - line, e.kind, e.op) for e in recorded.events]
    assert got == expected, recorded.report(rich=False)
    assert {e.path for e in recorded.events} == {__file__}
    assert not any(e.simulated for e in recorded.events)
    assert recorded.events[2].detail == "torch.ops.aten.nonzero.default"
    assert recorded.events[7].detail == "blocking device-to-host copy"


def test_sync_free_torch_ops_calls_are_not_reported(on_gpu: Any) -> None:
    v = device_values(on_gpu)
    x, mask, reps = v["x"], v["mask"], v["reps"]
    host_mask = x < 0  # a CPU tensor: calls that mix in host memory are left to the debug mode
    with cuda_path() as recorded:
        aten.repeat_interleave.Tensor(reps, output_size=6)
        aten.repeat_interleave(reps, output_size=6)
        aten.where.self(mask, x, x)
        aten.masked_fill.Scalar(x, mask, 0.0)
        aten.index_put_.default(v["buffer"], [mask], torch.tensor(0.0))  # a host 0-d value
        aten.add.Tensor(x, x, alpha=2)
        aten._to_copy.default(x, dtype=torch.float16)
        aten.nonzero.default(host_mask)
    assert recorded.events == [], recorded.report(rich=False)


def test_a_torch_ops_call_torch_also_warns_about_is_one_event(on_gpu: Any) -> None:
    """Inside a binding that has torch's Python warning handler (a Python kernel dispatched
    from C++), the debug-mode warning comes too, when the binding returns."""
    mask = device_values(on_gpu)["mask"]
    with cuda_path() as recorded:
        line = here()
        binding_with_a_python_kernel(aten.nonzero.default, mask)
        binding_with_a_python_kernel(aten.add.Tensor, mask, mask)  # the warning alone
    assert [(e.line - line, e.kind, e.detail) for e in recorded.events] == [
        (0, "data-dependent-shape", "torch.ops.aten.nonzero.default"),
        (1, "scalar-conversion", "set_sync_debug_mode"),
    ]


def test_a_torch_ops_call_in_raise_mode_raises_before_the_op(on_gpu: Any) -> None:
    v = device_values(on_gpu)
    target = v["buffer"]
    before = target.clone()
    with pytest.raises(SyncError, match="index_put_"), cuda_path("raise"):
        aten.index_put_.default(target, [v["mask"]], v["scalar"])
    assert torch.equal(target, before)


def test_a_torch_ops_call_is_judged_where_its_kernel_runs(on_gpu: Any) -> None:
    """Under a dispatch mode the mode decides what runs: a pass-through mode's own call is
    the one judged; fake tensors run no kernel at all."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    class PassThrough(TorchDispatchMode):
        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            return func(*args, **(kwargs or {}))  # the kernel runs here

    class Plain(torch.Tensor):  # a subclass without a dispatch of its own: the kernel runs
        pass

    v = device_values(on_gpu)
    plain = v["mask"].as_subclass(Plain)
    matrix = torch.randn(3, 3)
    with FakeTensorMode() as fake_mode:
        fake = fake_mode.from_tensor(matrix)
    on_gpu(plain, matrix, fake)
    with cuda_path() as recorded:
        with PassThrough():
            aten.nonzero.default(v["mask"])
            aten._to_copy.default(v["x"], device="cpu")
        line = here()
        aten.nonzero.default(plain)
        with fake_mode:
            aten.linalg_eig.default(fake)
        aten.linalg_eig.default(matrix)
    sites = [(e.function.rpartition("<locals>.")[2], e.op, e.line) for e in recorded.events]
    assert sites == [
        ("PassThrough.__torch_dispatch__", "func()", sites[0][2]),
        ("PassThrough.__torch_dispatch__", "func()", sites[0][2]),
        ("test_a_torch_ops_call_is_judged_where_its_kernel_runs", "aten.nonzero.default()", line),
        (
            "test_a_torch_ops_call_is_judged_where_its_kernel_runs",
            "aten.linalg_eig.default()",
            line + 3,
        ),
    ], recorded.report(rich=False)


def test_torch_ops_calls_outside_an_audit_are_not_judged(on_gpu: Any) -> None:
    mask = device_values(on_gpu)["mask"]
    original = vars(torch._ops.OpOverload)["__call__"]
    with cuda_path() as recorded:
        assert vars(torch._ops.OpOverload)["__call__"] is not original
    aten.nonzero.default(mask)
    assert recorded.events == []
    assert vars(torch._ops.OpOverload)["__call__"] is original


# --- on a real GPU --------------------------------------------------------------------


@needs_cuda
def test_gpu_one_event_per_blocking_call() -> None:
    reps = torch.tensor([1, 2, 3], device="cuda")
    x = torch.randn(64, device="cuda")
    with sync_audit("record") as recorded:
        torch.repeat_interleave(reps)
        print(x)
        x.sum().item()
        torch.repeat_interleave(reps, output_size=6)
    assert recorded.count == 3, recorded.report()
    assert recorded.events[0].kind == "data-dependent-shape"


@needs_cuda
def test_gpu_copies_and_synchronizes() -> None:
    pageable = torch.randn(1 << 16)
    pinned = pageable.pin_memory()
    buffer = torch.empty(1 << 16, device="cuda")
    with sync_audit("record") as recorded:
        buffer.copy_(pageable, non_blocking=True)
        buffer.copy_(pinned, non_blocking=True)
        torch.cuda.current_stream().synchronize()
        torch.cuda.synchronize()
    assert [event.kind for event in recorded.events] == [
        "host-to-device",
        "explicit",
        "explicit",
    ]


@needs_cuda
def test_gpu_graph_capture_under_an_audit() -> None:
    graph = torch.cuda.CUDAGraph()
    static = torch.zeros(8, device="cuda")
    torch.cuda.synchronize()
    with sync_audit("record") as recorded:
        with torch.cuda.graph(graph):
            static.add_(1)
        assert torch.cuda.get_sync_debug_mode() == 1
        graph.replay()
    assert torch.cuda.get_sync_debug_mode() == 0
    assert {event.kind for event in recorded.events} <= {"explicit"}


@needs_cuda
def test_gpu_torch_ops_calls_are_recorded() -> None:
    x = torch.randn(64, device="cuda")
    mask, scalar = x > 0, x.sum()
    with sync_audit("record") as recorded:
        line = here()
        aten.nonzero.default(mask)
        aten._local_scalar_dense.default(scalar)
        aten.index.Tensor(x, [mask])
        aten.where.self(mask, x, x)
    assert [event.line - line for event in recorded.events] == [0, 1, 2], recorded.report()
