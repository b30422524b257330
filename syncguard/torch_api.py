"""What torch, numpy and Python builtins return: the tables the placement of values reads
(host methods, tensor-only methods, factories, dtypes...), and the kind of a torch result."""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping, Sequence

from syncguard.values import EVENT, HOST, PYSEQ, STREAM, TENSOR, Value

# Helpers whose name says they return a fresh pinned host tensor (np_to_pinned_tensor).
PINNING_HELPER = re.compile(
    r"(?:^|_)(?:to|make|new|alloc|allocate)_pinned(?:_|$)|^_*pinned_(?:empty|zeros|ones|tensor)"
)
HOST_MODULES = frozenset(
    {"numpy", "math", "random", "itertools", "functools", "operator", "threading", "asyncio",
     "multiprocessing", "queue", "time"}
)  # fmt: skip
EXTERNAL_ROOTS = frozenset({"torch", "numpy", "triton", "math", "builtins", "typing"})
BUILTIN_NAMES = frozenset(dir(builtins))
# Builtins whose result is a plain Python value on the host.
HOST_BUILTINS = frozenset(
    {
        "len", "range", "int", "float", "bool", "str", "repr", "format", "isinstance",
        "issubclass", "hasattr", "getattr", "callable", "id", "hash", "type", "print",
        "complex", "ord", "chr", "divmod", "round", "object", "super",
    }
)  # fmt: skip
NUMBER_BUILTINS = frozenset({"len", "int", "float", "round", "ord", "hash", "id"})
# Builtins whose result carries the placement of their arguments.
PASSTHROUGH_BUILTINS = frozenset(
    {"list", "tuple", "set", "frozenset", "sorted", "reversed", "enumerate", "zip", "iter",
     "next", "min", "max", "sum", "abs", "dict", "map", "filter"}
)  # fmt: skip
# Tensor attributes that are host metadata.
HOST_ATTRIBUTES = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "layout", "requires_grad",
     "is_leaf", "itemsize", "nbytes", "names"}
)  # fmt: skip
# Tensor methods returning host values (Python numbers, sizes, host tensors).
HOST_METHODS = frozenset(
    {"cpu", "numpy", "tolist", "item", "size", "dim", "numel", "nelement", "stride",
     "data_ptr", "element_size", "is_contiguous", "get_device", "storage_offset", "ndimension",
     "is_pinned", "untyped_storage", "keys", "__len__", "is_floating_point", "is_complex",
     "is_signed", "is_nonzero", "is_inference", "is_same_size", "is_set_to", "is_shared",
     "is_coalesced", "equal", "allclose", "has_names"}
)  # fmt: skip
BOOL_METHODS = frozenset(
    {"bool", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "logical_and",
     "logical_or", "logical_not", "logical_xor", "isneginf", "isposinf", "isreal", "signbit"}
)  # fmt: skip
INDEX_METHODS = frozenset({"long", "int", "argmax", "argmin", "argsort"})
# Methods only tensors have: their result is a tensor even when the receiver is unknown.
# (Generic names such as ``clone``, ``view`` or ``log`` are left out: other objects have them.)
TENSOR_METHODS = frozenset(
    {"sum", "mean", "max", "min", "amax", "amin", "aminmax", "argmax", "argmin", "any",
     "all", "prod", "norm", "std", "var", "cumsum", "cumprod", "abs", "sqrt", "exp",
     "clamp", "clamp_min", "clamp_max", "float", "half", "bfloat16", "double", "long", "int",
     "bool", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "logical_and",
     "logical_or", "logical_not", "masked_fill", "index_select", "softmax", "log_softmax",
     "sigmoid", "count_nonzero", "new_zeros", "new_ones", "new_empty", "new_full",
     "new_tensor", "view", "reshape", "flatten", "squeeze", "unsqueeze", "permute",
     "contiguous"}
)  # fmt: skip
# torch functions returning Python values (bools, numbers, dtypes), not tensors.
PYTHON_RESULTS = frozenset(
    {"equal", "allclose", "is_nonzero", "is_tensor", "is_floating_point", "is_complex",
     "is_storage", "is_same_size", "numel", "can_cast", "result_type", "promote_types"}
)  # fmt: skip
# Tensor methods and torch functions returning a tuple of tensors, not one tensor.
SEQUENCE_OPS = frozenset(
    {"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit",
     "split_with_sizes", "meshgrid", "broadcast_tensors"}
)  # fmt: skip
STREAM_FACTORIES = frozenset({"Stream", "current_stream", "default_stream", "ExternalStream"})
EVENT_FACTORIES = frozenset({"Event"})
# Gradient scalers (torch.amp.GradScaler, the deprecated torch.cuda.amp one), relative to torch.
GRAD_SCALERS = frozenset(
    {"amp.GradScaler", "amp.grad_scaler.GradScaler", "cuda.amp.GradScaler",
     "cuda.amp.grad_scaler.GradScaler"}
)  # fmt: skip
# torch namespaces whose functions compute tensors (not objects, streams or settings).
TENSOR_NAMESPACES = frozenset({"", "nn.functional", "linalg", "fft", "special"})
# Tensor methods returning a view or same-kind tensor of the receiver: its tags carry over.
VIEW_METHODS = frozenset(
    {"view", "reshape", "flatten", "narrow", "select", "squeeze", "unsqueeze", "permute",
     "transpose", "t", "expand", "expand_as", "view_as", "unflatten", "detach", "contiguous",
     "clone", "__getitem__"}
)  # fmt: skip
BOOL_DTYPES = frozenset({"torch.bool"})
INDEX_DTYPES = frozenset({"torch.long", "torch.int64", "torch.int", "torch.int32"})
# Factories whose default dtype is an integer type (an index tensor unless told otherwise).
INDEX_FACTORIES = frozenset({"arange", "randint", "randperm", "tril_indices", "triu_indices"})
# torch functions that create tensors: device from ``device=`` (host by default).
FACTORIES = frozenset(
    {"zeros", "ones", "empty", "full", "arange", "tensor", "as_tensor", "asarray", "randn",
     "rand", "randint", "randperm", "linspace", "logspace", "eye", "empty_strided",
     "scalar_tensor", "tril_indices", "triu_indices", "from_numpy", "frombuffer"}
)  # fmt: skip
LIKE_FACTORIES = frozenset(
    {"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
     "randint_like"}
)  # fmt: skip
# Module state that moves with the module (``model.to(device)``): never known host data.
MODULE_STATE = frozenset({"nn.Parameter", "nn.Buffer", "nn.parameter.Parameter"})
DTYPE_WORDS = ("dtype", "float", "half", "int", "long", "bool", "bfloat16", "double")


