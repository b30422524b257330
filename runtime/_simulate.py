"""Simulation: report the aten ops that would sync if the tensors lived on an accelerator.

Every tensor counts as device memory unless it is known to be host memory: marked with
:func:`syncguard.runtime.mark_host`, made by ``torch.from_numpy``, the result of a
(simulated) copy to the host, or computed only from such tensors. This module imports
torch; the audit loads it only when a simulated audit starts.
"""

from __future__ import annotations

import os
import sys
import weakref
from collections.abc import Callable, Iterator
from types import FrameType
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


def tensors_in(args: tuple[Any, ...] | list[Any]) -> Iterator[torch.Tensor]:
    """The tensors among ``args`` and in the lists and tuples among them."""
    for arg in args:
        if isinstance(arg, torch.Tensor):
            yield arg
        elif isinstance(arg, (list, tuple)):
            yield from (item for item in arg if isinstance(item, torch.Tensor))


def _all_host(args: tuple[Any, ...]) -> bool:
    found = False
    for tensor in tensors_in(args):
        if tensor not in HOST_TENSORS:
            return False
        found = True
    return found


Rule = Callable[[Any, tuple[Any, ...], dict[str, Any], TensorSet], "str | None"]


def _always(kind: str) -> Rule:
    return lambda func, args, kwargs, lifted: kind


def _has_mask(indices: Any) -> bool:
    """A boolean mask among ``indices`` that lives on the device (a host mask is turned
    into indices on the host, without waiting for the GPU)."""
    return any(
        isinstance(index, torch.Tensor)
        and index.dtype in (torch.bool, torch.uint8)
        and index not in HOST_TENSORS
        for index in (indices or ())
    )


def _host_index(indices: Any, lifted: TensorSet) -> bool:
    """An integer index built on the host (``x[[0, 3]]``, ``x[idx_cpu]``): copied to the
    device with a blocking copy."""
    return any(
        isinstance(index, torch.Tensor)
        and index.dtype not in (torch.bool, torch.uint8)
        and (index in lifted or index in HOST_TENSORS)
        for index in (indices or ())
    )


