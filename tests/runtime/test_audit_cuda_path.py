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
'''


def _load_fake_op() -> Callable[..., None]:
    namespace: dict[str, Any] = {}
    filename = os.path.join(os.path.dirname(torch.__file__), "_syncguard_test_op.py")
    exec(compile(_FAKE_TORCH_SOURCE, filename, "exec"), namespace)
    return namespace["synchronizing_op"]  # type: ignore[no-any-return]


synchronizing_op = _load_fake_op()


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
