"""What declarations say, before any code runs: annotations that name host data, fields a
class declares as host data (``lens: np.ndarray``, ``x: torch.Tensor  # CPU``) and the
classes ``__init__`` assigns to attributes."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from syncguard.bodies import breadth_first

# Types whose values live on the host, and containers whose items live where their element
# types say: ``list[int]`` is host data, ``dict[str, Any]`` or a bare ``list`` says nothing.
_HOST_SCALARS = frozenset(
    [
        "int",
        "float",
        "bool",
        "str",
        "bytes",
        "None",
        "np.ndarray",
        "numpy.ndarray",
        "npt.NDArray",
        "NDArray",
        "torch.dtype",
        "torch.device",
        "dtype",
        "device",
    ]
)
_CONTAINERS = frozenset(
    [
        "list",
        "List",
        "tuple",
        "Tuple",
        "dict",
        "Dict",
        "set",
        "Set",
        "frozenset",
        "FrozenSet",
        "Sequence",
        "Iterable",
        "Mapping",
        "MutableMapping",
        "MutableSequence",
        "typing.Sequence",
        "typing.Mapping",
        "collections.abc.Sequence",
        "collections.abc.Mapping",
        "collections.abc.Iterable",
    ]
)
# A declaration's trailing comment saying the value lives on the CPU (``# CPU tensor``).
_CPU_COMMENT = re.compile(r"#\s*(?:on\s+(?:the\s+)?)?CPU\b", re.IGNORECASE)
SEQUENCE_ANNOTATION = re.compile(r"^(?:list|List|tuple|Tuple|Sequence)\b")
TENSOR_ANNOTATION = re.compile(r"^(?:Optional\[)?(?:torch\.)?Tensor(?:\]|\s*\|\s*None)?$")


def class_annotation(text: str) -> str:
    """The class an annotation names, quotes and ``| None`` / ``Optional[...]`` aside."""
    text = text.strip("'\"")
    if text.startswith("Optional[") and text.endswith("]"):
        text = text[len("Optional[") : -1]
    return text.removesuffix(" | None").removeprefix("None | ").strip("'\"")


def is_host_annotation(annotation: ast.expr | None) -> bool:
    """Whether values of this annotation live on the host: host scalars, arrays, dtypes and
    containers (``Optional``/unions too) all of whose element types do."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    return _host_type(annotation)


def _host_type(node: ast.expr) -> bool:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _host_type(node.left) and _host_type(node.right)
    if isinstance(node, ast.Constant):
        return node.value is None or node.value is Ellipsis
    if isinstance(node, ast.Subscript):
        outer = ast.unparse(node.value)
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if outer.rsplit(".", 1)[-1] in {"Optional", "Union"}:
            return all(_host_type(item) for item in items)
        if outer.rsplit(".", 1)[-1] in {"NDArray"}:
            return True
        return outer in _CONTAINERS and all(_host_type(item) for item in items)
    return ast.unparse(node) in _HOST_SCALARS


def declared_host_fields(
    tree: ast.Module, lines: list[str]
) -> tuple[dict[str, frozenset[str]], set[str]]:
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
                is_host_annotation(statement.annotation)
                or _CPU_COMMENT.search(lines[statement.lineno - 1])
            )
        )
        if fields:
            found[node.name] = fields
            if len(fields) == len(declared):
                records.add(node.name)
    return found, records


def init_attribute_types(
    init: ast.FunctionDef, qualified_name: Callable[[ast.expr], str | None]
) -> dict[str, str]:
    """``self.attr = SomeClass(...)`` assignments made in ``__init__``."""
    if not init.args.args:
        return {}
    self_name = init.args.args[0].arg
    types: dict[str, str] = {}
    for statement in breadth_first(init):  # in order: a later assignment wins
        if not isinstance(statement, ast.Assign) or not isinstance(statement.value, ast.Call):
            continue
        func = statement.value.func
        class_name = qualified_name(func) or (func.id if isinstance(func, ast.Name) else None)
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
