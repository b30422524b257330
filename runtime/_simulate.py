"""Simulation: report the aten ops that would sync if the tensors lived on an accelerator.

Every tensor counts as device memory unless it is known to be host memory: marked with
:func:`syncguard.runtime.mark_host`, made by ``torch.from_numpy``, the result of a
(simulated) copy to the host, or computed only from such tensors. This module imports
torch; the audit loads it only when a simulated audit starts.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from syncguard.runtime._events import (
    DATA_DEPENDENT_SHAPE,
    DEVICE_TO_HOST,
    HOST_TO_DEVICE,
    SCALAR_CONVERSION,
)
from syncguard.runtime._frames import CallSite


class TensorSet:
    """Tensors by identity, held weakly (tensors compare element-wise, so no WeakSet)."""

    def __init__(self) -> None:
        self._refs: dict[int, weakref.ref[torch.Tensor]] = {}

    def add(self, tensor: torch.Tensor) -> None:
        """Remember ``tensor`` until it is garbage."""
        key = id(tensor)

        def forget(ref: weakref.ref[torch.Tensor]) -> None:
            if self._refs.get(key) is ref:
                del self._refs[key]

        self._refs[key] = weakref.ref(tensor, forget)

    def __contains__(self, tensor: object) -> bool:
        ref = self._refs.get(id(tensor))
        return ref is not None and ref() is tensor

    def __len__(self) -> int:
        return len(self._refs)


HOST_TENSORS = TensorSet()


def is_host(tensor: torch.Tensor) -> bool:
    """True when simulation treats ``tensor`` as host memory."""
    return tensor in HOST_TENSORS


def _tensors(args: tuple[Any, ...] | list[Any]) -> Iterator[torch.Tensor]:
    for arg in args:
        if isinstance(arg, torch.Tensor):
            yield arg
        elif isinstance(arg, (list, tuple)):
            yield from (item for item in arg if isinstance(item, torch.Tensor))


def _all_host(args: tuple[Any, ...]) -> bool:
    found = False
    for tensor in _tensors(args):
        if tensor not in HOST_TENSORS:
            return False
        found = True
    return found


Rule = Callable[[Any, tuple[Any, ...], dict[str, Any], TensorSet], "str | None"]


def _always(kind: str) -> Rule:
    return lambda func, args, kwargs, lifted: kind


def _has_mask(indices: Any) -> bool:
    return any(
        isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8)
        for index in (indices or ())
    )


def _index(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    return DATA_DEPENDENT_SHAPE if _has_mask(args[1] if len(args) > 1 else None) else None


def _index_put(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    """``x[mask] = 0.0`` is a masked fill; a tensor value or a value tensor syncs."""
    if not _has_mask(args[1] if len(args) > 1 else None):
        return None
    values = args[2] if len(args) > 2 else kwargs.get("values")
    python_scalar = isinstance(values, torch.Tensor) and values.dim() == 0 and values in lifted
    return None if python_scalar else DATA_DEPENDENT_SHAPE


def _masked_fill(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    value = args[2] if len(args) > 2 else kwargs.get("value")
    if isinstance(value, torch.Tensor) and value not in lifted:
        return SCALAR_CONVERSION
    return None


def _repeat_interleave(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    if func._overloadname != "Tensor":
        return None
    return DATA_DEPENDENT_SHAPE if kwargs.get("output_size") is None else None


def _histc(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    low = args[2] if len(args) > 2 else kwargs.get("min", 0)
    high = args[3] if len(args) > 3 else kwargs.get("max", 0)
    return DATA_DEPENDENT_SHAPE if low == high else None


def _equal(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    return None if args[0] is args[1] else SCALAR_CONVERSION


def _normal(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    """``normal`` with a tensor ``std`` checks ``std >= 0`` on the host."""
    return SCALAR_CONVERSION if func._overloadname in ("Tensor_Tensor", "float_Tensor") else None


def _transfer(source: torch.device, target: torch.device) -> str | None:
    if source.type == target.type:
        return None
    if target.type == "cpu":
        return DEVICE_TO_HOST
    return HOST_TO_DEVICE if source.type == "cpu" else None


def _to_copy(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    target = kwargs.get("device")
    if target is None or not isinstance(args[0], torch.Tensor):
        return None
    return _transfer(args[0].device, torch.device(target))


def _copy(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    destination, source = args[0], args[1]
    if not isinstance(source, torch.Tensor):
        return None
    if source in lifted:
        return HOST_TO_DEVICE  # buf[0] = 0, x.copy_(torch.tensor([...])): host values uploaded
    return _transfer(source.device, destination.device)


RULES: dict[str, Rule] = {
    "_local_scalar_dense": _always(SCALAR_CONVERSION),
    "is_nonzero": _always(SCALAR_CONVERSION),
    "allclose": _always(SCALAR_CONVERSION),
    "_linalg_check_errors": _always(SCALAR_CONVERSION),
    "nonzero": _always(DATA_DEPENDENT_SHAPE),
    "masked_select": _always(DATA_DEPENDENT_SHAPE),
    "_unique": _always(DATA_DEPENDENT_SHAPE),
    "_unique2": _always(DATA_DEPENDENT_SHAPE),
    "unique_dim": _always(DATA_DEPENDENT_SHAPE),
    "unique_consecutive": _always(DATA_DEPENDENT_SHAPE),
    "unique_dim_consecutive": _always(DATA_DEPENDENT_SHAPE),
    "bincount": _always(DATA_DEPENDENT_SHAPE),
    "index": _index,
    "index_put": _index_put,
    "index_put_": _index_put,
    "_index_put_impl_": _index_put,
    "masked_fill": _masked_fill,
    "masked_fill_": _masked_fill,
    "repeat_interleave": _repeat_interleave,
    "histc": _histc,
    "equal": _equal,
    "normal": _normal,
    "_to_copy": _to_copy,
    "copy_": _copy,
}


def cpu_only_validation(site: CallSite) -> bool:
    """Calls whose CPU kernel reads values back for a check the CUDA kernel skips.

    ``F.one_hot(idx, num_classes)`` checks ``idx.min() >= 0`` on CPU only (CUDA relies on
    a device assert), so it would be reported although it does not sync on a GPU.
    """
    call = site.node
    if site.callee != "one_hot" or call is None or not hasattr(call, "args"):
        return False
    keywords = {keyword.arg for keyword in getattr(call, "keywords", ())}
    return len(getattr(call, "args", ())) >= 2 or "num_classes" in keywords


Report = Callable[..., bool]


class SimulatedSyncMode(TorchDispatchMode):
    """Dispatch mode that reports would-be syncs through ``report(kind, detail, ...)``."""

    def __init__(self, report: Report) -> None:
        super().__init__()
        self._report = report
        self._lifted = TensorSet()

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Keep ``__torch_dispatch__`` unwrapped: torch's wrapper imports torch._dynamo on
        the first op (seconds per process), and this mode never compiles anything."""
        return False

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        rule = RULES.get(func.overloadpacket.__name__)
        if rule is not None:
            kind = rule(func, args, kwargs, self._lifted)
            if kind is not None and not _all_host(args):
                detail = str(func).removesuffix(".default")
                self._report(kind, detail, simulated=True, exempt=cpu_only_validation)
        result = func(*args, **kwargs)
        if func is torch.ops.aten.lift_fresh.default:
            self._lifted.add(result)
        elif len(HOST_TENSORS) and _all_host(args):
            for tensor in _tensors(result if isinstance(result, (tuple, list)) else (result,)):
                HOST_TENSORS.add(tensor)
        return result
