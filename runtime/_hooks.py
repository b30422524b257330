"""Process-wide machinery installed while any audit is active (imports torch).

* Wrappers around explicit synchronizes and tensor transfers. They decide per context
  (the audit's ContextVar), record before delegating, and cost one ContextVar read
  elsewhere. They are installed when the first audit starts and removed when the last ends.
* On CUDA, ``torch.cuda.set_sync_debug_mode("warn")`` armed once, its warnings caught by an
  "always" filter and a ``warnings.showwarning`` hook (both re-installed by each audited
  call, since pytest resets them per test). The mode is lowered around CUDA graph capture
  (``CUDAGraph.capture_begin`` / ``capture_end``): never armed across begin/end.
* In simulation, one :class:`SimulatedSyncMode` per thread, pushed by the outermost
  simulated audit of that thread.
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

from syncguard.runtime import _boundary
from syncguard.runtime import audit as _audit
from syncguard.runtime._events import DEVICE_TO_HOST, EXPLICIT, HOST_TO_DEVICE
from syncguard.runtime._simulate import HOST_TENSORS, SimulatedSyncMode, is_host

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


class _ThreadSimulation(threading.local):
    depth: int = 0
    mode: SimulatedSyncMode | None = None
    activations: int = 0


_thread = _ThreadSimulation()


def acquire(cuda: bool, simulated: bool) -> None:
    """Account one starting activation; install what it needs."""
    with _lock:
        _state.users += 1
        if _state.users == 1:
            _install_patches()
        if cuda:
            _state.cuda_users += 1
            if _state.cuda_users == 1 and torch.cuda.is_available():
                _state.mode_before = torch.cuda.get_sync_debug_mode()
            _apply_debug_mode()
    _thread.activations += 1
    if cuda:
        capture_warnings()
    if simulated:
        if _thread.depth == 0:
            _thread.mode = SimulatedSyncMode(_audit.deliver)
            _thread.mode.__enter__()
        _thread.depth += 1


def release(cuda: bool, simulated: bool) -> None:
    """Undo :func:`acquire`; the last activation restores every setting and wrapper."""
    try:
        if simulated:
            _thread.depth -= 1
            if _thread.depth == 0 and _thread.mode is not None:
                mode, _thread.mode = _thread.mode, None
                mode.__exit__(None, None, None)
    finally:
        _thread.activations -= 1
        if _thread.activations == 0:
            _boundary.close()
        with _lock:
            if cuda:
                _state.cuda_users -= 1
                _apply_debug_mode()
                if _state.cuda_users == 0:
                    _release_warnings()
            _state.users -= 1
            if _state.users == 0:
                _remove_patches()
                _boundary.release()


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


# --- wrappers ------------------------------------------------------------------------


def _install_patches() -> None:
    targets: list[tuple[Any, str, Callable[[Any], Any]]] = [
        (torch.Tensor, "to", _wrap_to),
        (torch.Tensor, "cuda", _wrap_cuda),
        (torch.Tensor, "cpu", _wrap_cpu),
        (torch.Tensor, "copy_", _wrap_copy),
        (torch.Tensor, "tolist", _wrap_read("tolist()")),
        (torch.Tensor, "__repr__", _wrap_read("repr()")),
        (torch, "from_numpy", _wrap_from_numpy),
        (torch.cuda, "synchronize", _wrap_explicit("torch.cuda.synchronize")),
        (torch.cuda.Stream, "synchronize", _wrap_explicit("Stream.synchronize")),
        (torch.cuda.Event, "synchronize", _wrap_explicit("Event.synchronize")),
        (torch.cuda.CUDAGraph, "capture_begin", _wrap_capture_begin),
        (torch.cuda.CUDAGraph, "capture_end", _wrap_capture_end),
    ]
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is not None and hasattr(accelerator, "synchronize"):
        targets.append(
            (accelerator, "synchronize", _wrap_explicit("torch.accelerator.synchronize"))
        )
    for owner, name, wrap in targets:
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


def _wrap_explicit(label: str) -> Callable[[Any], Any]:
    def wrap(original: Any) -> Any:
        @functools.wraps(original)
        def synchronize(*args: Any, **kwargs: Any) -> Any:
            if _audit.ACTIVE.get():
                _audit.deliver(EXPLICIT, label, simulated=False)
            return original(*args, **kwargs)

        return synchronize

    return wrap


def _transfer_check(
    source: torch.Tensor,
    target: torch.device | None,
    non_blocking: bool,
    destination: torch.Tensor | None = None,
) -> tuple[str, str] | None:
    """(kind, detail) when copying ``source`` to ``target`` blocks the host."""
    if target is None:
        return None
    here, there = source.device.type, target.type
    if "meta" in (here, there) or here == there:
        return None
    if here == "cpu":
        if not non_blocking:
            return HOST_TO_DEVICE, "blocking host-to-device copy"
        if not source.is_pinned():
            return HOST_TO_DEVICE, "non_blocking copy from pageable host memory"
        if not source.is_contiguous():
            return HOST_TO_DEVICE, "non_blocking copy from non-contiguous pinned memory"
        return None
    if there == "cpu":
        if not non_blocking:
            return DEVICE_TO_HOST, "blocking device-to-host copy"
        if destination is not None and not destination.is_pinned():
            return DEVICE_TO_HOST, "non_blocking copy into pageable host memory"
    return None


def _simulated_read(tensor: torch.Tensor, label: str) -> bool:
    """Report a read of a CPU tensor that simulation treats as device memory."""
    if tensor.device.type != "cpu" or is_host(tensor):
        return False
    return _audit.deliver(DEVICE_TO_HOST, f"{label} (simulated)", simulated=True)


def _host_alias(tensor: torch.Tensor, result: Any) -> Any:
    """In simulation a copy to the host is a new host tensor, not the device one itself."""
    if result is tensor:
        result = tensor.view_as(tensor)
    HOST_TENSORS.add(result)
    return result


def _dtype_only(args: tuple[Any, ...]) -> bool:
    """``t.to(torch.float16)``: no device, no copy between host and device."""
    return len(args) == 1 and isinstance(args[0], torch.dtype)


def _wrap_to(original: Any) -> Any:
    @functools.wraps(original)
    def to(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not _audit.ACTIVE.get() or (not kwargs and _dtype_only(args)):
            return original(self, *args, **kwargs)
        target, _dtype, non_blocking, *_ = torch._C._nn._parse_to(*args, **kwargs)
        simulated = False
        if target is not None and target.type == "cpu" == self.device.type and not non_blocking:
            simulated = _audit.mentions_cpu() and _simulated_read(self, ".to('cpu')")
        else:
            _deliver_transfer(_transfer_check(self, target, non_blocking))
        result = original(self, *args, **kwargs)
        return _host_alias(self, result) if simulated else result

    return to


def _wrap_cuda(original: Any) -> Any:
    @functools.wraps(original)
    def cuda(self: torch.Tensor, device: Any = None, non_blocking: bool = False, **kw: Any) -> Any:
        if _audit.ACTIVE.get():
            target = torch.device("cuda" if device is None else device)
            if isinstance(device, int):
                target = torch.device("cuda", device)
            _deliver_transfer(_transfer_check(self, target, non_blocking))
        return original(self, device, non_blocking, **kw)

    return cuda


def _wrap_cpu(original: Any) -> Any:
    @functools.wraps(original)
    def cpu(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if not _audit.ACTIVE.get():
            return original(self, *args, **kwargs)
        if self.device.type == "cpu":
            simulated = _simulated_read(self, ".cpu()")
            result = original(self, *args, **kwargs)
            return _host_alias(self, result) if simulated else result
        _deliver_transfer(_transfer_check(self, torch.device("cpu"), False))
        return original(self, *args, **kwargs)

    return cpu


def _wrap_copy(original: Any) -> Any:
    @functools.wraps(original)
    def copy_(self: torch.Tensor, src: Any, non_blocking: bool = False) -> Any:
        if _audit.ACTIVE.get() and isinstance(src, torch.Tensor):
            _deliver_transfer(_transfer_check(src, self.device, non_blocking, destination=self))
        return original(self, src, non_blocking)

    return copy_


def _wrap_read(label: str) -> Callable[[Any], Any]:
    """``tolist`` / ``repr``: a device read; on CPU a simulated one."""

    def wrap(original: Any) -> Any:
        @functools.wraps(original)
        def read(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            if _audit.ACTIVE.get():
                if self.device.type == "cpu":
                    _simulated_read(self, label)
                elif self.device.type != "meta":
                    _audit.deliver(DEVICE_TO_HOST, label, simulated=False)
            return original(self, *args, **kwargs)

        return read

    return wrap


def _wrap_from_numpy(original: Any) -> Any:
    @functools.wraps(original)
    def from_numpy(array: Any) -> Any:
        result = original(array)
        if _audit.ACTIVE.get():
            HOST_TENSORS.add(result)
        return result

    return from_numpy


def _deliver_transfer(found: tuple[str, str] | None) -> None:
    if found is not None:
        _audit.deliver(found[0], found[1], simulated=False)


def _wrap_capture_begin(original: Any) -> Any:
    @functools.wraps(original)
    def capture_begin(self: Any, *args: Any, **kwargs: Any) -> Any:
        with _lock:
            _state.capture_depth += 1
            _apply_debug_mode()
        try:
            return original(self, *args, **kwargs)
        except BaseException:
            with _lock:
                _state.capture_depth -= 1
                _apply_debug_mode()
            raise

    return capture_begin


def _wrap_capture_end(original: Any) -> Any:
    @functools.wraps(original)
    def capture_end(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        finally:
            with _lock:
                _state.capture_depth = max(0, _state.capture_depth - 1)
                _apply_debug_mode()

    return capture_end
