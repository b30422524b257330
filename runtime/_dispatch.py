"""Simulation's dispatch mode: one per thread, removed in its own thread.

A thread's :class:`SimulatedSyncMode` is pushed by the first simulated audit active in that
thread and popped when the last one ends. Torch keeps the mode stack per thread, so a mode
can only be popped by its own thread, and only while it is on top. When the last audit of
a thread ends elsewhere (exited from another thread, or released when garbage-collected),
or while another mode sits above it, the mode is *retired*: it forwards every op unjudged,
and its thread pops it as soon as it can, at the next Python call after one of its ops
(through a one-shot trace function, when no other tracer is installed) or when that thread
next starts or ends an audit.
"""

from __future__ import annotations

import sys
import threading
from types import FrameType
from typing import Any

import torch

from syncguard.runtime import audit as _audit
from syncguard.runtime._simulate import SimulatedSyncMode

_function_modes = torch._C._len_torch_function_stack


class _Mode(SimulatedSyncMode):
    """The simulation mode, which can be retired (then it only forwards)."""

    retired = False

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        """Let torch.compile compile under simulation (it skips frames under other modes):
        the mode is off while compiling and on while compiled code runs."""
        return True

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        if _function_modes():  # calling ``func`` here must not show it to them
            with torch._C.DisableTorchFunction():
                return self._dispatch(func, types, args, kwargs)
        return self._dispatch(func, types, args, kwargs)

    def _dispatch(
        self, func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any] | None
    ) -> Any:
        if self.retired:
            _pop_soon(self)
            return func(*args, **(kwargs or {}))
        return super().__torch_dispatch__(func, types, args, kwargs)


class ThreadSimulation:
    """One thread's audits: how many are active (simulated ones apart), and its modes."""

    def __init__(self) -> None:
        self.activations = 0
        self.depth = 0
        self.mode: _Mode | None = None
        self.retired: list[_Mode] = []


class _Local(threading.local):
    state: ThreadSimulation | None = None


_local = _Local()
_lock = threading.Lock()


def current() -> ThreadSimulation:
    """This thread's state (made on first use)."""
    state = _local.state
    if state is None:
        state = _local.state = ThreadSimulation()
    return state


def enter(state: ThreadSimulation) -> None:
    """One more simulated audit in ``state``'s thread (the current one)."""
    pop_retired(state)
    with _lock:
        state.depth += 1
        if state.depth > 1:
            return
        mode = state.mode = _Mode(_audit.deliver)
    try:
        mode.__enter__()
    except BaseException:
        with _lock:
            state.depth -= 1
            state.mode = None
        raise


def leave(state: ThreadSimulation) -> None:
    """One simulated audit of ``state``'s thread ended (in any thread)."""
    with _lock:
        state.depth -= 1
        if state.depth > 0 or state.mode is None:
            return
        mode, state.mode = state.mode, None
        mode.retired = True
        state.retired.append(mode)
    if _local.state is state:
        pop_retired(state)


def pop_retired(state: ThreadSimulation) -> None:
    """Pop the retired modes on top of this thread's dispatch stack."""
    while state.retired:
        stack = _stack()
        if not stack or stack[-1] not in state.retired:
            return
        mode = stack[-1]
        state.retired.remove(mode)
        mode.__exit__(None, None, None)


def _stack() -> list[Any]:
    return [torch._C._get_dispatch_stack_at(i) for i in range(torch._C._len_torch_dispatch_stack())]


def _pop_soon(mode: _Mode) -> None:
    """From a retired mode's dispatch: pop it at this thread's next Python call."""
    state = _local.state
    if state is None or mode not in state.retired or sys.gettrace() is not None:
        return
    sys.settrace(_on_call)


def _on_call(frame: FrameType, event: str, arg: object) -> None:
    """One-shot global trace: pop once the retired mode is back on top of the stack.

    Inside the mode's own dispatch it is off the stack; once on the stack but under
    another mode, only a later audit start or end in this thread can pop it.
    """
    state = _local.state
    if state is not None:
        pop_retired(state)
    if state is None or not state.retired or any(m in state.retired for m in _stack()):
        sys.settrace(None)
