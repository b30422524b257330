"""Process-wide machinery installed while any audit is active (imports torch).

* Wrappers around explicit synchronizes and tensor transfers (``_wrappers``). They decide
  per context (the audit's ContextVar), record before delegating, and cost one ContextVar
  read elsewhere. They are installed when the first audit starts and removed when the last
  ends, in whichever thread or task that happens.
* On CUDA, ``torch.cuda.set_sync_debug_mode("warn")`` armed once, its warnings caught by an
  "always" filter and a ``warnings.showwarning`` hook (both re-installed by each audited
  call, since pytest resets them per test). The mode is lowered around CUDA graph capture
  (``CUDAGraph.capture_begin`` / ``capture_end``): never armed across begin/end.
* In simulation, one dispatch mode per thread (``_dispatch``).

Each activation holds a :class:`Lease`; releasing it is idempotent and works from any
thread, so an audit exited elsewhere (or garbage-collected) still restores torch.
"""

from __future__ import annotations

import functools
import re
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from syncguard.runtime import _boundary, _dispatch
from syncguard.runtime import _wrappers as wrappers
from syncguard.runtime import audit as _audit

SYNC_WARNING = "called a synchronizing CUDA operation"
_SYNC_PATTERN = re.compile(re.escape(SYNC_WARNING), re.I)


@dataclass
class _Patch:
    owner: Any
    name: str
    original: Any
    replacement: Any
    owned: bool


@dataclass
class _State:
    users: int = 0
    cuda_users: int = 0
    patches: list[_Patch] = field(default_factory=list)
    mode_before: int = 0
    armed: bool = False
    capture_depth: int = 0
    previous_showwarning: Any = None


_state = _State()
_lock = threading.RLock()
# (owner id, name) -> (original, replacement): wrappers are built once, not per activation
_wrappers: dict[tuple[int, str], tuple[Any, Any]] = {}


@dataclass(eq=False)
class Lease:
    """What one activation acquired; :func:`release` gives it back once."""

    cuda: bool
    simulated: bool
    thread: _dispatch.ThreadSimulation
    released: bool = False


def acquire(cuda: bool, simulated: bool) -> Lease:
    """Account one starting activation (in the current thread); install what it needs."""
    thread = _dispatch.current()
    with _lock:
        _state.users += 1
        if _state.users == 1:
            _install_patches()
        if cuda:
            _state.cuda_users += 1
            if _state.cuda_users == 1 and torch.cuda.is_available():
                _state.mode_before = torch.cuda.get_sync_debug_mode()
            _apply_debug_mode()
    lease = Lease(cuda, simulated, thread)
    with _lock:
        thread.activations += 1
    try:
        if cuda:
            capture_warnings()
        if simulated:
            _dispatch.enter(thread)
    except BaseException:
        lease.simulated = False
        release(lease)
        raise
    return lease


def release(lease: Lease) -> None:
    """Undo :func:`acquire`, from any thread; the last lease restores everything."""
    if lease.released:
        return
    lease.released = True
    here = _dispatch.current() is lease.thread
    try:
        if lease.simulated:
            _dispatch.leave(lease.thread)
    finally:
        with _lock:
            lease.thread.activations -= 1
            if here and lease.thread.activations == 0:
                _boundary.close()
            if lease.cuda:
                _state.cuda_users -= 1
                _apply_debug_mode()
                if _state.cuda_users == 0:
                    _release_warnings()
            _state.users -= 1
            if _state.users == 0:
                _remove_patches()
                _boundary.release()


def installed() -> bool:
    """True while any audit holds the process-wide machinery."""
    return _state.users > 0


# --- CUDA debug mode and its warnings ------------------------------------------------


def _capturing() -> bool:
    return bool(torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())


def _apply_debug_mode() -> None:
    if not torch.cuda.is_available():
        return
    wanted = _state.cuda_users > 0 and _state.capture_depth == 0 and not _capturing()
    if wanted != _state.armed:
        # torch warns that the mode is a prototype each time it is set: noise for users who
        # did not set it themselves (the filters are restored right after, under _lock)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Synchronization debug mode is a prototype")
            torch.cuda.set_sync_debug_mode("warn" if wanted else _state.mode_before)
        _state.armed = wanted


def capture_warnings() -> None:
    """(Re-)install the "always" filter and the showwarning hook for sync warnings."""
    warnings.filterwarnings("always", message=re.escape(SYNC_WARNING), category=UserWarning)
    if warnings.showwarning is not _showwarning:
        _state.previous_showwarning = warnings.showwarning
        warnings.showwarning = _showwarning