def torch_name(written: str, imports: Mapping[str, str]) -> str:
    """``amp.GradScaler`` for a class written ``GradScaler`` (imported from ``torch.amp``)
    or ``torch.amp.GradScaler``: its name relative to torch; "" when it is not torch's."""
    head, dot, rest = written.partition(".")
    qualified = imports.get(head, "") + dot + rest
    return qualified[len("torch.") :] if qualified.startswith("torch.") else ""


def is_tensor(value: Value) -> bool:
    return TENSOR in value.tags and PYSEQ not in value.tags


def tensor_result(result: Value, operands: Sequence[Value]) -> bool:
    """True when an operator's ``result`` is a tensor living where a tensor operand does.

    ``host_tensor < self.threshold`` is unknown only because of the other operand,
    which is then most likely a Python number: the result is not known to be a
    tensor that may be on the device.
    """
    return any(is_tensor(value) and value.place >= result.place for value in operands)


def torch_result_kind(function: str, result: Value) -> Value:
    """Tag what ``torch.<function>`` returns: a stream, an event, a tuple of tensors,
    or a tensor (functions of the tensor namespaces, when the data may be on the device)."""
    namespace, _, name = function.rpartition(".")
    if namespace == "" and name in PYTHON_RESULTS:
        return HOST
    if namespace in ("", "cuda", "xpu", "accelerator"):
        if name in STREAM_FACTORIES:
            return HOST.with_tags(STREAM)
        if name in EVENT_FACTORIES:
            return HOST.with_tags(EVENT)
    if result.on_host or result.tags & {PYSEQ, STREAM, EVENT} or name[:1].isupper():
        return result
    if namespace not in TENSOR_NAMESPACES and not namespace.startswith("ops"):
        return result
    if name in SEQUENCE_OPS:
        return Value(result.place, result.params, frozenset((PYSEQ,)))
    return result.with_tags(TENSOR)
