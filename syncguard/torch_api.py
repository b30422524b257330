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
     "_typed_storage", "typed_storage", "_size",
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


# The public methods and attributes of ``torch.Tensor`` (torch 2.13): an object of unknown
# class with one of these called on it is most likely a tensor, not an object of the tree.
TENSOR_API = frozenset(
    """
    H T abs abs_ absolute absolute_ acos acos_ acosh acosh_ add add_ addbmm addbmm_ addcdiv
    addcdiv_ addcmul addcmul_ addmm addmm_ addmv addmv_ addr addr_ adjoint all allclose amax
    amin aminmax angle any apply_ arccos arccos_ arccosh arccosh_ arcsin arcsin_ arcsinh
    arcsinh_ arctan arctan2 arctan2_ arctan_ arctanh arctanh_ argmax argmin argsort argwhere
    as_strided as_strided_ as_strided_scatter as_subclass asin asin_ asinh asinh_ atan atan2
    atan2_ atan_ atanh atanh_ backward baddbmm baddbmm_ bernoulli bernoulli_ bfloat16 bincount
    bitwise_and bitwise_and_ bitwise_left_shift bitwise_left_shift_ bitwise_not bitwise_not_
    bitwise_or bitwise_or_ bitwise_right_shift bitwise_right_shift_ bitwise_xor bitwise_xor_ bmm
    bool broadcast_to byte cauchy_ ccol_indices cdouble ceil ceil_ cfloat chalf char cholesky
    cholesky_inverse cholesky_solve chunk clamp clamp_ clamp_max clamp_max_ clamp_min clamp_min_
    clip clip_ clone coalesce col_indices conj conj_physical conj_physical_ const_data_ptr
    contiguous copy_ copysign copysign_ corrcoef cos cos_ cosh cosh_ count_nonzero cov cpu cross
    crow_indices cuda cummax cummin cumprod cumprod_ cumsum cumsum_ data data_ptr deg2rad
    deg2rad_ dense_dim dequantize det detach detach_ device diag diag_embed diagflat diagonal
    diagonal_scatter diff digamma digamma_ dim dim_order dist div div_ divide divide_ dot double
    dsplit dtype eig element_size eq eq_ equal erf erf_ erfc erfc_ erfinv erfinv_ exp exp2 exp2_
    exp_ expand expand_as expm1 expm1_ exponential_ fill_ fill_diagonal_ fix fix_ flatten flip
    fliplr flipud float float_power float_power_ floor floor_ floor_divide floor_divide_ fmax
    fmin fmod fmod_ frac frac_ frexp gather gcd gcd_ ge ge_ geometric_ geqrf ger get_device grad
    grad_dtype grad_fn greater greater_ greater_equal greater_equal_ gt gt_ half hardshrink
    hash_tensor heaviside heaviside_ histc histogram hsplit hypot hypot_ i0 i0_ igamma igamma_
    igammac igammac_ imag index index_add index_add_ index_copy index_copy_ index_fill
    index_fill_ index_put index_put_ index_reduce index_reduce_ index_select indices inner int
    int_repr inverse ipu is_coalesced is_complex is_conj is_contiguous is_cpu is_cuda
    is_distributed is_floating_point is_inference is_ipu is_leaf is_maia is_meta is_mkldnn
    is_mps is_mtia is_neg is_nested is_nonzero is_pinned is_quantized is_same_size is_set_to
    is_shared is_signed is_sparse is_sparse_csr is_vulkan is_xla is_xpu isclose isfinite isinf
    isnan isneginf isposinf isreal istft item itemsize kron kthvalue layout lcm lcm_ ldexp
    ldexp_ le le_ lerp lerp_ less less_ less_equal less_equal_ lgamma lgamma_ log log10 log10_
    log1p log1p_ log2 log2_ log_ log_normal_ log_softmax logaddexp logaddexp2 logcumsumexp
    logdet logical_and logical_and_ logical_not logical_not_ logical_or logical_or_ logical_xor
    logical_xor_ logit logit_ logsumexp long lstsq lt lt_ lu lu_solve mH mT map2_ map_
    masked_fill masked_fill_ masked_scatter masked_scatter_ masked_select matmul matrix_exp
    matrix_power max maximum mean median min minimum mm mode module_load moveaxis movedim msort
    mtia mul mul_ multinomial multiply multiply_ mv mvlgamma mvlgamma_ name nan_to_num
    nan_to_num_ nanmean nanmedian nanquantile nansum narrow narrow_copy nbytes ndim ndimension
    ne ne_ neg neg_ negative negative_ nelement new new_empty new_empty_strided new_full
    new_ones new_tensor new_zeros nextafter nextafter_ nonzero nonzero_static norm normal_
    not_equal not_equal_ numel numpy orgqr ormqr outer output_nr permute pin_memory pinverse
    polygamma polygamma_ positive pow pow_ prelu prod put put_ q_per_channel_axis
    q_per_channel_scales q_per_channel_zero_points q_scale q_zero_point qr qscheme quantile
    rad2deg rad2deg_ random_ ravel real reciprocal reciprocal_ record_stream register_hook
    register_post_accumulate_grad_hook reinforce relu relu_ remainder remainder_ renorm renorm_
    repeat repeat_interleave requires_grad requires_grad_ reshape reshape_as resize resize_
    resize_as resize_as_ resize_as_sparse_ resolve_conj resolve_neg retain_grad retains_grad
    roll rot90 round round_ row_indices rsqrt rsqrt_ scatter scatter_ scatter_add scatter_add_
    scatter_reduce scatter_reduce_ select select_scatter set_ sgn sgn_ shape share_memory_ short
    sigmoid sigmoid_ sign sign_ signbit sin sin_ sinc sinc_ sinh sinh_ size slice_inverse
    slice_scatter slogdet smm softmax solve sort sparse_dim sparse_mask sparse_resize_
    sparse_resize_and_clear_ split split_with_sizes sqrt sqrt_ square square_ squeeze squeeze_
    sspaddmm std stft storage storage_offset storage_type stride sub sub_ subtract subtract_ sum
    sum_to_size svd swapaxes swapaxes_ swapdims swapdims_ symeig t t_ take take_along_dim tan
    tan_ tanh tanh_ tensor_split tile to to_dense to_mkldnn to_padded_tensor to_sparse
    to_sparse_bsc to_sparse_bsr to_sparse_coo to_sparse_csc to_sparse_csr tolist topk trace
    transpose transpose_ triangular_solve tril tril_ triu triu_ true_divide true_divide_ trunc
    trunc_ type type_as unbind unflatten unfold uniform_ unique unique_consecutive unsafe_chunk
    unsafe_split unsafe_split_with_sizes unsqueeze unsqueeze_ untyped_storage values var vdot
    view view_as volatile vsplit where xlogy xlogy_ xpu zero_
    """.split()  # noqa: SIM905 (a list of 600 names, one a line, would be longer)
)


