"""Torch is always restored (issues 13.4 and 17.4): after exceptions and KeyboardInterrupt,
nested audits, audits in other threads, decorated generators, coroutines and async
generators, audits exited from another thread or task, and audits never exited (released
when garbage-collected or at interpreter exit). Simulation and the CUDA path (run here on
CPU) alike: both patch torch, simulation also pushes a dispatch mode per thread."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
import torch

from syncguard.runtime import SyncError, sync_audit

State = Callable[[], dict[str, Any]]
DETECTIONS = pytest.mark.parametrize("simulate", [True, False], ids=["simulation", "cuda-path"])


def sync_once() -> float:
    return torch.ones(4).sum().item()


def read_back() -> None:
    """A sync both detections see, also on CPU (a wrapped function, recorded first)."""
    with contextlib.suppress(AssertionError, RuntimeError):  # no CUDA here
        torch.cuda.synchronize()


@DETECTIONS
@pytest.mark.parametrize("error", [ValueError("boom"), KeyboardInterrupt()])
def test_restored_after_an_exception(snapshot: State, simulate: bool, error: BaseException) -> None:
    before = snapshot()
    with pytest.raises(type(error)), sync_audit("record", simulate=simulate):
        assert snapshot() != before
        read_back()
        raise error
    assert snapshot() == before


def test_restored_after_a_sync_error(snapshot: State) -> None:
    before = snapshot()
    with pytest.raises(SyncError), sync_audit("raise", simulate=True):
        sync_once()
    assert snapshot() == before


@DETECTIONS
def test_restored_after_nested_audits_fail_inside(snapshot: State, simulate: bool) -> None:
    before = snapshot()
    with sync_audit("record", simulate=simulate) as outer:
        with pytest.raises(KeyboardInterrupt), sync_audit("record", simulate=simulate):
            read_back()
            raise KeyboardInterrupt
        read_back()
    assert snapshot() == before
    assert outer.count == 2


@DETECTIONS
def test_restored_after_audits_in_two_threads_overlap(snapshot: State, simulate: bool) -> None:
    before = snapshot()
    started, release = threading.Event(), threading.Event()
    counts: list[int] = []

    def worker() -> None:
        with sync_audit("record", simulate=simulate) as own:
            started.set()
            release.wait(10)
            read_back()
        counts.append(own.count)
        counts.append(torch._C._len_torch_dispatch_stack())

    thread = threading.Thread(target=worker)
    with sync_audit("record", simulate=simulate) as main:
        thread.start()
        started.wait(10)
    release.set()  # the thread's audit outlives the main one
    thread.join(10)
    assert snapshot() == before
    assert main.count == 0 and counts == [1, 0]


# --- decorated generators, coroutines, async generators -------------------------------


def test_a_decorated_generator_is_audited_step_by_step(snapshot: State) -> None:
    before = snapshot()

    @sync_audit("record", simulate=True)
    def steps(n: int) -> Iterator[int]:
        for i in range(n):
            sync_once()
            yield i
        return None

    produced = []
    for value in steps(3):
        assert snapshot() == before  # not active while suspended at the yield
        sync_once()  # the consumer's syncs are not the generator's
        produced.append(value)
    assert produced == [0, 1, 2]
    assert steps.audit.count == 3  # type: ignore[attr-defined]
    assert {event.function for event in steps.audit.events} == {"sync_once"}  # type: ignore[attr-defined]


def test_a_decorated_generator_keeps_send_throw_close_and_return() -> None:
    cleaned: list[str] = []

    @sync_audit("record", simulate=True)
    def echo() -> Iterator[Any]:
        received = None
        try:
            while True:
                try:
                    received = yield received
                except ValueError as error:
                    received = f"caught {error}"
        finally:
            cleaned.append("finally")
            sync_once()

    gen = echo()
    assert next(gen) is None
    assert gen.send(5) == 5
    assert gen.throw(ValueError("x")) == "caught x"
    gen.close()
    assert cleaned == ["finally"]
    assert echo.audit.count == 1  # type: ignore[attr-defined]  # the finally block ran audited

    @sync_audit("record", simulate=True)
    def returns() -> Iterator[int]:
        yield 1
        return 7

    def delegate() -> Iterator[int]:
        result = yield from returns()
        yield result

    assert list(delegate()) == [1, 7]


def test_a_generator_closed_in_another_thread_restores_torch(snapshot: State) -> None:
    before = snapshot()

    def consumer_fixture() -> Iterator[Any]:  # the shape of a pytest fixture
        with sync_audit("record", simulate=True) as audit:
            yield audit

    gen = consumer_fixture()
    audit = next(gen)
    sync_once()
    closer = threading.Thread(target=gen.close)
    closer.start()
    closer.join(10)
    sync_once()  # this thread's retired mode forwards, then goes at the next call
    assert audit.count == 1
    assert snapshot() == before


def test_a_decorated_coroutine_restores_torch_when_cancelled(snapshot: State) -> None:
    before = snapshot()

    @sync_audit("record", simulate=True)
    async def step() -> None:
        sync_once()
        await asyncio.sleep(10)

    async def main() -> None:
        task = asyncio.ensure_future(step())
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert snapshot() == before
    assert step.audit.count == 1  # type: ignore[attr-defined]


def test_a_decorated_async_generator_is_audited_step_by_step(snapshot: State) -> None:
    before = snapshot()

    @sync_audit("record", simulate=True)
    async def stream(n: int) -> AsyncIterator[int]:
        for i in range(n):
            sync_once()
            await asyncio.sleep(0)
            yield i

    async def main() -> list[int]:
        seen = []
        async for value in stream(3):
            assert snapshot() == before
            seen.append(value)
        closing = stream(5)
        await closing.__anext__()
        await closing.aclose()
        return seen

    assert asyncio.run(main()) == [0, 1, 2]
    assert stream.audit.count == 4  # type: ignore[attr-defined]
    assert snapshot() == before


# --- audits exited elsewhere, tasks, audits never exited ------------------------------


@DETECTIONS
def test_an_audit_exited_from_another_thread_restores_torch(
    snapshot: State, simulate: bool
) -> None:
    before = snapshot()
    audit = sync_audit("record", simulate=simulate)
    audit.__enter__()
    read_back()
    exiting = threading.Thread(target=audit.__exit__, args=(None, None, None))
    exiting.start()
    exiting.join(10)
    read_back()  # no longer audited
    sync_once()  # a retired simulation mode forwards this op, then leaves at the next call
    assert audit.count == 1
    assert snapshot() == before


def test_a_mode_retired_under_another_mode_is_popped_too(snapshot: State) -> None:
    from torch.utils._python_dispatch import TorchDispatchMode

    class Forwarding(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kw: Any = None) -> Any:
            return func(*args, **(kw or {}))

    with Forwarding():  # its first op imports torch._dynamo, which adds warning filters
        sync_once()
    before = snapshot()
    audit = sync_audit("record", simulate=True)
    audit.__enter__()
    user_mode = Forwarding()
    user_mode.__enter__()  # the program's own mode, above the audit's
    exiting = threading.Thread(target=audit.__exit__, args=(None, None, None))
    exiting.start()
    exiting.join(10)
    sync_once()  # through both modes: the retired one forwards, and goes
    user_mode.__exit__(None, None, None)
    assert torch._C._len_torch_dispatch_stack() == 0
    with sync_audit("record", simulate=True) as later:
        sync_once()
    assert later.count == 1 and audit.count == 0
    assert snapshot() == before


@DETECTIONS
def test_an_audit_exited_from_another_task_restores_torch(snapshot: State, simulate: bool) -> None:
    before = snapshot()
    audit = sync_audit("record", simulate=simulate)

    async def setup() -> None:  # an async fixture: setup and teardown in different tasks
        audit.__enter__()
        read_back()

    async def teardown() -> None:
        audit.__exit__(None, None, None)

    async def main() -> None:
        await asyncio.ensure_future(setup())
        await asyncio.ensure_future(teardown())
        read_back()

    asyncio.run(main())
    assert audit.count == 1
    assert snapshot() == before


def test_tasks_created_in_the_block_are_audited_only_while_it_is_active(
    snapshot: State,
) -> None:
    before = snapshot()

    async def work(ready: asyncio.Event) -> None:
        await ready.wait()
        sync_once()

    async def main() -> tuple[int, int]:
        now, later = asyncio.Event(), asyncio.Event()
        with sync_audit("record", simulate=True) as audit:
            during = asyncio.ensure_future(work(now))
            after = asyncio.ensure_future(work(later))
            now.set()
            await during
        later.set()
        await after  # runs after the block: not audited, and nothing raises
        return audit.count, len(audit.allowed)

    assert asyncio.run(main()) == (1, 0)
    assert snapshot() == before


def test_an_audit_never_exited_is_released_when_collected(snapshot: State) -> None:
    before = snapshot()
    audit = sync_audit("record", simulate=True)
    audit.__enter__()
    line = sys._getframe().f_lineno - 1
    assert snapshot() != before
    with pytest.warns(RuntimeWarning, match="was never exited") as caught:
        del audit
        gc.collect()
    assert caught[0].filename == __file__ and caught[0].lineno == line
    sync_once()
    assert snapshot() == before


def test_an_audit_never_exited_is_released_at_interpreter_exit() -> None:
    script = textwrap.dedent(
        """
        import weakref, torch

        def check():
            print("restored:", "tolist" not in vars(torch.Tensor), flush=True)

        anchor = check  # finalizers run newest first at exit: this one after the audit's
        weakref.finalize(anchor, check)
        from syncguard.runtime import sync_audit
        kept = sync_audit("record", simulate=True)
        kept.__enter__()
        assert "tolist" in vars(torch.Tensor)
        """
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    assert "restored: True" in completed.stdout
    assert "RuntimeWarning: sync_audit('record') entered here was never exited" in (
        completed.stderr
    )
