"""The per-file phase: one pass over a file's syntax tree.

It tracks, statement by statement, where each local value lives (see
:mod:`syncguard.values`), lets every rule visit the nodes it cares about, and
records the facts the project phase needs: functions, classes, imports, sync
sites and outgoing calls with the placement of their arguments. Nothing here
knows about hot paths or about individual rules.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

from syncguard.facts import (
    CallSite,
    ClassFacts,
    FileFacts,
    Fix,
    FunctionFacts,
    Requirement,
    Site,
    Span,
    source_lines,
)
from syncguard.rule import Rule
from syncguard.values import (
    BOOL,
    CPU,
    DEVICE,
    EVENT,
    FALSY,
    FIELD_PREFIX,
    FORWARDED,
    HOST,
    INDEX,
    NONE,
    NOT_NONE,
    OPAQUE,
    PAGEABLE,
    PINNED,
    PYSEQ,
    SCALAR,
    STREAM,
    TENSOR,
    TRUTHY,
    UNKNOWN,
    Place,
    Value,
    join,
    param,
)

MODULE_SCOPE = "<module>"

_MARKER = re.compile(r"#\s*syncguard:\s*(hot|cold)\b")
# Helpers whose name says they return a fresh pinned host tensor (np_to_pinned_tensor).
_PINNING_HELPER = re.compile(
    r"(?:^|_)(?:to|make|new|alloc|allocate)_pinned(?:_|$)|^_*pinned_(?:empty|zeros|ones|tensor)"
)
_HOST_SUFFIXES = ("_cpu", "_np", "_host", "_numpy")
_HOST_PREFIXES = ("cpu_", "np_", "host_")
_CONFIG_WORDS = frozenset({"config", "cfg", "configs", "conf"})
# Words that, next to "cpu" in a module or class name, say the code moves data to a device.
_DEVICE_WORDS = frozenset(
    {"gpu", "cuda", "device", "devices", "offload", "offloading", "accelerator", "xpu", "npu",
     "hpu", "tpu", "transfer", "swap", "h2d", "d2h"}
)  # fmt: skip
_HOST_MODULES = frozenset(
    {"numpy", "math", "random", "itertools", "functools", "operator", "threading", "asyncio",
     "multiprocessing", "queue", "time"}
)  # fmt: skip
_EXTERNAL_ROOTS = frozenset({"torch", "numpy", "triton", "math", "builtins", "typing"})
_BUILTIN_NAMES = frozenset(dir(builtins))
# Builtins whose result is a plain Python value on the host.
_HOST_BUILTINS = frozenset(
    {
        "len", "range", "int", "float", "bool", "str", "repr", "format", "isinstance",
        "issubclass", "hasattr", "getattr", "callable", "id", "hash", "type", "print",
        "complex", "ord", "chr", "divmod", "round", "object", "super",
    }
)  # fmt: skip
_NUMBER_BUILTINS = frozenset({"len", "int", "float", "round", "ord", "hash", "id"})
# Builtins whose result carries the placement of their arguments.
_PASSTHROUGH_BUILTINS = frozenset(
    {"list", "tuple", "set", "frozenset", "sorted", "reversed", "enumerate", "zip", "iter",
     "next", "min", "max", "sum", "abs", "dict", "map", "filter"}
)  # fmt: skip
_HOST_ANNOTATIONS = re.compile(
    r"^(?:Optional\[)?(?:int|float|bool|str|bytes|list|List|tuple|Tuple|dict|Dict|set|Set|"
    r"Sequence|Iterable|Mapping|np\.ndarray|numpy\.ndarray|npt\.NDArray|NDArray|"
    r"torch\.dtype|torch\.device)\b"
)
# ``try`` statements: ``except*`` (Python 3.11+) is a node of its own.
_TRY_STATEMENTS: tuple[type[ast.stmt], ...] = tuple(
    getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name)
)
# A declaration's trailing comment saying the value lives on the CPU (``# CPU tensor``).
_CPU_COMMENT = re.compile(r"#\s*(?:on\s+(?:the\s+)?)?CPU\b", re.IGNORECASE)
# Tensor attributes that are host metadata.
_HOST_ATTRIBUTES = frozenset(
    {"shape", "dtype", "device", "ndim", "is_cuda", "is_cpu", "layout", "requires_grad",
     "is_leaf", "itemsize", "nbytes", "names"}
)  # fmt: skip
# Tensor methods returning host values (Python numbers, sizes, host tensors).
_HOST_METHODS = frozenset(
    {"cpu", "numpy", "tolist", "item", "size", "dim", "numel", "nelement", "stride",
     "data_ptr", "element_size", "is_contiguous", "get_device", "storage_offset", "ndimension",
     "is_pinned", "untyped_storage", "keys", "__len__", "is_floating_point", "is_complex",
     "is_signed", "is_nonzero", "is_inference", "is_same_size", "is_set_to", "is_shared",
     "is_coalesced", "equal", "allclose", "has_names"}
)  # fmt: skip
_BOOL_METHODS = frozenset(
    {"bool", "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "logical_and",
     "logical_or", "logical_not", "logical_xor", "isneginf", "isposinf", "isreal", "signbit"}
)  # fmt: skip
_INDEX_METHODS = frozenset({"long", "int", "argmax", "argmin", "argsort"})
# Methods only tensors have: their result is a tensor even when the receiver is unknown.
# (Generic names such as ``clone``, ``view`` or ``log`` are left out: other objects have them.)
_TENSOR_METHODS = frozenset(
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
_PYTHON_RESULTS = frozenset(
    {"equal", "allclose", "is_nonzero", "is_tensor", "is_floating_point", "is_complex",
     "is_storage", "is_same_size", "numel", "can_cast", "result_type", "promote_types"}
)  # fmt: skip
# Tensor methods and torch functions returning a tuple of tensors, not one tensor.
_SEQUENCE_OPS = frozenset(
    {"split", "chunk", "unbind", "tensor_split", "hsplit", "vsplit", "dsplit",
     "split_with_sizes", "meshgrid", "broadcast_tensors"}
)  # fmt: skip
_STREAM_FACTORIES = frozenset({"Stream", "current_stream", "default_stream", "ExternalStream"})
_EVENT_FACTORIES = frozenset({"Event"})
# torch namespaces whose functions compute tensors (not objects, streams or settings).
_TENSOR_NAMESPACES = frozenset({"", "nn.functional", "linalg", "fft", "special"})
_SEQUENCE_ANNOTATION = re.compile(r"^(?:list|List|tuple|Tuple|Sequence)\b")
_TENSOR_ANNOTATION = re.compile(r"^(?:Optional\[)?(?:torch\.)?Tensor(?:\]|\s*\|\s*None)?$")
# Tensor methods returning a view or same-kind tensor of the receiver: its tags carry over.
_VIEW_METHODS = frozenset(
    {"view", "reshape", "flatten", "narrow", "select", "squeeze", "unsqueeze", "permute",
     "transpose", "t", "expand", "expand_as", "view_as", "unflatten", "detach", "contiguous",
     "clone", "__getitem__"}
)  # fmt: skip
_BOOL_DTYPES = frozenset({"torch.bool"})
_INDEX_DTYPES = frozenset({"torch.long", "torch.int64", "torch.int", "torch.int32"})
# Factories whose default dtype is an integer type (an index tensor unless told otherwise).
_INDEX_FACTORIES = frozenset({"arange", "randint", "randperm", "tril_indices", "triu_indices"})
# torch functions that create tensors: device from ``device=`` (host by default).
_FACTORIES = frozenset(
    {"zeros", "ones", "empty", "full", "arange", "tensor", "as_tensor", "asarray", "randn",
     "rand", "randint", "randperm", "linspace", "logspace", "eye", "empty_strided",
     "scalar_tensor", "tril_indices", "triu_indices", "from_numpy", "frombuffer"}
)  # fmt: skip
_LIKE_FACTORIES = frozenset(
    {"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
     "randint_like"}
)  # fmt: skip
# Module state that moves with the module (``model.to(device)``): never known host data.
_MODULE_STATE = frozenset({"nn.Parameter", "nn.Buffer", "nn.parameter.Parameter"})
_DTYPE_WORDS = ("dtype", "float", "half", "int", "long", "bool", "bfloat16", "double")
# The fields of each expression node that hold sub-expressions, in ``_fields`` order:
# the walk reads them directly instead of going through ``ast.iter_child_nodes``.
_EXPRESSION_FIELDS: dict[type, tuple[str, ...]] = {
    ast.BoolOp: ("values",), ast.NamedExpr: ("target", "value"), ast.BinOp: ("left", "right"),
    ast.UnaryOp: ("operand",), ast.IfExp: ("test", "body", "orelse"),
    ast.Dict: ("keys", "values"), ast.Set: ("elts",), ast.Await: ("value",),
    ast.Yield: ("value",), ast.YieldFrom: ("value",), ast.Compare: ("left", "comparators"),
    ast.Call: ("func", "args"), ast.FormattedValue: ("value", "format_spec"),
    ast.JoinedStr: ("values",), ast.Constant: (), ast.Attribute: ("value",),
    ast.Subscript: ("value", "slice"), ast.Starred: ("value",), ast.Name: (),
    ast.List: ("elts",), ast.Tuple: ("elts",), ast.Slice: ("lower", "upper", "step"),
}  # fmt: skip
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
# A parameter named or annotated as a module lives as long as the model does.
_MODULE_WORDS = frozenset({"layer", "module", "model"})
_MODULE_ANNOTATION = re.compile(r"Module|Layer")
# List methods adding data, with their number of arguments (the data is the last one).
_SEQUENCE_GROWERS = {"append": 1, "extend": 1, "insert": 2, "add": 1}
# Methods that fill the object they are called on (a cache set, dict, list or buffer).
_MUTATORS = frozenset(
    {"add", "append", "extend", "insert", "update", "setdefault", "copy_", "fill_", "zero_"}
)


_VISIT_METHODS: dict[type, tuple[tuple[type, str], ...]] = {}


def _visit_methods(rule_class: type) -> tuple[tuple[type, str], ...]:
    """(node type, method name) of each ``visit_<NodeType>`` method of a rule class."""
    found = _VISIT_METHODS.get(rule_class)
    if found is None:
        found = _VISIT_METHODS[rule_class] = tuple(
            (node_type, attribute)
            for attribute in dir(rule_class)
            if attribute.startswith("visit_")
            and isinstance(node_type := getattr(ast, attribute[len("visit_") :], None), type)
        )
    return found


def _subexpressions(node: ast.AST) -> list[ast.expr]:
    """The direct sub-expressions of ``node`` in source order, less stored names."""
    fields = _EXPRESSION_FIELDS.get(type(node))
    if fields is None:  # a node type this table does not list: ask ast
        children = [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)]
    else:
        children = []
        for name in fields:
            child = getattr(node, name)
            if type(child) is list:
                children.extend(item for item in child if item is not None)  # Dict: None keys
            elif child is not None:
                children.append(child)
        if type(node) is ast.Call:
            children.extend(keyword.value for keyword in node.keywords)  # type: ignore[attr-defined]
    return [
        child
        for child in children
        if not (type(child) is ast.Name and type(child.ctx) is ast.Store)  # type: ignore[attr-defined]
    ]


def is_host_name(name: str) -> bool:
    """True for names that say their value lives on the host (``x_cpu``, ``cpu_x``...)
    or is a configuration object (``config``, ``vllm_config``, ``cfg``)."""
    return (
        name.endswith(_HOST_SUFFIXES)
        or name.startswith(_HOST_PREFIXES)
        or "cpu" in name.lower().split("_")  # seq_lens_cpu_upper_bound
        or is_pinned_name(name)
        or is_config_name(name)
    )


def says_cpu(name: str) -> bool:
    """True for a module or class name that says its code runs on the CPU (``cpu_attn``,
    ``CPUModelRunner``), not one that moves data to or from a device (``CpuGpuBuffer``,
    ``cpu_offload``)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    words = set(re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", spaced).lower().split("_"))
    return "cpu" in words and not words & _DEVICE_WORDS


def is_config_name(name: str) -> bool:
    """True for names that say they hold settings (``config``, ``parallel_config``, ``cfg``):
    a Python object on the host, and so is everything read from it."""
    return name.lower().rpartition("_")[2] in _CONFIG_WORDS


def _names_config(node: ast.expr) -> bool:
    """``config``, ``self.model_config``, ``vllm_config.parallel_config``: a settings object."""
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
    return is_config_name(name)


def _attribute_named(call: ast.Call, function: str, owner: int | None) -> list[ast.expr]:
    """``[obj.name]`` for ``hasattr(obj, "name")``-like calls of ``function`` (``owner``:
    the position of the object among the arguments; None for a method of it,
    ``obj.register_buffer("name", ...)``), else ``[]``."""
    func = call.func
    if owner is None:
        if not (isinstance(func, ast.Attribute) and func.attr == function):
            return []
        obj, args = func.value, call.args
    else:
        if not (isinstance(func, ast.Name) and func.id == function and len(call.args) > owner):
            return []
        obj, args = call.args[owner], call.args[owner + 1 :]
    if not (args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)):
        return []
    return [ast.Attribute(value=obj, attr=args[0].value, ctx=ast.Load())]


