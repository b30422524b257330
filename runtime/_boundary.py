"""One event per blocking call: tell "the same call again" from "a new call at the same place".

One user-level call can raise several sync signals (``repeat_interleave`` and ``bincount``
raise two debug-mode warnings, ``print(t)`` eight), all at the same frame and instruction.
A loop (``[idx[i].item() for i in range(3)]``) also raises them at the same frame and
instruction, one per call. The difference: between two calls the frame executes other
instructions. So after a signal the frame is watched, and its next instruction closes the
call: on Python 3.12+ through a ``sys.monitoring`` INSTRUCTION event local to that code
object, before that through a frame-local opcode trace (only when no other tracer, such as
a debugger or coverage, is installed). Without a watcher, signals at the same frame and
instruction merge until a signal arrives from elsewhere.
"""

from __future__ import annotations

import sys
import threading
from types import CodeType, FrameType
from typing import Any

_TOOL_IDS = (4, 3)  # ids PEP 669 leaves to other tools (0-2 and 5 are conventional)


class _PendingCall(threading.local):
    frame: FrameType | None = None
    lasti: int = -1
    code: CodeType | None = None
    traced: bool = False


_pending = _PendingCall()


def same_call(frame: FrameType) -> bool:
    """True when ``frame`` is still inside the call that raised the previous signal."""
    return _pending.frame is frame and _pending.lasti == frame.f_lasti


def start_call(frame: FrameType) -> None:
    """Remember ``frame``'s current call and watch for the frame moving on."""
    close()
    _pending.frame = frame
    _pending.lasti = frame.f_lasti
    _pending.code = frame.f_code
    if sys.version_info >= (3, 12):
        _monitor.watch(frame.f_code)
    else:
        _pending.traced = _trace_watch(frame)


def close() -> None:
    """Forget this thread's pending call (and stop watching its frame)."""
    frame, code = _pending.frame, _pending.code
    _pending.frame = None
    _pending.code = None
    _pending.lasti = -1
    if code is not None and sys.version_info >= (3, 12):
        _monitor.unwatch(code)
    if frame is not None and _pending.traced:
        _pending.traced = False
        frame.f_trace = None
        frame.f_trace_opcodes = False
        if sys.gettrace() is _no_new_frames:
            sys.settrace(None)


def release() -> None:
    """Give the monitoring tool id back (called when the last audit ends)."""
    close()
    _monitor.release()


class _Monitor:
    """The ``sys.monitoring`` watcher (Python 3.12+)."""

    def __init__(self) -> None:
        self.tool: int | None = None
        self.lock = threading.Lock()

    def watch(self, code: CodeType) -> None:
        monitoring: Any = getattr(sys, "monitoring", None)
        with self.lock:
            if self.tool is None:
                self.tool = self._claim(monitoring)
            if self.tool is not None:
                monitoring.set_local_events(self.tool, code, monitoring.events.INSTRUCTION)

    def unwatch(self, code: CodeType) -> None:
        monitoring: Any = getattr(sys, "monitoring", None)
        with self.lock:
            if self.tool is not None:
                monitoring.set_local_events(self.tool, code, 0)

    def release(self) -> None:
        monitoring: Any = getattr(sys, "monitoring", None)
        with self.lock:
            if self.tool is not None:
                monitoring.register_callback(self.tool, monitoring.events.INSTRUCTION, None)
                monitoring.free_tool_id(self.tool)
                self.tool = None

    def _claim(self, monitoring: Any) -> int | None:
        for tool in _TOOL_IDS:
            if monitoring.get_tool(tool) is None:
                monitoring.use_tool_id(tool, "syncguard")
                monitoring.register_callback(tool, monitoring.events.INSTRUCTION, _on_instruction)
                return tool
        return None


_monitor = _Monitor()


def _on_instruction(code: CodeType, offset: int) -> None:
    if _pending.code is code:
        close()


def _trace_watch(frame: FrameType) -> bool:
    current = sys.gettrace()
    if current is not None and current is not _no_new_frames:
        return False
    frame.f_trace = _frame_moved
    frame.f_trace_opcodes = True
    if current is None:
        sys.settrace(_no_new_frames)
    return True


def _no_new_frames(frame: FrameType, event: str, arg: object) -> None:
    """Global trace function that traces no new frame (only the watched one has f_trace)."""
    return None


def _frame_moved(frame: FrameType, event: str, arg: object) -> None:
    if _pending.frame is frame:
        close()
    else:
        frame.f_trace = None
        frame.f_trace_opcodes = False