# Methods of Python's own types, of tensors and of loggers: a call of one of them on an
# object of unknown class is not looked up among the tree's classes by its name.
COMMON_METHODS = frozenset(
    {name for kind in (list, dict, str, set, tuple, bytes, int, float) for name in dir(kind)}
    | TENSOR_API | TENSOR_METHODS | HOST_METHODS | VIEW_METHODS | BOOL_METHODS | INDEX_METHODS
    | {"to", "cuda", "cpu", "numpy", "item", "tolist", "type", "fill_", "zero_", "copy_",
       "add_", "mul_", "div_", "sub_", "clamp_", "masked_fill_", "scatter_", "index_copy_",
       "index_add_", "record_stream", "wait", "synchronize", "info", "debug", "warning",
       "warning_once", "info_once", "error", "exception", "critical", "log", "write", "read",
       "close", "open", "flush", "send", "recv", "put", "put_nowait", "get_nowait", "set",
       "is_set", "clear", "acquire", "release", "result", "done", "cancel", "submit", "join",
       "start", "run", "match", "search", "group", "sub", "backward", "register_hook",
       "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
       "register_buffer", "register_parameter", "apply", "parameters", "named_parameters",
       "buffers", "named_buffers", "modules", "named_modules", "children", "named_children",
       "state_dict", "load_state_dict", "train", "eval", "zero_grad", "requires_grad_",
       "add_module", "get_submodule", "extra_repr"}
)  # fmt: skip