def _dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a name or an attribute chain of one; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _device_check(test: ast.expr) -> tuple[ast.expr | None, bool]:
    """``(x, True)`` when ``test`` is a check that holds exactly when tensor ``x`` is on
    the host (``x.is_cpu``, ``x.device.type == "cpu"``), ``(x, False)`` when it fails then
    (``x.is_cuda``, ``x.device.type != "cpu"``); ``(None, False)`` for other tests."""
    if isinstance(test, ast.Attribute) and test.attr in ("is_cuda", "is_cpu"):
        return test.value, test.attr == "is_cpu"
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))
        and isinstance(test.left, ast.Attribute)
    ):
        left, right = test.left, test.comparators[0]
        if isinstance(right, ast.Call) and right.args:  # x.device == torch.device("cpu")
            right = right.args[0]
        if not (isinstance(right, ast.Constant) and isinstance(right.value, str)):
            return None, False
        if left.attr == "type" and isinstance(left.value, ast.Attribute):
            left = left.value  # x.device.type
        if left.attr != "device":
            return None, False
        if right.value.split(":")[0] != "cpu":
            return None, False  # not "cuda" is not the host: it may be another accelerator
        return left.value, isinstance(test.ops[0], (ast.Eq, ast.Is))
    return None, False


def literal_state(node: ast.expr | None) -> str | None:
    """``"none"``, ``"false"`` or ``"true"`` for a constant, ``"num:-1"`` for a number
    (``-1`` included), ``"cpu"`` for ``"cpu"`` or ``torch.device("cpu")``; else None."""
    number = _number(node)
    if number is not None:
        return f"num:{number!r}"
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, (ast.Attribute, ast.Name))
        and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "device"
        and len(node.args) == 1
    ):
        node = node.args[0]  # torch.device("cpu")
        if not (isinstance(node, ast.Constant) and node.value == "cpu"):
            return None
    if not isinstance(node, ast.Constant):
        return None
    if node.value is None:
        return "none"
    if node.value == "cpu":
        return "cpu"
    return "true" if node.value else "false"


def _number(node: ast.expr | None) -> int | float | None:
    """The value of a numeric constant such as ``3``, ``-1`` or ``0.5`` (not a bool)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        number = _number(node.operand)
        return -number if number is not None else None
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value  # type: ignore[return-value]
    return None


def _literal_tag(state: str) -> str:
    """The tag of an argument whose :func:`literal_state` is ``state``."""
    return {"none": NONE, "false": FALSY, "true": TRUTHY, "cpu": CPU}.get(state, state)


# Comparison operators, and the one that holds when the comparison fails.
_COMPARISONS = {ast.Gt: (">", "<="), ast.GtE: (">=", "<"), ast.Lt: ("<", ">="),
                ast.LtE: ("<=", ">"), ast.Eq: ("==", "!="), ast.NotEq: ("!=", "==")}  # fmt: skip
_NEVER_NONE_EXPRESSIONS = (
    ast.BinOp, ast.Subscript, ast.Compare, ast.List, ast.Tuple, ast.Dict, ast.Set,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.JoinedStr, ast.Lambda,
)  # fmt: skip


def _atoms_when(test: ast.expr, truth: bool) -> Iterator[tuple[ast.expr, bool]]:
    """The simple tests that ``test`` being ``truth`` proves, each with its truth: through
    ``not``, and all operands of a true ``and`` (a false ``or``); nothing of the others."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from _atoms_when(test.operand, not truth)
    elif isinstance(test, ast.BoolOp):
        if truth is isinstance(test.op, ast.And):
            for operand in test.values:
                yield from _atoms_when(operand, truth)
    else:
        yield test, truth