def _index(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    indices = args[1] if len(args) > 1 else None
    if _has_mask(indices):
        return DATA_DEPENDENT_SHAPE
    return HOST_TO_DEVICE if _host_index(indices, lifted) else None


def _index_put(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    """``x[mask] = 0.0`` is a masked fill; a tensor value or a value tensor syncs."""
    if not _has_mask(args[1] if len(args) > 1 else None):
        return HOST_TO_DEVICE if _host_index(args[1] if len(args) > 1 else None, lifted) else None
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
    """Two distinct tensors of one shape are compared on the device and read back; other
    shapes are unequal without reading anything."""
    if args[0] is args[1] or args[0].shape != args[1].shape:
        return None
    return SCALAR_CONVERSION


def _normal(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    """``normal`` with tensors for both ``mean`` and ``std`` checks ``std >= 0`` on the host
    (a Python-number ``mean`` does not, on CUDA)."""
    return SCALAR_CONVERSION if func._overloadname == "Tensor_Tensor" else None


def _nonempty(kind: str) -> Rule:
    """Syncs unless every tensor argument is empty (an empty input returns early)."""

    def rule(
        func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
    ) -> str | None:
        return kind if any(tensor.numel() for tensor in tensors_in(args)) else None

    return rule


def _tensor_bounds(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    """``linspace`` / ``logspace`` read tensor ``start`` / ``end`` as Python numbers."""
    bounds = [arg for arg in args[:2] if isinstance(arg, torch.Tensor) and arg not in lifted]
    return SCALAR_CONVERSION if bounds and not all(b in HOST_TENSORS for b in bounds) else None


def _rectangular(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    """LU of a rectangular matrix synchronizes on CUDA (no debug-mode warning); square
    matrices do not."""
    matrix = args[0]
    return SCALAR_CONVERSION if matrix.numel() and matrix.shape[-1] != matrix.shape[-2] else None


def _batched(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    """Batched Cholesky solves and inverses synchronize on CUDA (no debug-mode warning)."""
    matrix = args[0]
    return SCALAR_CONVERSION if matrix.numel() and matrix.dim() > 2 else None


def _index_fill(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    value = args[3] if len(args) > 3 else kwargs.get("value")
    if isinstance(value, torch.Tensor) and value not in lifted:
        return SCALAR_CONVERSION
    return None


def _searchsorted(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    return SCALAR_CONVERSION if kwargs.get("sorter") is not None else None


def _segment_reduce(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    """With ``lengths`` and without ``unsafe=True`` the lengths are checked on the host."""
    checked = kwargs.get("lengths") is not None and not kwargs.get("unsafe", False)
    return SCALAR_CONVERSION if checked else None


def _isin(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    """``isin`` sorts (and syncs) unless ``test_elements`` is small next to ``elements``."""
    elements, test = args[0], args[1]
    if not isinstance(elements, torch.Tensor) or not isinstance(test, torch.Tensor):
        return None
    brute_force = test.numel() < int(10.0 * float(elements.numel()) ** 0.145)
    return None if brute_force else DATA_DEPENDENT_SHAPE


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


# Torch functions that build a small tensor from Python values on their input's device
# (``torch.tensor(..., device=x.device)``): on a GPU a blocking host-to-device copy, on the
# CPU no copy at all, so simulation reports the ``lift_fresh`` they make. (file under
# torch/, function); "*" for every function of the file.
_BUILT_ON_DEVICE = {
    ("masked/_ops.py", "_reduction_identity"),
    ("functional.py", "_unravel_index"),
    ("signal/windows/windows.py", "*"),
}
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_OWN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PASS_THROUGH = ("_dynamo" + os.sep, "_compile.py", "utils" + os.sep + "_python_dispatch.py")


def _lift_fresh(
    func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], lifted: TensorSet
) -> str | None:
    """A tensor made from Python data by one of the ``_BUILT_ON_DEVICE`` functions."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith(_OWN_DIR):
            if not path.startswith(_TORCH_DIR):
                return None  # made in user code: copies from there are seen as copies
            inner = path[len(_TORCH_DIR) :]
            if not inner.startswith(_PASS_THROUGH):
                built = {(inner, frame.f_code.co_name), (inner, "*")} & _BUILT_ON_DEVICE
                return HOST_TO_DEVICE if built else None
        frame = frame.f_back
    return None


RULES: dict[str, Rule] = {
    "lift_fresh": _lift_fresh,
    "_local_scalar_dense": _always(SCALAR_CONVERSION),
    # composite ops: the dispatch mode sees the ops they run (above), a torch.ops call of
    # one on the CUDA path only the op itself (see _wrappers)
    "item": _always(SCALAR_CONVERSION),
    "argwhere": _always(DATA_DEPENDENT_SHAPE),
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
    "index_fill": _index_fill,
    "index_fill_": _index_fill,
    "searchsorted": _searchsorted,
    "segment_reduce": _segment_reduce,
    "isin": _isin,
    "linspace": _tensor_bounds,
    "logspace": _tensor_bounds,
    # linear algebra (operator sweep, H200): computed on the host, or an `info` check
    "linalg_eig": _nonempty(DEVICE_TO_HOST),
    "_linalg_eigh": _nonempty(SCALAR_CONVERSION),
    "_linalg_svd": _nonempty(SCALAR_CONVERSION),
    "linalg_lstsq": _nonempty(SCALAR_CONVERSION),
    "linalg_pinv": _nonempty(SCALAR_CONVERSION),
    "linalg_matrix_exp": _nonempty(DEVICE_TO_HOST),
    "cholesky": _nonempty(SCALAR_CONVERSION),
    "linalg_ldl_factor_ex": _nonempty(SCALAR_CONVERSION),
    "linalg_ldl_solve": _nonempty(SCALAR_CONVERSION),
    "linalg_lu": _rectangular,
    "linalg_lu_factor_ex": _rectangular,
    "cholesky_solve": _batched,
    "cholesky_inverse": _batched,
    # lengths read on the host; non-zero count
    "_ctc_loss": _nonempty(DEVICE_TO_HOST),
    "_to_sparse": _nonempty(DATA_DEPENDENT_SHAPE),
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
    given = [*getattr(call, "args", ())[1:2]]
    given += [k.value for k in getattr(call, "keywords", ()) if k.arg == "num_classes"]
    return bool(given) and not _is_minus_one(given[0])


def _is_minus_one(node: Any) -> bool:
    """``-1`` written in the source (``num_classes=-1`` means "infer it": a sync)."""
    operand = getattr(node, "operand", None)
    return type(node).__name__ == "UnaryOp" and getattr(operand, "value", None) == 1


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
            for tensor in tensors_in(result if isinstance(result, (tuple, list)) else (result,)):
                HOST_TENSORS.add(tensor)
        return result
