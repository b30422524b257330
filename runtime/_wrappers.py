"""The audit's wrappers of torch callables, transparent to the program they audit.

Each wrapper gives the result and the exception the original gives, for every call form
(right or wrong): it reads the call only when the call matches one of the original's
documented signatures exactly, and otherwise delegates without judging it (on CUDA the
debug mode still reports what blocks). Where it judges, it records *before* delegating, so
that in raise mode a blocking copy does not happen. Under ``torch.compile`` (tracing) the
wrappers delegate at once. Reads of tensor properties for the checks are hidden from the
program's ``TorchFunctionMode``\\ s and tensor subclasses.

This module imports torch; ``_hooks`` loads it when the first audit starts.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

import torch

from syncguard.runtime import _dispatch
from syncguard.runtime import audit as _audit
from syncguard.runtime._events import DEVICE_TO_HOST, EXPLICIT, HOST_TO_DEVICE
from syncguard.runtime._frames import owner
from syncguard.runtime._simulate import HOST_TENSORS, RULES, TensorSet, is_host, tensors_in

_ACTIVE = _audit.ACTIVE
_is_compiling = torch.compiler.is_compiling
_function_modes = torch._C._len_torch_function_stack
_Tensor = torch.Tensor
_UNKNOWN: Any = object()  # a call form the wrapper does not read: delegate unjudged
with torch._C.DisableTorchFunction():
    _CPU, _CUDA = torch.device("cpu"), torch.device("cuda")

Wrap = Callable[[Any], Any]


def idle() -> bool:
    """True when a wrapper must only delegate: no audit here, or torch.compile is tracing."""
    return not _ACTIVE.get() or _is_compiling()


def _judge(check: Callable[..., Any], tensors: tuple[Any, ...], *args: Any) -> Any:
    """``check(*args)``, its property reads hidden from the program's torch-function
    modes and tensor subclasses (plain tensors without a mode need no hiding)."""
    if not _function_modes():
        for tensor in tensors:
            if type(tensor) is not _Tensor:
                break
        else:
            return check(*args)
    with torch._C.DisableTorchFunction():
        return check(*args)


# --- reading a call against the documented signatures ---------------------------------

_devices: dict[str, torch.device] = {}


def _device(value: Any) -> Any:
    """The torch.device a ``device`` argument names; None for None; _UNKNOWN if unsure."""
    if value is None:
        return None
    if type(value) is torch.device:
        return value
    if isinstance(value, str):
        cached = _devices.get(value)
        if cached is None:
            cached = _make_device(value)
            if cached is not _UNKNOWN and len(_devices) < 256:
                _devices[value] = cached
        return cached
    if type(value) is int:
        return _make_device(value)
    return _UNKNOWN


def _make_device(*spec: Any) -> Any:
    """``torch.device(*spec)``, unseen by torch-function modes; _UNKNOWN if it is invalid."""
    with torch._C.DisableTorchFunction():
        try:
            return torch.device(*spec)
        except (RuntimeError, ValueError, TypeError):
            return _UNKNOWN


def bind(
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    positional: tuple[str, ...],
    keyword_only: tuple[str, ...] = (),
) -> dict[str, Any] | None:
    """Arguments by name for one signature; None when the call does not fit it."""
    if len(args) > len(positional):
        return None
    bound = dict(zip(positional, args, strict=False))
    for name, value in kwargs.items():
        if name in bound or (name not in positional and name not in keyword_only):
            return None
        bound[name] = value
    return bound


def _flags_ok(bound: dict[str, Any], *names: str) -> bool:
    return all(type(bound.get(name, False)) is bool for name in names)


def _formats_ok(bound: dict[str, Any]) -> bool:
    value = bound.get("memory_format")
    return value is None or isinstance(value, torch.memory_format)


_TO_DTYPE = ("dtype", "non_blocking", "copy")
_TO_DEVICE = ("device", "dtype", "non_blocking", "copy")
_TO_OTHER = ("other", "non_blocking", "copy")
_MEMORY_FORMAT = ("memory_format",)
_TO_KEYWORDS = frozenset((*_TO_DEVICE, *_MEMORY_FORMAT))


def to_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, bool] | None:
    """(target device or None, non_blocking) of ``Tensor.to(*args, **kwargs)``.

    ``args`` excludes the tensor. None when the call matches none of the three overloads
    (``to(dtype, ...)``, ``to(device=None, dtype=None, ...)``, ``to(other, ...)``).
    """
    if not args:  # to(copy=True, dtype=..., device=...): keywords only, read as they are
        return _keywords_to_call(kwargs)
    if len(args) == 1 and (not kwargs or kwargs.keys() == {"non_blocking"}):
        non_blocking = kwargs.get("non_blocking", False)  # to(device[, non_blocking=...])
        target = _device(args[0]) if type(non_blocking) is bool else _UNKNOWN
        if target is not _UNKNOWN:
            return target, non_blocking
    first = args[0] if args else None
    names: tuple[str, ...]
    if isinstance(first, torch.dtype):
        names = _TO_DTYPE
    elif isinstance(first, _Tensor):
        names = _TO_OTHER
    else:
        names = _TO_DEVICE
    bound = bind(args, kwargs, names, _MEMORY_FORMAT)
    if bound is None or not _flags_ok(bound, "non_blocking", "copy") or not _formats_ok(bound):
        return None
    dtype = bound.get("dtype")
    if dtype is not None and not isinstance(dtype, torch.dtype):
        return None
    if isinstance(first, _Tensor):
        target = _judge(lambda: first.device, (first,))
    else:
        target = _device(bound.get("device"))
        if target is _UNKNOWN:
            return None
    return target, bound.get("non_blocking", False)


def _keywords_to_call(kwargs: dict[str, Any]) -> tuple[Any, bool] | None:
    """:func:`to_call` of a keyword-only call, checked inline (it runs per decoded token)."""
    if not kwargs.keys() <= _TO_KEYWORDS:
        return None
    non_blocking = kwargs.get("non_blocking", False)
    if type(non_blocking) is not bool or type(kwargs.get("copy", False)) is not bool:
        return None
    dtype, memory_format = kwargs.get("dtype"), kwargs.get("memory_format")
    if dtype is not None and type(dtype) is not torch.dtype:
        return None
    if memory_format is not None and type(memory_format) is not torch.memory_format:
        return None
    target = _device(kwargs.get("device"))
    return None if target is _UNKNOWN else (target, non_blocking)


def cuda_call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[torch.device, bool] | None:
    """(target, non_blocking) of ``Tensor.cuda(device=None, non_blocking=False, *, ...)``."""
    bound = bind(args, kwargs, ("device", "non_blocking"), _MEMORY_FORMAT)
    if bound is None or not _flags_ok(bound, "non_blocking") or not _formats_ok(bound):
        return None
    device = bound.get("device")
    if device is None:
        target: Any = _CUDA
    elif type(device) is int:
        target = _make_device("cuda", device) if device >= 0 else _UNKNOWN
    else:
        target = _device(device)
    if target is _UNKNOWN or target.type != "cuda":
        return None
    return target, bound.get("non_blocking", False)


def copy_call(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[torch.Tensor, torch.Tensor, bool] | None:
    """(destination, source, non_blocking) of ``Tensor.copy_(self, src, non_blocking=False)``."""
    if not args or not isinstance(args[0], _Tensor):
        return None
    if not kwargs and len(args) == 2 and isinstance(args[1], _Tensor):  # the common form
        return args[0], args[1], False
    bound = bind(args[1:], kwargs, ("src", "non_blocking"))
    if bound is None or not isinstance(bound.get("src"), _Tensor):
        return None
    if not _flags_ok(bound, "non_blocking"):
        return None
    return args[0], bound["src"], bound.get("non_blocking", False)


# --- what blocks ---------------------------------------------------------------------


def transfer_check(
    source: torch.Tensor,
    target: torch.device | None,
    non_blocking: bool,
    destination: torch.Tensor | None = None,
) -> tuple[str, str] | None:
    """(kind, detail) when copying ``source`` to ``target`` blocks the host."""
    if target is None:
        return None
    here, there = _device_type(source), target.type
    if here == there or "meta" in (here, there):
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


def _device_type(tensor: torch.Tensor) -> str:
    """``tensor.device.type``, without building a device object for the usual two."""
    if tensor.is_cuda:
        return "cuda"
    return "cpu" if tensor.is_cpu else tensor.device.type


def _deliver_transfer(found: tuple[str, str] | None) -> None:
    if found is not None:
        _audit.deliver(found[0], found[1], simulated=False)


def _simulated_read(tensor: torch.Tensor, label: str) -> bool:
    """Report a read of a CPU tensor that simulation treats as device memory."""
    if tensor.device.type != "cpu" or is_host(tensor):
        return False
    return _audit.deliver(DEVICE_TO_HOST, f"{label} (simulated)", simulated=True)


def _host_alias(tensor: torch.Tensor, result: Any) -> Any:
    """In simulation a copy to the host is a new host tensor, not the device one itself."""
    if result is tensor:
        with torch._C.DisableTorchFunction():
            result = tensor.view_as(tensor)
    HOST_TENSORS.add(result)
    return result


def _tensor_call(args: tuple[Any, ...]) -> torch.Tensor | None:
    """The tensor a method was called on, when there is one."""
    return args[0] if args and isinstance(args[0], _Tensor) else None


# --- the wrappers --------------------------------------------------------------------


def wrap_to(original: Any) -> Any:
    @functools.wraps(original)
    def to(*args: Any, **kwargs: Any) -> Any:
        if not _ACTIVE.get() or _is_compiling():
            return original(*args, **kwargs)
        if len(args) == 2 and not kwargs and type(args[1]) is torch.dtype:
            return original(*args)  # t.to(torch.float16): never a transfer
        tensor = _tensor_call(args)
        call = to_call(args[1:], kwargs) if tensor is not None else None
        if tensor is None or call is None or call[0] is None:
            return original(*args, **kwargs)
        if type(tensor) is _Tensor and not _function_modes():
            if tensor.is_cuda and call[0].type == "cuda":
                return original(*args, **kwargs)  # device to device: never blocks the host
            simulated = _judge_to(tensor, call[0], call[1])
        else:
            simulated = _judge(_judge_to, (tensor,), tensor, call[0], call[1])
        result = original(*args, **kwargs)
        return _host_alias(tensor, result) if simulated else result

    return to


def _judge_to(tensor: torch.Tensor, target: torch.device, non_blocking: bool) -> bool:
    """Deliver what ``tensor.to(target)`` blocks on; True for a simulated copy to the host."""
    here = _device_type(tensor)
    if here != target.type:
        _deliver_transfer(transfer_check(tensor, target, non_blocking))
        return False
    if here != "cpu" or non_blocking or not _audit.simulating():
        return False
    return _audit.mentions_cpu() and _simulated_read(tensor, ".to('cpu')")


def wrap_cuda(original: Any) -> Any:
    @functools.wraps(original)
    def cuda(*args: Any, **kwargs: Any) -> Any:
        if not idle():
            tensor = _tensor_call(args)
            call = cuda_call(args[1:], kwargs) if tensor is not None else None
            if tensor is not None and call is not None:
                found = _judge(transfer_check, (tensor,), tensor, call[0], call[1])
                _deliver_transfer(found)
        return original(*args, **kwargs)

    return cuda


def wrap_cpu(original: Any) -> Any:
    @functools.wraps(original)
    def cpu(*args: Any, **kwargs: Any) -> Any:
        tensor = None if idle() else _tensor_call(args)
        if tensor is None or bind(args[1:], kwargs, (), _MEMORY_FORMAT) is None:
            return original(*args, **kwargs)
        simulated = _judge(_judge_cpu, (tensor,), tensor)
        result = original(*args, **kwargs)
        return _host_alias(tensor, result) if simulated else result

    return cpu


def _judge_cpu(tensor: torch.Tensor) -> bool:
    if tensor.device.type == "cpu":
        return _simulated_read(tensor, ".cpu()")
    _deliver_transfer(transfer_check(tensor, _CPU, False))
    return False


def wrap_copy(original: Any) -> Any:
    @functools.wraps(original)
    def copy_(*args: Any, **kwargs: Any) -> Any:
        if _ACTIVE.get() and not _is_compiling():
            call = copy_call(args, kwargs)
            if call is not None:
                destination, source, _ = call
                plain = type(destination) is type(source) is _Tensor and not _function_modes()
                if not plain:
                    _deliver_transfer(_judge(_judge_copy, call[:2], *call))
                elif not (destination.is_cuda and source.is_cuda):  # device to device: never
                    _deliver_transfer(_judge_copy(*call))
        return original(*args, **kwargs)

    return copy_


def _judge_copy(
    destination: torch.Tensor, source: torch.Tensor, non_blocking: bool
) -> tuple[str, str] | None:
    return transfer_check(source, destination.device, non_blocking, destination)


def wrap_read(label: str, keywords: tuple[str, ...] = ()) -> Wrap:
    """``tolist`` / ``repr``: a device read; on CPU a simulated one."""

    def wrap(original: Any) -> Any:
        @functools.wraps(original)
        def read(*args: Any, **kwargs: Any) -> Any:
            tensor = None if idle() else _tensor_call(args)
            if tensor is not None and bind(args[1:], kwargs, (), keywords) is not None:
                _judge(_judge_read, (tensor,), tensor, label)
            return original(*args, **kwargs)

        return read

    return wrap


def _judge_read(tensor: torch.Tensor, label: str) -> None:
    device = tensor.device.type
    if device == "cpu":
        _simulated_read(tensor, label)
    elif device != "meta":
        _audit.deliver(DEVICE_TO_HOST, label, simulated=False)


def wrap_from_numpy(original: Any) -> Any:
    @functools.wraps(original)
    def from_numpy(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        if not idle():
            HOST_TENSORS.add(result)
        return result

    return from_numpy


# --- calls of torch.ops.aten.<op>.<overload> and torch.ops.aten.<op> ---------------------
#
# A C++ warning raised inside such a call never becomes a Python warning: torch runs these
# calls without its Python warning handler, so the debug mode's "called a synchronizing CUDA
# operation" goes to stderr, past the audit. The wrappers judge the call themselves, before
# delegating: the aten spellings of ``to`` (``_to_copy``) and ``copy_`` as those methods are
# judged, every other op by the simulation's table of the aten ops that sync (``RULES``),
# when every tensor it is given lives on an accelerator (where that table holds as it holds
# in simulation). Not judged: the ops the audit's own dispatch mode runs, calls under another
# dispatch mode (it decides what runs; its own call of the op is judged where it makes it),
# and tensors of subclasses with a dispatch of their own (fake, functional, DTensor).

_NO_DISPATCH = _Tensor.__torch_dispatch__  # a subclass that keeps it runs the real kernel
_Op, _Packet = torch._ops.OpOverload, torch._ops.OpOverloadPacket
_len_dispatch_modes = torch._C._len_torch_dispatch_stack
_dispatch_mode_at = torch._C._get_dispatch_stack_at
_NOTHING_LIFTED = TensorSet()
_TO_COPY = "aten::_to_copy"
_COPY = "aten::copy_"
_TO_COPY_KEYWORDS = frozenset(
    {"dtype", "layout", "device", "pin_memory", "non_blocking", "memory_format"}
)
_JUDGED = frozenset({f"aten::{name}" for name in RULES if name != "lift_fresh"} | {_TO_COPY, _COPY})


def wrap_op_call(original: Any) -> Any:
    """``OpOverload.__call__``: ``torch.ops.aten.nonzero.default(x)``."""

    @functools.wraps(original)
    def __call__(*args: Any, **kwargs: Any) -> Any:
        if not _ACTIVE.get() or _is_compiling() or type(args[0] if args else None) is not _Op:
            return original(*args, **kwargs)
        name = args[0]._overloadpacket._qualified_op_name
        if name not in _JUDGED or owner(sys._getframe(1).f_code.co_filename) == "syncguard":
            return original(*args, **kwargs)
        return _call_judged(original, name, args[0], args, kwargs)

    return __call__


def wrap_packet_call(original: Any) -> Any:
    """``OpOverloadPacket.__call__``: ``torch.ops.aten.nonzero(x)``, judged as the overload
    torch resolves it to."""

    @functools.wraps(original)
    def __call__(*args: Any, **kwargs: Any) -> Any:
        if not _ACTIVE.get() or _is_compiling() or type(args[0] if args else None) is not _Packet:
            return original(*args, **kwargs)
        name = args[0]._qualified_op_name
        if name not in _JUDGED or owner(sys._getframe(1).f_code.co_filename) == "syncguard":
            return original(*args, **kwargs)
        return _call_judged(original, name, None, args, kwargs)

    return __call__


def _call_judged(
    original: Any, name: str, overload: Any, call: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """Judge ``original(*call, **kwargs)``, a call of the op ``name`` (``call[0]`` is the
    OpOverload, or the packet when ``overload`` is None), then make it; the result of a
    (simulated) copy to the host is host memory."""
    args = call[1:]
    tensors = tuple(tensors_in((*args, *kwargs.values())))
    if _foreign_modes() or any(type(t).__torch_dispatch__ is not _NO_DISPATCH for t in tensors):
        return original(*call, **kwargs)  # no kernel runs here (fake, functional, DTensor...)
    if name == _TO_COPY:
        tensor = args[0] if len(args) == 1 and isinstance(args[0], _Tensor) else None
        copy = _to_copy_call(kwargs) if tensor is not None else None
        if tensor is None or copy is None:
            return original(*call, **kwargs)
        simulated = _judge(_judge_to, tensors, tensor, *copy)
        result = original(*call, **kwargs)
        return _host_alias(tensor, result) if simulated else result
    if name == _COPY:
        found = copy_call(args, kwargs)
        if found is not None:
            _deliver_transfer(_judge(_judge_copy, found[:2], *found))
        return original(*call, **kwargs)
    sync = _judge(_judge_op, tensors, call[0], overload, args, kwargs, tensors)
    if sync is not None:
        _audit.deliver(sync[0], sync[1], simulated=False)
    return original(*call, **kwargs)


def _foreign_modes() -> bool:
    """True under a dispatch mode other than this thread's simulation mode: that mode
    decides what runs (and its own call of the op is judged where it makes it)."""
    count = _len_dispatch_modes()
    if not count:
        return False
    own = _dispatch.current().mode
    return any(_dispatch_mode_at(index) is not own for index in range(count))


def _to_copy_call(kwargs: dict[str, Any]) -> tuple[Any, bool] | None:
    """(target device, non_blocking) of ``_to_copy(self, *, dtype, layout, device, ...)``."""
    non_blocking = kwargs.get("non_blocking", False)
    if not kwargs.keys() <= _TO_COPY_KEYWORDS or type(non_blocking) is not bool:
        return None
    target = _device(kwargs.get("device"))
    return None if target is None or target is _UNKNOWN else (target, non_blocking)


def _judge_op(
    called: Any,
    overload: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    tensors: tuple[torch.Tensor, ...],
) -> tuple[str, str] | None:
    """(kind, detail) when the op syncs by the simulation's table; None when it does not,
    or when some tensor is not on an accelerator (the table assumes they all are)."""
    if not tensors or any(_device_type(tensor) in ("cpu", "meta") for tensor in tensors):
        return None
    try:
        if overload is None:  # a packet: the overload torch resolves the arguments to
            resolved = torch._C._jit_resolve_packet(called._qualified_op_name, *args, **kwargs)
            overload = getattr(called, resolved)
        rule = RULES[overload._overloadpacket.__name__]
        kind = rule(overload, args, kwargs, _NOTHING_LIFTED)
    except Exception:  # a call the op rejects: it raises its own error, unjudged
        return None
    return None if kind is None else (kind, f"torch.ops.{overload}")


def _signature(original: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(original)
    except (TypeError, ValueError):
        return None


def wrap_explicit(label: str) -> Wrap:
    """An explicit synchronize: recorded when the call binds to its signature."""

    def wrap(original: Any) -> Any:
        signature = _signature(original)

        @functools.wraps(original)
        def synchronize(*args: Any, **kwargs: Any) -> Any:
            if not idle() and _binds(signature, args, kwargs):
                _audit.deliver(EXPLICIT, label, simulated=False)
            return original(*args, **kwargs)

        return synchronize

    return wrap


def _binds(signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: Any) -> bool:
    if signature is None:
        return True
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        return False
    return True