def _none_check(test: ast.expr) -> tuple[str, bool] | None:
    """``(x, True)`` for ``x is None``, ``(x, False)`` for ``x is not None``."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Is, ast.IsNot))
        and isinstance(test.left, ast.Name)
        and literal_state(test.comparators[0]) == "none"
    ):
        return test.left.id, isinstance(test.ops[0], ast.Is)
    return None


def _requirement(atom: ast.expr, holds: bool) -> Requirement | None:
    """The requirement on a name that a simple test being ``holds`` states: ``("p",
    "true")`` for ``p``, ``("p", "none")`` for ``p is None``, ``("p", "cmp:>:0")`` for
    ``p > 0``."""
    if isinstance(atom, ast.Name):
        return atom.id, "true" if holds else "false"
    check = _none_check(atom)
    if check is not None:
        return check[0], "none" if check[1] is holds else "not-none"
    if (
        isinstance(atom, ast.Compare)
        and len(atom.ops) == 1
        and type(atom.ops[0]) in _COMPARISONS
        and isinstance(atom.left, ast.Name)
        and (bound := _number(atom.comparators[0])) is not None
    ):
        when_true, when_false = _COMPARISONS[type(atom.ops[0])]
        return atom.left.id, f"cmp:{when_true if holds else when_false}:{bound!r}"
    return None


def _init_parameters(node: ast.ClassDef) -> dict[str, str]:
    """``self.attr = param`` made in ``__init__``, for attributes nothing else in the class
    assigns and parameters ``__init__`` never reassigns: what the constructor is given."""
    stores: dict[str, int] = {}  # self attribute -> assignments anywhere in the class
    from_init: dict[str, str] = {}
    reassigned: set[str] = set()
    parameters: set[str] = set()
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
            continue
        self_name = method.args.args[0].arg
        is_init = method.name == "__init__"
        if is_init:
            arguments = method.args
            parameters = {a.arg for a in (*arguments.args[1:], *arguments.kwonlyargs)}
        for child in ast.walk(method):
            if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store) and is_init:
                reassigned.add(child.id)
            elif (
                isinstance(child, ast.Attribute)
                and isinstance(child.ctx, ast.Store)
                and isinstance(child.value, ast.Name)
                and child.value.id == self_name
            ):
                stores[child.attr] = stores.get(child.attr, 0) + 1
            elif is_init and isinstance(child, ast.Assign) and isinstance(child.value, ast.Name):
                for target in child.targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == self_name
                    ):
                        from_init[target.attr] = child.value.id
    return {
        attribute: parameter
        for attribute, parameter in from_init.items()
        if stores.get(attribute) == 1 and parameter in parameters - reassigned
    }


def _not_none_when(test: ast.expr, truth: bool) -> set[str]:
    """Names ``test`` being ``truth`` proves are not None (``x is not None``, ``x``)."""
    names = set()
    for atom, holds in _atoms_when(test, truth):
        if isinstance(atom, ast.Name) and holds:
            names.add(atom.id)
        elif (check := _none_check(atom)) is not None and check[1] is not holds:
            names.add(check[0])
    return names


def is_pinned_name(name: str) -> bool:
    """True for names that say they hold page-locked host memory (``pinned``, ``x_pinned``)."""
    return "pinned" in name.lower().split("_")


def is_mask_name(name: str) -> bool:
    """True for names that say they hold a boolean mask (``mask``, ``keep_mask``, ``masks``)."""
    return any(word in ("mask", "masks") for word in name.lower().split("_"))


def _named_tags(name: str) -> frozenset[str]:
    """Tags a name promises by itself: a mask is boolean, a pinned buffer is a pinned tensor,
    ``lens_cpu`` / ``x_np`` are host arrays (data, so it stays host data under other names)."""
    if is_pinned_name(name):
        return frozenset((PINNED, TENSOR))
    if is_mask_name(name):
        return frozenset((BOOL,))
    if is_host_name(name) and not is_config_name(name):
        return frozenset((TENSOR,))
    return frozenset()


def _as_named(name: str, value: Value) -> Value:
    """``value`` bound to ``name``: a host name keeps host data, and an untagged value gets
    the tags the name promises (a ``mask`` is boolean, a ``pinned`` buffer page-locked)."""
    if is_host_name(name) and value.place is not Place.DEVICE:
        value = Value(Place.HOST, frozenset(), value.tags)
    if not value.tags:
        tags = _named_tags(name)
        if tags:
            value = value.with_tags(*tags)
    return value


def _class_annotation(text: str) -> str:
    """The class an annotation names, quotes and ``| None`` / ``Optional[...]`` aside."""
    text = text.strip("'\"")
    if text.startswith("Optional[") and text.endswith("]"):
        text = text[len("Optional[") : -1]
    return text.removesuffix(" | None").removeprefix("None | ").strip("'\"")


def _is_host_annotation(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    text = ast.unparse(annotation).strip("'\"")
    return bool(_HOST_ANNOTATIONS.match(text)) and "Tensor" not in text


def _is_tensor(value: Value) -> bool:
    return TENSOR in value.tags and PYSEQ not in value.tags


def _tensor_result(result: Value, operands: Sequence[Value]) -> bool:
    """True when an operator's ``result`` is a tensor living where a tensor operand does.

    ``host_tensor < self.threshold`` is unknown only because of the other operand,
    which is then most likely a Python number: the result is not known to be a
    tensor that may be on the device.
    """
    return any(_is_tensor(value) and value.place >= result.place for value in operands)


def _torch_result_kind(function: str, result: Value) -> Value:
    """Tag what ``torch.<function>`` returns: a stream, an event, a tuple of tensors,
    or a tensor (functions of the tensor namespaces, when the data may be on the device)."""
    namespace, _, name = function.rpartition(".")
    if namespace == "" and name in _PYTHON_RESULTS:
        return HOST
    if namespace in ("", "cuda", "xpu", "accelerator"):
        if name in _STREAM_FACTORIES:
            return HOST.with_tags(STREAM)
        if name in _EVENT_FACTORIES:
            return HOST.with_tags(EVENT)
    if result.on_host or result.tags & {PYSEQ, STREAM, EVENT} or name[:1].isupper():
        return result
    if namespace not in _TENSOR_NAMESPACES and not namespace.startswith("ops"):
        return result
    if name in _SEQUENCE_OPS:
        return Value(result.place, result.params, frozenset((PYSEQ,)))
    return result.with_tags(TENSOR)


def _merge(a: Value, b: Value) -> Value:
    if a == b:
        return a
    merged = join(a, b)
    # A bare host value on one side is typically ``None`` (``self.stage = None``, then
    # ``self.stage = torch.empty(..., pin_memory=True)`` on a branch): where the data is
    # used, it is the other side's kind.
    tags = a.tags | b.tags if HOST in (a, b) else a.tags & b.tags | (a.tags | b.tags) & {OPAQUE}
    return merged.with_tags(*tags) if tags else merged


@dataclass
class _Scope:
    """The state of the function being walked."""

    facts: FunctionFacts
    env: dict[str, Value]
    imports: dict[str, str]
    self_name: str | None
    attribute_values: dict[str, Value]  # self.attr placements known from __init__
    loop_depth: int = 0
    lazy_depth: int = 0  # inside code that does not run per step (lazy init, training only)
    default_device: bool = False
    memo: dict[int, Value] = field(default_factory=dict)
    assigned: dict[str, ast.expr] = field(default_factory=dict)  # local name -> last value
    returns: list[Value] = field(default_factory=list)  # placements of the returned values
    host_code: bool = False  # in a module or class whose name says it runs on the CPU
    buffers: set[str] = field(default_factory=set)  # self attributes registered as buffers
    module_params: frozenset[str] = frozenset()  # parameters that are modules (``layer``)
    # Expressions a device guard proves to be on the host here (``if not x.is_cuda:``).
    narrowed: dict[str, Value] = field(default_factory=dict)
    # What the enclosing ``if``s say about parameters here (``if metadata is None:``).
    requires: tuple[Requirement, ...] = ()
    rebound: set[str] = field(default_factory=set)  # local names assigned so far
    # Names some assignment may have set to None: for the others, ``x is None`` after a
    # reassignment still means the parameter ``x`` was passed None.
    rebound_maybe_none: set[str] = field(default_factory=set)
    maybe_none: set[str] = field(default_factory=set)  # names that may hold None here
    kwargs_name: str | None = None  # the ``**kwargs`` parameter
    # Parameters annotated with a class: of this module with host fields, or imported.
    typed_params: dict[str, str] = field(default_factory=dict)


# Device-guarded host values, requirements on parameters and maybe-None names of a branch.
_BranchFacts = tuple[dict[str, Value], tuple[Requirement, ...], set[str]]


class FileAnalyzer:
    """Computes :class:`FileFacts` for one parsed file; implements the rule ``Context``."""

    def __init__(
        self, tree: ast.Module, source: str, module: str, is_package: bool, rules: Sequence[Rule]
    ) -> None:
        self.tree = tree
        self.lines = source_lines(source)
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.imports: dict[str, str] = {}
        self.functions: dict[str, FunctionFacts] = {}
        self.classes: dict[str, ClassFacts] = {}
        self.compiled: list[tuple[str, tuple[str, ...]]] = []
        self.records: dict[str, list[tuple[str, object]]] = {}
        self.module_defs = {
            node.name
            for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        self.visitors = self._visitors(rules, source)
        self.host_fields, self.host_records = self._host_fields(tree)
        self.class_attributes: dict[str, dict[str, Value]] = {}
        # Functions (analysed so far, by qualified name) whose every return is device data.
        self.device_results: dict[str, Value] = {}
        self.scope = self._new_scope(
            FunctionFacts(MODULE_SCOPE, 1, None, (), "module", (), None), {}, None, None
        )
        self.module_scope = self.scope
        self.module_scope.host_code = says_cpu(module.rpartition(".")[2])
        self.statement: tuple[int, int] = (1, 1)
        self.rule_code = ""

    @staticmethod
    def _visitors(rules: Sequence[Rule], source: str) -> dict[type, list[tuple[str, Callable]]]:
        visitors: dict[type, list[tuple[str, Callable]]] = {}
        for rule in rules:
            if rule.tokens and not any(token in source for token in rule.tokens):
                continue
            for node_type, attribute in _visit_methods(type(rule)):
                visitors.setdefault(node_type, []).append((rule.code, getattr(rule, attribute)))
        return visitors

    def _host_fields(self, tree: ast.Module) -> tuple[dict[str, frozenset[str]], set[str]]:
        """Class of this module -> its fields declared as host data: annotated ``int``,
        ``list[int]``, ``np.ndarray`` (``num_scheduled_tokens: np.ndarray``), or said to be
        on the CPU by a comment (``prompt_lens: torch.Tensor  # CPU tensor``); and the
        classes whose declared fields all are (a ``NamedTuple`` of sizes and a dtype)."""
        found: dict[str, frozenset[str]] = {}
        records: set[str] = set()
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            declared = [
                statement
                for statement in node.body
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)
            ]
            fields = frozenset(
                statement.target.id
                for statement in declared
                if isinstance(statement.target, ast.Name)
                and (
                    _is_host_annotation(statement.annotation)
                    or _CPU_COMMENT.search(self.lines[statement.lineno - 1])
                )
            )
            if fields:
                found[node.name] = fields
                if len(fields) == len(declared):
                    records.add(node.name)
        return found, records

    def analyze(self) -> FileFacts:
        self.functions[MODULE_SCOPE] = self.scope.facts
        self._body(self.tree.body)
        return FileFacts(
            self.module, self.imports, self.functions, self.classes, self.compiled, self.records
        )

    # ------------------------------------------------------------------ Context

    @property
    def function(self) -> str:
        return self.scope.facts.qualname

    @property
    def in_loop(self) -> bool:
        return self.scope.loop_depth > 0

    @property
    def default_device(self) -> bool:
        return self.scope.default_device

    def span(self, node: ast.AST) -> Span:
        line = node.lineno  # type: ignore[attr-defined]
        end_line = node.end_lineno or line  # type: ignore[attr-defined]
        column = self._column(line, node.col_offset)  # type: ignore[attr-defined]
        end_column = self._column(end_line, node.end_col_offset or 0)  # type: ignore[attr-defined]
        return Span(line, column, end_line, end_column)

    def _column(self, line: int, byte_offset: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_offset + 1
        return len(text.encode()[:byte_offset].decode(errors="replace")) + 1

    def source(self, node: ast.AST) -> str:
        return ast.unparse(node)

    def text(self, node: ast.AST) -> str:
        span = self.span(node)
        if span.line == span.end_line:
            return self.lines[span.line - 1][span.column - 1 : span.end_column - 1]
        first = self.lines[span.line - 1][span.column - 1 :]
        middle = self.lines[span.line : span.end_line - 1]
        last = self.lines[span.end_line - 1][: span.end_column - 1]
        return "\n".join([first, *middle, last])

    def qualified_name(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.scope.imports.get(node.id) or self.imports.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualified_name(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def record(self, item: object) -> None:
        """Keep a rule-specific fact for the project phase (under the rule's code), with the
        qualified name of the function it comes from."""
        self.records.setdefault(self.rule_code, []).append((self.scope.facts.qualname, item))

    def assigned(self, name: str) -> ast.expr | None:
        return self.scope.assigned.get(name)

    def report(
        self,
        node: ast.AST,
        *,
        subject: ast.expr | None,
        suggestion: str,
        message: str | None = None,
        fix: Fix | None = None,
    ) -> None:
        value = DEVICE if subject is None else self.value(subject)
        if value.on_host or self.scope.lazy_depth or self.scope.host_code:
            return
        requires = self.scope.requires
        destination = self._destination_parameter(subject)
        if destination is not None:  # a copy to the device a caller names
            requires = (*requires, (destination, "accelerator"))
        self.scope.facts.sites.append(
            Site(
                code=self.rule_code,
                span=self.span(node),
                statement=self.statement,
                message=message or "",
                suggestion=suggestion,
                value=value.placement(),
                in_loop=self.in_loop,
                fix=fix,
                requires=requires,
            )
        )

    def _destination_parameter(self, node: ast.expr | None) -> str | None:
        """The parameter naming the device a call moves data to: ``x.to(device)``,
        ``torch.tensor(data, device=device)``; a caller passing ``"cpu"`` or None makes
        it a host copy."""
        if not isinstance(node, ast.Call):
            return None
        device = self._keyword(node, "device")
        if device is None and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            device = node.args[0] if node.args else None
        scope = self.scope
        if (
            isinstance(device, ast.Name)
            and device.id in scope.facts.params
            and device.id not in scope.rebound
        ):
            return device.id
        return None

    # --------------------------------------------------------------- values

    def value(self, node: ast.expr) -> Value:
        memo = self.scope.memo
        key = id(node)
        found = memo.get(key)
        if found is None:
            found = memo[key] = self._evaluate(node)
        return found

    def _evaluate(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Name):
            return self._name_value(node.id)
        if isinstance(node, ast.Constant):
            return HOST.with_tags(SCALAR) if isinstance(node.value, (int, float)) else HOST
        if isinstance(node, ast.Attribute):
            return self._attribute_value(node)
        if isinstance(node, ast.Call):
            return self._call_value(node)
        if isinstance(node, ast.Subscript):
            base = self.value(node.value)
            if PYSEQ in base.tags:
                return Value(base.place, base.params)
            if BOOL in base.tags:
                return Value(base.place, base.params, base.tags & {TENSOR})
            return base
        if isinstance(node, ast.BinOp):
            left, right = self.value(node.left), self.value(node.right)
            result = self._with_host_data((node.left, node.right), join(left, right))
            if _tensor_result(result, (left, right)):
                result = result.with_tags(TENSOR)
            if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor)) and (
                BOOL in left.tags or BOOL in right.tags
            ):
                return result.with_tags(BOOL)
            if result.on_host and SCALAR in left.tags and SCALAR in right.tags:
                return result.with_tags(SCALAR)
            return result
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand)
            if isinstance(node.op, ast.Not):
                return HOST.with_tags(BOOL)
            return operand
        if isinstance(node, ast.Compare):
            return self._compare_value(node)
        if isinstance(node, ast.BoolOp):
            return join(*map(self.value, node.values))
        if isinstance(node, ast.IfExp):
            return _merge(self.value(node.body), self.value(node.orelse))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return join(*map(self.value, node.elts)).with_tags(PYSEQ)
        if isinstance(node, ast.Dict):
            return join(*(self.value(v) for v in node.values)).with_tags(PYSEQ)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self._comprehension_value(node, node.elt).with_tags(PYSEQ)
        if isinstance(node, ast.DictComp):
            return self._comprehension_value(node, node.value).with_tags(PYSEQ)
        if isinstance(node, ast.NamedExpr):
            return self.value(node.value)
        if isinstance(node, (ast.Starred, ast.Await)):
            return self.value(node.value)
        if isinstance(node, (ast.JoinedStr, ast.Lambda, ast.FormattedValue)):
            return HOST
        return UNKNOWN

    def _compare_value(self, node: ast.Compare) -> Value:
        """Identity and membership tests give a host bool; tensor comparisons a tensor."""
        operands = [self.value(node.left), *map(self.value, node.comparators)]
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            return HOST.with_tags(BOOL)
        if all(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and not any(
            _is_tensor(value) for value in operands[1:]
        ):
            return HOST.with_tags(BOOL)  # `key in dict`, `x in (a, b)`
        result = join(*operands).with_tags(BOOL)
        result = self._with_host_data([node.left, *node.comparators], result)
        return result.with_tags(TENSOR) if _tensor_result(result, operands) else result

    def _with_host_data(self, operands: Sequence[ast.expr], result: Value) -> Value:
        """An operator on host data (a ``*_cpu`` array, a host tensor or mask) whose other
        operands are not known device tensors computes on the host: mixing host data with
        a device tensor is an error (0-d host tensors aside), so those operands are
        Python numbers or host data too (``lens_cpu + self.block_size``)."""
        if result.on_host or not any(self._is_host_data(operand) for operand in operands):
            return result
        for operand in operands:
            value = self.value(operand)
            if value.place is Place.DEVICE or (_is_tensor(value) and value.may_be_device):
                return result
        return HOST.with_tags(*(result.tags | {TENSOR}))

    def _is_host_data(self, node: ast.expr) -> bool:
        value = self.value(node)
        if not value.on_host or value.tags & {PYSEQ, SCALAR}:
            return False
        if value.tags & {TENSOR, BOOL, INDEX, PINNED, PAGEABLE}:
            return True
        while isinstance(node, ast.Subscript):
            node = node.value
        name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
        return is_host_name(name)

    def _comprehension_value(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, elt: ast.expr
    ) -> Value:
        with self._comprehension_scope(node.generators):
            return self.value(elt)

    def _name_value(self, name: str) -> Value:
        if self.scope.narrowed and name in self.scope.narrowed:
            return self.scope.narrowed[name]
        found = self.scope.env.get(name)
        if found is not None:
            return found
        if is_host_name(name):
            return _as_named(name, HOST)
        if name in self.imports or name in self.scope.imports or name in self.module_defs:
            return HOST  # a module, class or function object, not a tensor
        module_value = self.module_scope.env.get(name)
        if module_value is not None:
            return module_value
        if name in _BUILTIN_NAMES:
            return HOST
        return UNKNOWN

    def _attribute_value(self, node: ast.Attribute) -> Value:
        attr = node.attr
        if attr in _HOST_ATTRIBUTES:
            return HOST
        if self.scope.narrowed:
            narrowed = self.scope.narrowed.get(_dotted(node) or "")
            if narrowed is not None:
                return narrowed
        base = node.value
        if isinstance(base, ast.Name) and base.id == self.scope.self_name:
            key = f"{base.id}.{attr}"
            if key in self.scope.env:
                return self.scope.env[key]
            known = self.scope.attribute_values.get(attr)
            if known is not None:
                return known
        if is_host_name(attr):
            return _as_named(attr, HOST)
        if self.qualified_name(node) is not None:
            return HOST  # torch.float32, np.pi, module.CONSTANT
        if isinstance(base, ast.Name):
            if base.id == self.scope.self_name:
                return _as_named(attr, UNKNOWN)
            class_name = self.scope.typed_params.get(base.id)
            if class_name is not None and base.id not in self.scope.rebound:
                if attr in self.host_fields.get(class_name, ()):
                    return _as_named(attr, HOST)
                imported = self.imports.get(class_name)
                if imported is not None:  # the project phase knows that class's fields
                    value = self.value(base)
                    field_tag = f"{FIELD_PREFIX}{imported}.{attr}"
                    return Value(value.place, value.params, _named_tags(attr) | {field_tag})
        base_value = self.value(base)
        if attr in ("T", "mT", "H", "data", "real", "imag"):
            return base_value
        return _as_named(attr, Value(base_value.place, base_value.params))

    def _call_value(self, node: ast.Call) -> Value:
        func = node.func
        helper = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        if _PINNING_HELPER.search(helper) or self._asks_pinned(node):
            return HOST.with_tags(PINNED, TENSOR)
        qualified = self.qualified_name(func)
        if qualified is not None:
            root, _, rest = qualified.partition(".")
            if root in _HOST_MODULES:
                return HOST
            if root == "torch":
                return _torch_result_kind(rest, self._torch_call_value(node, rest))
            return self._derived_value(node)
        if isinstance(func, ast.Name):
            name = func.id
            result = self._device_result(name)
            if result is not None and name not in self.scope.env:
                return result
            if name in self.module_defs or name in self.scope.env:
                return self._derived_value(node)
            if name in _HOST_BUILTINS:
                if name in _NUMBER_BUILTINS:
                    return HOST.with_tags(SCALAR)  # int(t), len(xs): a Python number
                return HOST.with_tags(BOOL) if name == "bool" else HOST
            if name in _PASSTHROUGH_BUILTINS:
                values = [self.value(arg) for arg in node.args]
                return join(*values) if values else HOST
            return self._derived_value(node)
        if isinstance(func, ast.Attribute):
            return self._method_result_kind(func, self._method_value(node, func))
        return UNKNOWN

    def _method_result_kind(self, func: ast.Attribute, result: Value) -> Value:
        """Tag what a method returns: a tensor (a tensor's method, or one only tensors
        have), a tuple of tensors, or the event a stream records."""
        method = func.attr
        if method in _HOST_METHODS or result.tags & {PYSEQ, STREAM, EVENT}:
            return result
        receiver = self.value(func.value)
        if STREAM in receiver.tags and method == "record_event":
            return HOST.with_tags(EVENT)
        if not (_is_tensor(receiver) or method in _TENSOR_METHODS):
            return result
        if method in _SEQUENCE_OPS:
            return Value(result.place, result.params, frozenset((PYSEQ,)))
        return result.with_tags(TENSOR)

    def _derived_value(self, node: ast.Call) -> Value:
        """A call to a function we cannot see into: its result lives where its data does.

        Data means arguments that are not plain Python numbers or settings objects
        (``config``); with none (a factory-like call such as ``make_buffer(n)`` or
        ``Block(config)``) the placement is unknown. A function's ``device=`` argument
        says where its result is made (``async_h2d(values, device=x.device)``); an object
        built with one (``State(n, device=d)``) may hold host data as well.
        """
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.host_records:
            return HOST  # a record of host values (sizes, flags, a dtype) built here
        device = self._keyword(node, "device")
        if device is not None:
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if name[:1].isupper():
                return UNKNOWN
            # Where, not what: the result may be a tensor or a Python value (can_use(device=d)).
            return self._device_value(device).without_tags()
        data = [
            self.value(argument)
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]
            if not isinstance(argument, ast.Constant) and not _names_config(argument)
        ]
        data = [value for value in data if SCALAR not in value.tags]
        return join(*data) if data else UNKNOWN

    def _method_value(self, node: ast.Call, func: ast.Attribute) -> Value:
        method = func.attr
        receiver = self.value(func.value)
        if method in _HOST_METHODS:
            return HOST
        if method == "pin_memory":
            return HOST.with_tags(PINNED, TENSOR)
        if method == "cuda":
            return DEVICE.with_tags(TENSOR)
        if method == "to":
            return self._to_value(node, receiver)
        if method in _BOOL_METHODS or method in ("any", "all"):
            return Value(receiver.place, receiver.params, frozenset((BOOL,)))
        if method in _VIEW_METHODS:
            return Value(receiver.place, receiver.params, receiver.tags - {PYSEQ})
        if method in _INDEX_METHODS:
            return Value(receiver.place, receiver.params, frozenset((INDEX,)))
        if method in ("new_tensor", "new_zeros", "new_ones", "new_empty", "new_full"):
            device = self._keyword(node, "device")
            return self._device_value(device) if device is not None else receiver.without_tags()
        if (
            receiver.on_host
            and not receiver.tags
            and method not in _TENSOR_METHODS
            and (self._self_rooted(func.value) or _names_config(func.value))
        ):
            # self.mlp(x), self.proj.forward(x), pipeline_config.embeds(batch): an object's
            # method (not a host tensor's) returns data where its arguments live.
            return self._derived_value(node)
        return Value(receiver.place, receiver.params)

    def _self_rooted(self, node: ast.expr) -> bool:
        """True for ``self`` and ``self.a.b[...]``: attributes of the object being defined."""
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and node.id == self.scope.self_name

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
        if any(word in text for word in _DTYPE_WORDS):
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
        if function in _MODULE_STATE:
            return UNKNOWN.with_tags(TENSOR)
        if function.startswith("nn.") and name[:1].isupper():
            return UNKNOWN  # a module: its weights live wherever the model is moved
        out = self._keyword(node, "out")
        if out is not None:
            return self.value(out)
        if function in _FACTORIES or function in _LIKE_FACTORIES:
            device = self._keyword(node, "device")
            if device is not None:
                value = self._device_value(device)
            elif function in _LIKE_FACTORIES and node.args:
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
            elif value.on_host and function not in _LIKE_FACTORIES:
                tags.add(PAGEABLE)
            dtype = self._keyword(node, "dtype")
            if dtype is not None:
                tags |= self._dtype_tags(dtype)
            elif function in _INDEX_FACTORIES:
                tags.add(INDEX)
            return Value(value.place, value.params, frozenset(tags))
        if function.startswith(("cuda.", "distributed.", "backends.", "jit.", "compiler.")):
            return HOST
        if function in ("is_tensor", "numel", "get_default_dtype", "is_grad_enabled"):
            return HOST
        operands = [self.value(arg) for arg in node.args]
        operands += [self.value(keyword.value) for keyword in node.keywords if keyword.arg]
        result = join(*operands) if operands else HOST
        if name in _BOOL_METHODS or name in ("isin", "isclose"):
            return result.with_tags(BOOL)
        if result.on_host and name[:1].islower() and name not in ("device", "finfo", "iinfo"):
            if any(OPAQUE in operand.tags for operand in operands):
                return result.with_tags(TENSOR)  # maybe a view of what the list holds
            return result.with_tags(PAGEABLE)  # a new host tensor in ordinary memory
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
        if qualified in _BOOL_DTYPES:
            return frozenset((BOOL,))
        if qualified in _INDEX_DTYPES:
            return frozenset((INDEX,))
        return frozenset()

    def _with_dtype(self, value: Value, dtype: ast.expr) -> Value:
        """``value`` converted to ``dtype`` (a conversion copies: pinned-ness is not kept)."""
        kept = value.tags & {TENSOR}
        return Value(value.place, value.params, kept | self._dtype_tags(dtype))

    @staticmethod
    def _keyword(node: ast.Call, name: str) -> ast.expr | None:
        for keyword in node.keywords:
            if keyword.arg == name:
                return keyword.value
        return None

    # ------------------------------------------------------------ statements

    def _new_scope(
        self,
        facts: FunctionFacts,
        env: dict[str, Value],
        self_name: str | None,
        class_name: str | None,
    ) -> _Scope:
        attributes = self.class_attributes.get(class_name, {}) if class_name else {}
        return _Scope(facts, env, {}, self_name, attributes)

    def _body(self, statements: Sequence[ast.stmt]) -> None:
        scope = self.scope
        narrowed = scope.narrowed
        requires = scope.requires
        try:
            for index, statement in enumerate(statements):
                self._statement(statement)
                if not isinstance(statement, ast.If):
                    continue
                if not statement.orelse and isinstance(statement.body[-1], _EXITS):
                    # ``if x.is_cuda: return ...``: below it, x is on the host.
                    guarded = self._host_when(statement.test, False)
                    if guarded:
                        scope.narrowed = {**scope.narrowed, **guarded}
                    # ``if metadata is None: return``: below it, metadata is not None.
                    scope.requires += self._requirements(statement.test, False)
                if self._returns_when_cached(statement, statements[index + 1 :]):
                    # The rest of the block fills the cache the check returned early on.
                    scope.lazy_depth += 1
                    try:
                        for rest in statements[index + 1 :]:
                            self._statement(rest)
                    finally:
                        scope.lazy_depth -= 1
                    return
        finally:
            scope.narrowed = narrowed
            scope.requires = requires

    def _dispatch(self, node: ast.AST) -> None:
        for code, visit in self.visitors.get(type(node), ()):
            self.rule_code = code
            visit(node, self)

    def _statement(self, node: ast.stmt) -> None:
        self.statement = (node.lineno, node.end_lineno or node.lineno)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                self._expression(decorator)
            self._function(node)
            return
        if isinstance(node, ast.ClassDef):
            for expression in [*node.decorator_list, *node.bases]:
                self._expression(expression)
            self._class(node)
            return
        self._dispatch(node)
        scope = self.scope
        if isinstance(node, ast.Assign):
            self._expression(node.value)
            value = self.value(node.value)
            for target in node.targets:
                self._target_expressions(target)
                self._bind(target, value, node.value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self._expression(node.value)
                value = self.value(node.value)
                if _is_host_annotation(node.annotation):
                    value = HOST
                self._bind(node.target, value, node.value)
        elif isinstance(node, ast.AugAssign):
            self._expression(node.value)
            self._target_expressions(node.target)
            if isinstance(node.target, ast.Name):
                scope.assigned.pop(node.target.id, None)
                current = self._name_value(node.target.id)
                in_place = _is_tensor(current) or (
                    BOOL in current.tags and isinstance(node.op, (ast.BitOr, ast.BitAnd))
                )
                # An in-place op on a tensor (or a mask) keeps the target where it is.
                if not in_place:
                    self.scope.env[node.target.id] = join(current, self.value(node.value))
        elif isinstance(node, (ast.Expr, ast.Return)):
            if node.value is not None:
                self._expression(node.value)
                if isinstance(node, ast.Return):
                    scope.returns.append(self.value(node.value))
                elif isinstance(node.value, ast.Call):
                    self._grow_sequence(node.value)
                    self._register_state(node.value)
        elif isinstance(node, ast.If):
            self._expression(node.test)
            training = self._training_test(node.test)
            self._branches(
                node.test,
                node.body,
                node.orelse,
                lazy=training is True or self._is_lazy_init(node),
                lazy_else=training is False,
            )
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._expression(node.iter)
            before = dict(scope.env)
            maybe_none = set(scope.maybe_none)
            self._bind(node.target, self._element_value(node.iter), None)
            scope.loop_depth += 1
            self._body(node.body)
            scope.loop_depth -= 1
            self._body(node.orelse)
            self._merge_env(before)
            scope.maybe_none |= maybe_none
        elif isinstance(node, ast.While):
            before = dict(scope.env)
            maybe_none = set(scope.maybe_none)
            scope.loop_depth += 1
            self._expression(node.test)
            self._body(node.body)
            scope.loop_depth -= 1
            self._body(node.orelse)
            self._merge_env(before)
            scope.maybe_none |= maybe_none
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            default_device = scope.default_device
            for item in node.items:
                self._expression(item.context_expr)
                if self.qualified_name_of_call(item.context_expr) == "torch.device":
                    scope.default_device = True
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, self.value(item.context_expr), None)
            self._body(node.body)
            scope.default_device = default_device
        elif isinstance(node, _TRY_STATEMENTS):
            attempt = cast(ast.Try, node)  # ``try: ... except*`` (TryStar) has the same fields
            self._body(attempt.body)
            for handler in attempt.handlers:
                if handler.type is not None:
                    self._expression(handler.type)
                if handler.name:
                    scope.env[handler.name] = HOST
                self._body(handler.body)
            self._body(attempt.orelse)
            self._body(attempt.finalbody)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self._import(node)
        elif isinstance(node, ast.Match):
            self._expression(node.subject)
            for case in node.cases:
                if case.guard is not None:
                    self._expression(case.guard)
                self._body(case.body)
        elif isinstance(node, (ast.Raise, ast.Assert)):
            if isinstance(node, ast.Assert):
                self._expression(node.test)
            # The exception and an assert's message are built only on the error path.
            scope.lazy_depth += 1
            try:
                for error_part in (
                    (node.msg,) if isinstance(node, ast.Assert) else (node.exc, node.cause)
                ):
                    if error_part is not None:
                        self._expression(error_part)
            finally:
                scope.lazy_depth -= 1
        else:  # Delete, Global, Pass, ...
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self._expression(child)
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and self.qualified_name(node.value.func) == "torch.set_default_device"
        ):
            scope.default_device = True

    def qualified_name_of_call(self, node: ast.expr) -> str | None:
        return self.qualified_name(node.func) if isinstance(node, ast.Call) else None

    def _branches(
        self,
        test: ast.expr,
        body: Sequence[ast.stmt],
        orelse: Sequence[ast.stmt],
        lazy: bool = False,
        lazy_else: bool = False,
    ) -> None:
        """Walk both branches of ``if test``; a ``lazy`` branch does not run per step."""
        scope = self.scope
        before = dict(scope.env)
        # What each outcome of the test proves, decided before either branch rebinds names.
        when_true, when_false = self._branch_facts(test, True), self._branch_facts(test, False)
        self._branch(body, when_true, lazy)
        after_body, none_after_body = scope.env, scope.maybe_none
        scope.env = dict(before)
        self._branch(orelse, when_false, lazy_else)
        # A branch that ends in return/raise/continue/break does not reach what follows.
        if body and isinstance(body[-1], _EXITS):
            return
        if orelse and isinstance(orelse[-1], _EXITS):
            scope.env, scope.maybe_none = after_body, none_after_body
            return
        scope.maybe_none |= none_after_body
        self._merge_env(after_body)

    def _branch_facts(self, test: ast.expr, truth: bool) -> _BranchFacts:
        """What the scope knows in the branch where ``test`` is ``truth``: tensors a device
        guard puts on the host, requirements on parameters, names that may still be None."""
        scope = self.scope
        return (
            {**scope.narrowed, **self._host_when(test, truth)},
            scope.requires + self._requirements(test, truth),
            scope.maybe_none - _not_none_when(test, truth),
        )

    def _branch(self, statements: Sequence[ast.stmt], facts: _BranchFacts, lazy: bool) -> None:
        scope = self.scope
        narrowed, requires = scope.narrowed, scope.requires
        scope.narrowed, scope.requires, scope.maybe_none = facts
        scope.lazy_depth += lazy
        try:
            self._body(statements)
        finally:
            scope.lazy_depth -= lazy
            scope.narrowed, scope.requires = narrowed, requires

    def _host_when(self, test: ast.expr, truth: bool) -> dict[str, Value]:
        """Tensors that ``test`` being ``truth`` proves to be on the host: ``x.is_cuda``
        False, ``x.is_cpu`` True, ``x.device.type == "cpu"`` True (and negations,
        ``and`` / ``or`` combinations); as host values for :attr:`_Scope.narrowed`."""
        found: dict[str, Value] = {}
        for atom, holds in _atoms_when(test, truth):
            tensor, on_host_when = _device_check(atom)
            key = _dotted(tensor) if tensor is not None else None
            if tensor is not None and key is not None and on_host_when is holds:
                found[key] = Value(Place.HOST, frozenset(), self.value(tensor).tags | {TENSOR})
        return found

    def _requirements(self, test: ast.expr, truth: bool) -> tuple[Requirement, ...]:
        """What ``test`` being ``truth`` says about this function's parameters:
        ``p is None`` / ``p is not None`` / ``p`` / ``p > 0`` (and ``not``, ``and`` / ``or``),
        and about flags of ``self`` (``self.adaptive``)."""
        found: list[Requirement] = []
        scope = self.scope
        for atom, holds in _atoms_when(test, truth):
            if (
                isinstance(atom, ast.Attribute)
                and isinstance(atom.value, ast.Name)
                and atom.value.id == scope.self_name
            ):  # ``self.flag``: the project knows what constructors are given for it
                found.append((f"self.{atom.attr}", "true" if holds else "false"))
                continue
            requirement = _requirement(atom, holds)
            if requirement is not None:
                name = requirement[0]
                if name in scope.facts.params and (
                    name not in scope.rebound
                    or (requirement[1] == "none" and name not in scope.rebound_maybe_none)
                ):
                    found.append(requirement)
        return tuple(found)

    def _training_test(self, test: ast.expr) -> bool | None:
        """True for ``if self.training`` (also ``self.training and ...``), False for
        ``if not self.training``: code for training mode, which inference never runs."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return False if self._training_test(test.operand) is True else None
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return True if any(self._training_test(v) is True for v in test.values) else None
        if (
            isinstance(test, ast.Attribute)
            and test.attr == "training"
            and isinstance(test.value, ast.Name)
            and test.value.id == self.scope.self_name
        ):
            return True
        return None

    def _is_lazy_init(self, node: ast.If) -> bool:
        """``if self._k is None: self._k = ...``, ``if key not in _CACHE: _CACHE[key] = ...``:
        a cache check whose body fills the persistent state it checks (an attribute of
        ``self`` or of another object, a module-level name) runs once, not on every step."""
        tested = self._cache_checked(node.test, bare=False)
        return bool(tested) and self._fills(node.body, tested)

    def _returns_when_cached(self, node: ast.If, rest: Sequence[ast.stmt]) -> bool:
        """``if key in self._done: return`` (or ``if self._ready: return``) followed by code
        that fills the state it checks: that code runs once, not on every step."""
        if node.orelse or not rest or not isinstance(node.body[-1], ast.Return):
            return False
        tested = self._cache_checked(node.test, bare=True)
        return bool(tested) and self._fills(rest, tested)

    def _cache_checked(self, test: ast.expr, *, bare: bool) -> set[str]:
        """The persistent state a cache check tests (``x is None``, ``k in self._cache``,
        ``n > self.size[0]``, ``not hasattr(self, "table")``, ``not self._ready`` and, with
        ``bare``, a plain ``self._ready``); empty for other tests."""
        operands: list[ast.expr] = []
        for node in ast.walk(test):
            if isinstance(node, ast.Compare) and not all(isinstance(op, ast.Eq) for op in node.ops):
                operands += [node.left, *node.comparators]  # not ==: mode == "x" is no cache
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                operands.append(node.operand)
            elif isinstance(node, ast.Call):
                operands += _attribute_named(node, "hasattr", 0)
        if bare and isinstance(test, (ast.Name, ast.Attribute)):
            operands.append(test)
        for operand in list(operands):
            # hit = _CACHE.get(key); if hit is None: ...: the local stands for the cache.
            source = self.scope.assigned.get(operand.id) if isinstance(operand, ast.Name) else None
            if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute):
                if source.func.attr in ("get", "setdefault"):
                    operands.append(source.func.value)
            elif isinstance(source, ast.Subscript):
                operands.append(source.value)
            elif isinstance(source, ast.Attribute):
                operands.append(source)  # context = self._context; if context is not None: ...
        tested: set[str] = set()
        for operand in operands:
            while isinstance(operand, (ast.Name, ast.Attribute, ast.Subscript)):
                if self._persistent(operand):
                    tested.add(ast.unparse(operand))  # self.cache[0].device, ..., self.cache
                if isinstance(operand, ast.Name):
                    break
                operand = operand.value
        return tested

    def _fills(self, statements: Sequence[ast.stmt], tested: set[str]) -> bool:
        """True when ``statements`` store into (assign, or mutate with ``add``, ``update``,
        ``copy_``...) one of the ``tested`` expressions or an item or attribute of one."""
        for statement in statements:
            for child in ast.walk(statement):
                if isinstance(child, ast.Assign):
                    targets = child.targets
                elif isinstance(child, (ast.AnnAssign, ast.AugAssign)):
                    targets = [child.target]
                elif (
                    isinstance(child, ast.Call)
                    and isinstance(child.func, ast.Attribute)
                    and child.func.attr in _MUTATORS
                ):
                    targets = [child.func.value]
                elif isinstance(child, ast.Call):
                    # setattr(self, "table", t), self.register_buffer("table", t)
                    targets = [
                        *_attribute_named(child, "setattr", 0),
                        *_attribute_named(child, "register_buffer", None),
                        *_attribute_named(child, "register_parameter", None),
                    ]
                else:
                    continue
                for target in targets:
                    stored: ast.expr = target
                    while True:
                        if ast.unparse(stored) in tested:
                            return True
                        if not isinstance(stored, (ast.Attribute, ast.Subscript)):
                            break
                        stored = stored.value
        return False

    def _persistent(self, node: ast.expr) -> bool:
        """True for state that outlives a call: a module-level name, or an attribute or item
        of ``self``, of a module-level name or of a parameter that is a module (``layer``,
        ``x: nn.Module``) -- not of other parameters, such as per-step metadata objects, nor
        of an attribute named metadata (``self.forward_metadata.cache``)."""
        root = node
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            if isinstance(root, ast.Attribute) and root.attr.endswith("metadata"):
                return False  # self.forward_metadata(.cache): replaced with every step
            root = root.value
        if not isinstance(root, ast.Name):
            return False
        if root is not node and (
            root.id == self.scope.self_name or root.id in self.scope.module_params
        ):
            return True
        return self.scope is not self.module_scope and root.id in self.module_scope.env

    def _merge_env(self, other: dict[str, Value]) -> None:
        env = self.scope.env
        for name, value in other.items():
            current = env.get(name)
            env[name] = value if current is None else _merge(current, value)

    def _element_value(self, iterable: ast.expr) -> Value:
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "range"
        ):
            return HOST.with_tags(SCALAR)
        value = self.value(iterable)
        return Value(value.place, value.params, value.tags & {TENSOR} - {PYSEQ})

    def _bind(self, target: ast.expr, value: Value, source: ast.expr | None) -> None:
        env = self.scope.env
        if self.scope.narrowed:
            key = _dotted(target)
            if key in self.scope.narrowed:  # reassigned: the guard no longer applies
                self.scope.narrowed = {k: v for k, v in self.scope.narrowed.items() if k != key}
        if isinstance(target, ast.Name):
            env[target.id] = _as_named(target.id, value)
            if source is None or not self._never_none(source):
                self.scope.maybe_none.add(target.id)
                self.scope.rebound_maybe_none.add(target.id)
            else:
                self.scope.maybe_none.discard(target.id)
            self.scope.rebound.add(target.id)
            if source is None:
                self.scope.assigned.pop(target.id, None)
            else:
                self.scope.assigned[target.id] = source
        elif isinstance(target, (ast.Tuple, ast.List)):
            sources = source.elts if isinstance(source, (ast.Tuple, ast.List)) else None
            element_value = Value(value.place, value.params)
            if value.place is Place.DEVICE and PYSEQ not in value.tags:
                # The parts of an opaque call's result made on a device may be host metadata.
                element_value = UNKNOWN
            for index, element in enumerate(target.elts):
                if sources is not None and len(sources) == len(target.elts):
                    self._bind(element, self.value(sources[index]), sources[index])
                else:
                    self._bind(element, element_value, None)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, value, None)
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == self.scope.self_name
        ):
            key = f"{target.value.id}.{target.attr}"
            if key in self.scope.buffers:  # assigning a tensor to a buffer keeps it a buffer
                value = UNKNOWN.with_tags(TENSOR)
            env[key] = _as_named(target.attr, value)

    def _target_expressions(self, target: ast.expr) -> None:
        """Walk the loads inside an assignment target (``x[i] = ...`` reads x and i)."""
        if isinstance(target, (ast.Subscript, ast.Attribute)):
            self._dispatch(target)
            self._expression(target.value)
            if isinstance(target, ast.Subscript):
                self._expression(target.slice)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target_expressions(element)

    # ------------------------------------------------------------ expressions

    def _expression(self, node: ast.expr) -> None:
        """Dispatch rules over ``node`` and its children; record calls."""
        stack: list[ast.AST] = [node]
        while stack:
            current = stack.pop()
            if isinstance(current, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
                self._dispatch(current)
                self._comprehension(current)
                continue
            if isinstance(current, ast.Lambda):
                self._lambda(current)
                continue
            if isinstance(current, (ast.BoolOp, ast.IfExp)) and self._guarded_operands(current):
                continue
            self._dispatch(current)
            if isinstance(current, ast.Call):
                self._call(current)
            elif isinstance(current, ast.NamedExpr):
                self._bind(current.target, self.value(current.value), current.value)
            stack.extend(reversed(_subexpressions(current)))
        return None

    def _grow_sequence(self, call: ast.Call) -> None:
        """``xs.append(t)``, ``xs.extend(ts)``, ``xs.insert(i, t)`` on a local list, ``t`` a
        tensor or device data: the list now also holds data where ``t`` lives (``xs = []``
        alone is host data, and so is a list of Python numbers of unknown origin)."""
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.attr in _SEQUENCE_GROWERS
            and len(call.args) == _SEQUENCE_GROWERS[func.attr]
        ):
            return
        name = func.value.id
        current = self.scope.env.get(name)
        if current is None or PYSEQ not in current.tags:
            return
        added = self.value(call.args[-1])
        if added.place is Place.DEVICE or TENSOR in added.tags:  # not numbers of unknown origin
            self.scope.env[name] = join(current, added).with_tags(PYSEQ)
        elif not added.on_host and not added.tags & {SCALAR, PYSEQ}:
            # Something of unknown kind: the list stays host data, but what ``torch.cat``
            # makes of it is not known to be a fresh host tensor.
            self.scope.env[name] = current.with_tags(OPAQUE)

    def _register_state(self, call: ast.Call) -> None:
        """``self.register_buffer("idx", t)``: ``self.idx`` is module state, which moves
        with the module (``model.to(device)``), even when ``t`` was made on the host."""
        for target in _attribute_named(call, "register_buffer", None):
            assert isinstance(target, ast.Attribute)
            if isinstance(target.value, ast.Name) and target.value.id == self.scope.self_name:
                key = f"{target.value.id}.{target.attr}"
                self.scope.env[key] = UNKNOWN.with_tags(TENSOR)
                self.scope.buffers.add(key)

    def _guarded_operands(self, node: ast.BoolOp | ast.IfExp) -> bool:
        """Walk the operands of ``node`` where a device guard before them holds
        (``not x.is_cuda and torch.equal(x, y)``, ``a if x.is_cpu else b``); False, with
        nothing walked, when no operand is guarded."""
        if isinstance(node, ast.BoolOp):
            truth = isinstance(node.op, ast.And)  # what the operands before one must be
            parts = [(operand, self._host_when(operand, truth)) for operand in node.values]
            if not any(guard for _, guard in parts[:-1]):
                return False
            self._dispatch(node)
            known: dict[str, Value] = {}
            for operand, guard in parts:
                self._walk_guarded(operand, known)
                known = {**known, **guard}
            return True
        when_true, when_false = self._host_when(node.test, True), self._host_when(node.test, False)
        if not (when_true or when_false):
            return False
        self._dispatch(node)
        self._expression(node.test)
        self._walk_guarded(node.body, when_true)
        self._walk_guarded(node.orelse, when_false)
        return True

    def _walk_guarded(self, node: ast.expr, guarded: dict[str, Value]) -> None:
        """:meth:`_expression` over ``node`` with the ``guarded`` host values in force
        (values computed for it before, without them, are forgotten)."""
        scope = self.scope
        narrowed = scope.narrowed
        if guarded:
            for child in ast.walk(node):
                scope.memo.pop(id(child), None)
            scope.narrowed = {**narrowed, **guarded}
        try:
            self._expression(node)
        finally:
            scope.narrowed = narrowed

    @contextmanager
    def _comprehension_scope(self, generators: list[ast.comprehension]) -> Iterator[None]:
        scope = self.scope
        saved_env, saved_memo = scope.env, scope.memo
        scope.env = dict(saved_env)
        scope.memo = dict(saved_memo)
        for generator in generators:
            self._bind(generator.target, self._element_value(generator.iter), None)
        try:
            yield
        finally:
            scope.env, scope.memo = saved_env, saved_memo

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        scope = self.scope
        for generator in node.generators:
            self._expression(generator.iter)
        with self._comprehension_scope(node.generators):
            scope.loop_depth += 1
            for generator in node.generators:
                for condition in generator.ifs:
                    self._expression(condition)
            if isinstance(node, ast.DictComp):
                self._expression(node.key)
                self._expression(node.value)
            else:
                self._expression(node.elt)
            scope.loop_depth -= 1

    def _lambda(self, node: ast.Lambda) -> None:
        scope = self.scope
        saved_env, saved_memo = scope.env, scope.memo
        scope.env = dict(saved_env)
        scope.memo = {}
        for argument in node.args.args:
            scope.env[argument.arg] = UNKNOWN
        try:
            self._expression(node.body)
        finally:
            scope.env, scope.memo = saved_env, saved_memo

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if self.qualified_name(func) == "torch.compile" and node.args:
            reference = self._callee(node.args[0])
            if reference is not None:
                self.compiled.append((self.scope.facts.qualname, reference))
        callee = self._callee(func)
        if callee is None or (
            # Code that runs once matters only for what it builds (a ``Cls(...)``).
            self.scope.lazy_depth and not callee[-1].rpartition(".")[2][:1].isupper()
        ):
            return
        self.scope.facts.calls.append(
            CallSite(
                callee=callee,
                span=self.span(node),
                statement=self.statement,
                args=tuple(
                    self._argument_value(arg)
                    for arg in node.args
                    if not isinstance(arg, ast.Starred)
                ),
                kwargs=tuple(
                    (keyword.arg, self._argument_value(keyword.value))
                    for keyword in node.keywords
                    if keyword.arg is not None
                ),
                in_loop=self.in_loop,
                requires=self.scope.requires,
                spread=any(isinstance(arg, ast.Starred) for arg in node.args)
                or any(
                    keyword.arg is None and not self._own_kwargs(keyword.value)
                    for keyword in node.keywords
                ),
                forwards_kwargs=any(
                    keyword.arg is None and self._own_kwargs(keyword.value)
                    for keyword in node.keywords
                ),
                once=self.scope.lazy_depth > 0,
            )
        )

    def _own_kwargs(self, node: ast.expr) -> bool:
        """True for this function's ``**kwargs`` parameter, unchanged."""
        scope = self.scope
        return (
            isinstance(node, ast.Name)
            and node.id == scope.kwargs_name
            and node.id not in scope.rebound
        )

    def _argument_value(self, node: ast.expr) -> Value:
        """What a call passes: its placement (CPU code passes host data), and whether it
        is a constant such as None (which branches of the callee it takes)."""
        value = HOST if self.scope.host_code else self.value(node)
        state = literal_state(node)
        if state is not None:
            return value.with_tags(_literal_tag(state))
        if self._never_none(node):
            return value.with_tags(NOT_NONE)
        scope = self.scope
        if (
            isinstance(node, ast.Name)
            and node.id in scope.facts.params
            and node.id not in scope.rebound
        ):
            return Value(value.place, frozenset((node.id,)), value.tags | {FORWARDED})
        return value

    def _never_none(self, node: ast.expr) -> bool:
        """True for a value that cannot be None: a constant other than None, a local
        only ever set to such values, a computed value (``f(x)``, ``x[i]``, ``a + b``);
        not a parameter, an attribute (``self.cache`` may be None until filled),
        ``d.get(k)`` or ``x if c else None``."""
        if isinstance(node, ast.Name):
            scope = self.scope
            known = node.id in scope.rebound or node.id in scope.facts.params
            return known and node.id not in scope.maybe_none
        if isinstance(node, ast.Constant):
            return node.value is not None
        if isinstance(node, ast.IfExp):
            return self._never_none(node.body) and self._never_none(node.orelse)
        if isinstance(node, ast.Call):
            func = node.func
            return not (isinstance(func, ast.Attribute) and func.attr in ("get", "pop"))
        return isinstance(node, _NEVER_NONE_EXPRESSIONS)

    def _callee(self, func: ast.expr) -> tuple[str, ...] | None:
        """An unresolved reference to the function ``func`` names, if it may be ours."""
        qualified = self.qualified_name(func)
        if qualified is not None:
            if qualified.partition(".")[0] in _EXTERNAL_ROOTS:
                return None
            return ("dotted", qualified)
        if isinstance(func, ast.Name):
            name = func.id
            if name in _BUILTIN_NAMES and name not in self.module_defs:
                return None
            if name in self.scope.env and name not in self.module_defs:
                return None  # a local variable holding a callable
            return ("name", name)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id == self.scope.self_name:
                return ("self", func.attr)
            if func.value.id in self.module_defs:
                return ("name", f"{func.value.id}.{func.attr}")  # Class.static_or_classmethod
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute)
            and isinstance(func.value.value, ast.Name)
            and func.value.value.id == self.scope.self_name
        ):
            return ("attr", func.value.attr, func.attr)
        return None

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        table = self.imports if self.scope.facts.qualname == MODULE_SCOPE else self.scope.imports
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    table[alias.asname] = alias.name
                else:
                    top = alias.name.partition(".")[0]
                    table[top] = top
            return
        base = node.module or ""
        if node.level:
            parts = self.package.split(".") if self.package else []
            keep = len(parts) - (node.level - 1)
            prefix = ".".join(parts[: max(keep, 0)])
            base = f"{prefix}.{base}".strip(".") if base else prefix
        for alias in node.names:
            if alias.name == "*":
                continue
            table[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name

    # ------------------------------------------------------ functions, classes

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer = self.scope
        in_class = outer.facts.kind == "class"
        parent = outer.facts.qualname
        qualname = node.name if parent == MODULE_SCOPE else f"{parent}.{node.name}"
        decorators = tuple(self._decorator_name(d) for d in node.decorator_list)
        kind = "function"
        if in_class:
            kind = "method"
            if "staticmethod" in decorators:
                kind = "staticmethod"
            elif "classmethod" in decorators:
                kind = "classmethod"
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        all_arguments = [*positional, *arguments.kwonlyargs]
        if arguments.vararg:
            all_arguments.append(arguments.vararg)
        if arguments.kwarg:
            all_arguments.append(arguments.kwarg)
        self_name = positional[0].arg if kind in ("method", "classmethod") and positional else None
        defaults: dict[str, ast.expr | None] = {}
        for argument, positional_default in zip(
            reversed(positional), reversed(arguments.defaults), strict=False
        ):
            defaults[argument.arg] = positional_default
        for argument, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
            defaults[argument.arg] = kw_default
        env: dict[str, Value] = {}
        if not in_class and outer is not self.module_scope:
            # Closure: the enclosing function's parameters are not this function's.
            for name, value in outer.env.items():
                env[name] = UNKNOWN if value.place is Place.PARAM else value
        for argument in all_arguments:
            name = argument.arg
            default = defaults.get(name)
            if (
                name == self_name
                or _is_host_annotation(argument.annotation)
                or (isinstance(default, ast.Constant) and default.value is not None)
            ):
                env[name] = HOST
            else:
                env[name] = _as_named(name, param(name))
        module_params = set()
        typed_params: dict[str, str] = {}
        for argument in all_arguments:  # annotations say what a parameter is
            annotation = ast.unparse(argument.annotation) if argument.annotation else ""
            if _MODULE_ANNOTATION.search(annotation) or _MODULE_WORDS & set(
                argument.arg.lower().split("_")
            ):
                module_params.add(argument.arg)
            known = env[argument.arg]
            annotated = _class_annotation(annotation)
            if annotated in self.host_fields or annotated in self.imports:
                typed_params[argument.arg] = annotated
            if _TENSOR_ANNOTATION.match(annotation.strip("'\"")) and not known.on_host:
                env[argument.arg] = known.with_tags(TENSOR)
            elif _SEQUENCE_ANNOTATION.match(annotation):
                env[argument.arg] = known.with_tags(PYSEQ)
        line_text = self.lines[node.lineno - 1] if node.lineno <= len(self.lines) else ""
        marker = _MARKER.search(line_text)
        facts = FunctionFacts(
            qualname=qualname,
            line=node.lineno,
            class_name=parent if in_class else None,
            params=tuple(argument.arg for argument in all_arguments),
            kind=kind,
            decorators=decorators,
            marker=marker.group(1) if marker else None,
            literal_defaults=tuple(
                (name, state)
                for name, default in defaults.items()
                if (state := literal_state(default)) is not None
            ),
        )
        self.functions[qualname] = facts
        class_name = parent if in_class else None
        self.scope = self._new_scope(facts, env, self_name, class_name)
        if not in_class and outer is not self.module_scope:
            # A closure sees the enclosing function's locals as they are at its definition.
            self.scope.rebound = outer.rebound - set(self.scope.facts.params)
            self.scope.rebound_maybe_none = outer.rebound_maybe_none - set(self.scope.facts.params)
            self.scope.maybe_none = set(outer.maybe_none)
        self.scope.default_device = outer.default_device
        self.scope.module_params = frozenset(module_params)
        self.scope.kwargs_name = arguments.kwarg.arg if arguments.kwarg else None
        self.scope.typed_params = typed_params
        self.scope.maybe_none |= set(facts.params)  # a caller may pass None for any of them
        self.scope.host_code = (
            outer.host_code
            or self.module_scope.host_code
            or (class_name is not None and says_cpu(class_name.rpartition(".")[2]))
        )
        try:
            self._body(node.body)
            if class_name and node.name == "__init__" and self_name:
                self._remember_attributes(class_name, self_name)
            if not in_class:  # a module function or one nested in a function
                self._remember_result(qualname, self.scope.returns)
        finally:
            self.scope = outer

    def _device_result(self, name: str) -> Value | None:
        """What a call of the function ``name`` returns, when :meth:`_remember_result` knows
        it: a function nested in this one (or in an enclosing one), else a module one."""
        prefix = self.scope.facts.qualname
        while prefix and prefix != MODULE_SCOPE:
            found = self.device_results.get(f"{prefix}.{name}")
            if found is not None:
                return found
            prefix = prefix.rpartition(".")[0]
        return self.device_results.get(name)

    def _remember_result(self, name: str, returns: list[Value]) -> None:
        """A function (of the module, or nested in a function) whose every ``return`` gives
        device data (``t.to(device)``, a factory on a device) returns device data wherever
        this file calls it (``name`` is its qualified name in the module)."""
        if returns and all(value.place is Place.DEVICE for value in returns):
            tags = frozenset.intersection(*(value.tags for value in returns))
            self.device_results[name] = Value(Place.DEVICE, frozenset(), tags)
        else:
            self.device_results.pop(name, None)

    def _remember_attributes(self, class_name: str, self_name: str) -> None:
        prefix = f"{self_name}."
        attributes = self.class_attributes.setdefault(class_name, {})
        for key, value in self.scope.env.items():
            if key.startswith(prefix):
                place = Place.UNKNOWN if value.place is Place.PARAM else value.place
                attributes[key[len(prefix) :]] = Value(place, frozenset(), value.tags)

    def _decorator_name(self, node: ast.expr) -> str:
        if isinstance(node, ast.Call):
            node = node.func
        qualified = self.qualified_name(node)
        if qualified is not None:
            return qualified
        return ast.unparse(node)

    def _class(self, node: ast.ClassDef) -> None:
        outer = self.scope
        parent = outer.facts.qualname
        qualname = node.name if parent == MODULE_SCOPE else f"{parent}.{node.name}"
        bases = tuple(self.qualified_name(base) or ast.unparse(base) for base in node.bases)
        attribute_types: dict[str, str] = {}
        self.classes[qualname] = ClassFacts(
            qualname,
            node.lineno,
            bases,
            attribute_types,
            _init_parameters(node),
            self.host_fields.get(qualname, frozenset()),
        )
        facts = FunctionFacts(qualname, node.lineno, None, (), "class", (), None)
        self.scope = _Scope(facts, {}, {}, None, {})
        try:
            # __init__ first: the placements it gives self attributes serve every method.
            body = sorted(
                node.body,
                key=lambda s: not (isinstance(s, ast.FunctionDef) and s.name == "__init__"),
            )
            for statement in body:
                if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
                    attribute_types.update(self._attribute_types(statement))
                self._statement(statement)
        finally:
            self.scope = outer

    def _attribute_types(self, init: ast.FunctionDef) -> dict[str, str]:
        """``self.attr = SomeClass(...)`` assignments made in ``__init__``."""
        if not init.args.args:
            return {}
        self_name = init.args.args[0].arg
        types: dict[str, str] = {}
        for statement in ast.walk(init):
            if not isinstance(statement, ast.Assign) or not isinstance(statement.value, ast.Call):
                continue
            func = statement.value.func
            class_name = self.qualified_name(func) or (
                func.id if isinstance(func, ast.Name) else None
            )
            if class_name is None:
                continue
            for target in statement.targets:
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == self_name
                ):
                    types[target.attr] = class_name
        return types
