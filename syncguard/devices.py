"""Where tensors are made and moved to: the device a factory, a ``.to(...)`` or a
constructor of torch names, and the dtypes that make masks and index tensors -- the part
of :class:`~syncguard.placement.Placement` that reads devices and dtypes."""

from __future__ import annotations

import ast
from abc import abstractmethod

from syncguard.scope import AnalyzerState
from syncguard.torch_api import (
    BOOL_DTYPES,
    BOOL_METHODS,
    DTYPE_WORDS,
    FACTORIES,
    GRAD_SCALERS,
    INDEX_DTYPES,
    INDEX_FACTORIES,
    LIKE_FACTORIES,
    MODULE_STATE,
    torch_result_kind,
)
from syncguard.values import (
    BOOL,
    DEVICE,
    FUSED,
    GRAD_SCALER,
    HOST,
    INDEX,
    OPAQUE,
    PAGEABLE,
    PINNED,
    TENSOR,
    UNKNOWN,
    Value,
    join,
)


class DevicePlacement(AnalyzerState):
    """Devices and dtypes of what torch makes; expressions are placed by the subclass."""

    @abstractmethod
    def value(self, node: ast.expr) -> Value:
        """Where the data of ``node`` lives (see :class:`~syncguard.placement.Placement`)."""

    @abstractmethod
    def _is_host_data(self, node: ast.expr) -> bool:
        """True for host data: a ``*_cpu`` array, a host tensor or mask."""

    def _to_value(self, node: ast.Call, receiver: Value) -> Value:
        target = self._keyword(node, "device")
        if target is None and node.args:
            target = node.args[0]
        if target is None:
            dtype = self._keyword(node, "dtype")
            return self._with_dtype(receiver, dtype) if dtype is not None else receiver
        if isinstance(target, ast.Constant) and isinstance(target.value, str):
            return self._device_value(target)
        qualified = self.qualified_name(target)
        if qualified is not None and qualified.startswith("torch.") and qualified != "torch.device":
            return self._with_dtype(receiver, target)  # a dtype such as torch.float32
        if isinstance(target, ast.Call) and self.qualified_name(target.func) == "torch.device":
            return self._device_value(target)
        text = self.source(target).lower()
        if "device" in text or "cuda" in text:
            return DEVICE.with_tags(TENSOR)
        if any(word in text for word in DTYPE_WORDS):
            return receiver
        return UNKNOWN

    def _device_value(self, device: ast.expr) -> Value:
        """The placement of a tensor created on ``device``."""
        if isinstance(device, ast.Call) and device.args:
            device = device.args[0]  # torch.device("cpu")
        if isinstance(device, ast.Constant):
            if device.value is None:
                return UNKNOWN if self.scope.default_device else HOST.with_tags(TENSOR)
            if isinstance(device.value, str) and device.value.startswith("cpu"):
                return HOST.with_tags(TENSOR)
            return DEVICE.with_tags(TENSOR)
        text = self.source(device).lower()
        if "cpu" in text:
            return HOST.with_tags(TENSOR)
        if isinstance(device, ast.Name):
            source = self.scope.assigned.get(device.id)
            if isinstance(source, ast.Attribute) and source.attr == "device":
                device = source  # device = ids.device; torch.zeros(n, device=device)
        if (
            isinstance(device, ast.Attribute)
            and device.attr == "device"
            and self._is_host_data(device.value)
        ):
            return HOST.with_tags(TENSOR)  # torch.full(n, v, device=host_tensor.device)
        # A device named by a variable or a parameter (``device=x.device``, ``device=device``)
        # is the accelerator the model runs on: callers pass ``x.device`` or ``self.device``,
        # host values that name the device, so the caller's argument cannot decide.
        return DEVICE.with_tags(TENSOR)

    def _torch_call_value(self, node: ast.Call, function: str) -> Value:
        name = function.rpartition(".")[2]
        if function in MODULE_STATE:
            return UNKNOWN.with_tags(TENSOR)
        if function.startswith("nn.") and name[:1].isupper():
            return UNKNOWN  # a module: its weights live wherever the model is moved
        out = self._keyword(node, "out")
        if out is not None:
            return self.value(out)
        if function in FACTORIES or function in LIKE_FACTORIES:
            device = self._keyword(node, "device")
            if device is not None:
                value = self._device_value(device)
            elif function in LIKE_FACTORIES and node.args:
                value = self.value(node.args[0]).without_tags()
            elif function == "from_numpy":
                value = HOST
            else:
                value = UNKNOWN if self.scope.default_device else HOST
            tags = {TENSOR}
            pin_memory = self._keyword(node, "pin_memory")
            if pin_memory is not None and not (
                isinstance(pin_memory, ast.Constant) and not pin_memory.value
            ):
                # pin_memory=True, or a flag such as pin_memory=is_pin_memory_available():
                # the author asks for pinned memory wherever the platform has it.
                tags.add(PINNED)
                value = HOST
            elif value.on_host and function not in LIKE_FACTORIES:
                tags.add(PAGEABLE)
            dtype = self._keyword(node, "dtype")
            if dtype is not None:
                tags |= self._dtype_tags(dtype)
            elif function in INDEX_FACTORIES:
                tags.add(INDEX)
            return Value(value.place, value.params, frozenset(tags))
        if function.startswith(("cuda.", "distributed.", "backends.", "jit.", "compiler.")):
            device = self._keyword(node, "device")
            if device is not None and name in FACTORIES:
                # A factory of a submodule (symmetric memory's ``empty(n, device=d)``)
                # makes its tensor on that device, as torch.empty does.
                return self._device_value(device)
            return HOST
        if function in ("is_tensor", "numel", "get_default_dtype", "is_grad_enabled"):
            return HOST
        operands = [self.value(arg) for arg in node.args]
        operands += [self.value(keyword.value) for keyword in node.keywords if keyword.arg]
        result = join(*operands) if operands else HOST
        placed = [operand for operand in operands if not operand.on_host]
        if len(placed) == 1:  # torch.any(lens <= 0) of one item: where that item was read
            result = result.with_tags(*placed[0].provenance)
        if name in BOOL_METHODS or name in ("isin", "isclose"):
            return result.with_tags(BOOL)
        if result.on_host and name[:1].islower() and name not in ("device", "finfo", "iinfo"):
            if any(OPAQUE in operand.tags for operand in operands):
                return result.with_tags(TENSOR)  # maybe a view of what the list holds
            return result.with_tags(PAGEABLE)  # a new host tensor in ordinary memory
        return result

    def _constructed(self, node: ast.Call, function: str, result: Value) -> Value:
        """What ``torch.<function>(...)`` returns (:func:`torch_result_kind`), and what its
        constructor call says of it: a gradient scaler, unless built for the CPU or with
        ``enabled=False``; an object built with ``fused=True``."""
        if function in GRAD_SCALERS:
            device = node.args[0] if function.startswith("amp.") and node.args else None
            device = self._keyword(node, "device") or device
            enabled = self._keyword(node, "enabled")
            on_cpu = isinstance(device, ast.Constant) and device.value == "cpu"
            if on_cpu or (isinstance(enabled, ast.Constant) and enabled.value is False):
                return HOST
            return HOST.with_tags(GRAD_SCALER)
        fused = self._keyword(node, "fused")
        result = torch_result_kind(function, result)
        if isinstance(fused, ast.Constant) and fused.value is True:
            return result.with_tags(FUSED)
        return result

    def _asks_pinned(self, node: ast.Call) -> bool:
        """A call passing ``pin_memory=`` something other than False: a helper such as
        ``make_tensor_with_pad(..., pin_memory=PIN_MEMORY)`` building a pinned host tensor.
        (torch factories are handled with their other arguments.)"""
        flag = self._keyword(node, "pin_memory")
        if flag is None or (isinstance(flag, ast.Constant) and not flag.value):
            return False
        qualified = self.qualified_name(node.func) or ""
        return not qualified.startswith("torch.")

    def _dtype_tags(self, dtype: ast.expr) -> frozenset[str]:
        """Boolean and integer dtypes make masks and index tensors."""
        qualified = self.qualified_name(dtype)
        if qualified in BOOL_DTYPES:
            return frozenset((BOOL,))
        if qualified in INDEX_DTYPES:
            return frozenset((INDEX,))
        return frozenset()

    def _with_dtype(self, value: Value, dtype: ast.expr) -> Value:
        """``value`` converted to ``dtype`` (a conversion copies: pinned-ness is not kept)."""
        kept = value.tags & {TENSOR} | value.provenance  # still where it was read from
        return Value(value.place, value.params, kept | self._dtype_tags(dtype))