def _release_warnings() -> None:
    ours = re.escape(SYNC_WARNING)
    filters: list[Any] = warnings.filters  # type: ignore[assignment]
    for item in list(filters):
        if item[0] == "always" and item[1] is not None and item[1].pattern == ours:
            filters.remove(item)
    mutated = getattr(warnings, "_filters_mutated", None)
    if mutated is not None:
        mutated()
    if warnings.showwarning is _showwarning:
        warnings.showwarning = _state.previous_showwarning or _original_showwarning()
    _state.previous_showwarning = None


def _original_showwarning() -> Any:
    return getattr(warnings, "_showwarning_orig", warnings.showwarning)


def _showwarning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Route debug-mode sync warnings to the audits of this context; forward the rest."""
    if issubclass(category, UserWarning) and _SYNC_PATTERN.match(str(message)):
        if _audit.deliver(None, "set_sync_debug_mode", simulated=False):
            return
        if _state.mode_before == 0:
            return  # armed for audits only: nobody outside an audit asked for it
    previous = _state.previous_showwarning
    if previous is None or previous is _original_showwarning():
        implementation = getattr(warnings, "_showwarnmsg_impl", None)
        if implementation is not None:
            implementation(warnings.WarningMessage(message, category, filename, lineno, file, line))
            return
        previous = _original_showwarning()
    previous(message, category, filename, lineno, file, line)


def _wrap_capture_begin(original: Any) -> Any:
    @functools.wraps(original)
    def capture_begin(*args: Any, **kwargs: Any) -> Any:
        with _lock:
            _state.capture_depth += 1
            _apply_debug_mode()
        try:
            return original(*args, **kwargs)
        except BaseException:
            with _lock:
                _state.capture_depth -= 1
                _apply_debug_mode()
            raise

    return capture_begin


def _wrap_capture_end(original: Any) -> Any:
    @functools.wraps(original)
    def capture_end(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        finally:
            with _lock:
                _state.capture_depth = max(0, _state.capture_depth - 1)
                _apply_debug_mode()

    return capture_end


# --- wrappers ------------------------------------------------------------------------


def _targets() -> list[tuple[Any, str, Callable[[Any], Any]]]:
    targets: list[tuple[Any, str, Callable[[Any], Any]]] = [
        (torch.Tensor, "to", wrappers.wrap_to),
        (torch.Tensor, "cuda", wrappers.wrap_cuda),
        (torch.Tensor, "cpu", wrappers.wrap_cpu),
        (torch.Tensor, "copy_", wrappers.wrap_copy),
        (torch.Tensor, "tolist", wrappers.wrap_read("tolist()")),
        (torch.Tensor, "__repr__", wrappers.wrap_read("repr()", ("tensor_contents",))),
        (torch, "from_numpy", wrappers.wrap_from_numpy),
        (torch.cuda, "synchronize", wrappers.wrap_explicit("torch.cuda.synchronize")),
        (torch.cuda.Stream, "synchronize", wrappers.wrap_explicit("Stream.synchronize")),
        (torch.cuda.Event, "synchronize", wrappers.wrap_explicit("Event.synchronize")),
        (torch.cuda.CUDAGraph, "capture_begin", _wrap_capture_begin),
        (torch.cuda.CUDAGraph, "capture_end", _wrap_capture_end),
        (torch._ops.OpOverload, "__call__", wrappers.wrap_op_call),
        (torch._ops.OpOverloadPacket, "__call__", wrappers.wrap_packet_call),
    ]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "synchronize"):
        label = "torch.accelerator.synchronize"
        targets.append((accelerator, "synchronize", wrappers.wrap_explicit(label)))
    return targets


def _install_patches() -> None:
    for owner, name, wrap in _targets():
        original = getattr(owner, name, None)
        if original is None:
            continue
        owned = name in vars(owner)
        cached = _wrappers.get((id(owner), name))
        if cached is not None and cached[0] is original:
            replacement = cached[1]
        else:
            replacement = wrap(original)
            _wrappers[(id(owner), name)] = (original, replacement)
        try:
            setattr(owner, name, replacement)
        except (AttributeError, TypeError):
            continue
        _state.patches.append(_Patch(owner, name, original, replacement, owned))


def _remove_patches() -> None:
    while _state.patches:
        patch = _state.patches.pop()
        if vars(patch.owner).get(patch.name) is not patch.replacement:
            continue  # someone patched over us since: leave theirs in place
        if patch.owned:
            setattr(patch.owner, patch.name, patch.original)
        else:
            delattr(patch.owner, patch.name)
