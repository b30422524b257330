"""Helpers shared by the rules: matching torch ops in both spellings (``torch.op(x, ...)``
and ``x.op(...)``), finding the device tensor among operands, short source quotes."""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from syncguard.rule import Context
from syncguard.values import PINNED, PYSEQ, SCALAR, Place, Value, maybe_device_tensor


@dataclass(frozen=True)
class Op:
    """A matched call: ``args`` are positional with the tensor first (the receiver of a
    method call), ``keywords`` the named arguments."""

    name: str
    args: tuple[ast.expr, ...]
    keywords: dict[str, ast.expr]
    is_method: bool

    def argument(self, position: int, name: str) -> ast.expr | None:
        """The argument at ``position`` (counting the tensor as 0) or named ``name``."""
        if position < len(self.args):
            return self.args[position]
        return self.keywords.get(name)


_ATEN = "torch.ops.aten."


def torch_op(func: ast.expr, ctx: Context) -> str | None:
    """The qualified name of the called function, with the aten spellings of a torch op
    (``torch.ops.aten.nonzero``, ``torch.ops.aten.nonzero.default``) read as ``torch.nonzero``."""
    qualified = ctx.qualified_name(func)
    if qualified is not None and qualified.startswith(_ATEN):
        return "torch." + qualified[len(_ATEN) :].split(".")[0]
    return qualified


def match_op(
    node: ast.Call, ctx: Context, names: Collection[str], *, modules: Collection[str] = ("torch",)
) -> Op | None:
    """``node`` as a call of one of ``names``: a function of ``modules`` (or its aten
    spelling) or a tensor method."""
    func = node.func
    keywords = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg}
    if any(isinstance(argument, ast.Starred) for argument in node.args):
        return None
    qualified = torch_op(func, ctx)
    if qualified is not None:
        module, _, name = qualified.rpartition(".")
        if module in modules and name in names:
            return Op(name, tuple(node.args), keywords, is_method=False)
        return None
    if isinstance(func, ast.Attribute) and func.attr in names:
        return Op(func.attr, (func.value, *node.args), keywords, is_method=True)
    return None


def literal(node: ast.expr | None) -> object:
    """The value of a literal argument (``2``, ``-1``, ``"nuc"``, ``None``); ``...`` (the
    Ellipsis) when ``node`` is absent or not a literal."""
    if node is None:
        return ...
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ...


def is_zero_or_absent(node: ast.expr | None) -> bool:
    """True for a literal ``0`` / ``0.0`` (or no argument at all)."""
    return node is None or (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
        and node.value == 0
    )


def is_host_tensor(value: Value) -> bool:
    """True for data known to be on the host and not a Python number or sequence."""
    return value.on_host and not value.tags & {PYSEQ, SCALAR}


def _non_blocking(node: ast.Call, position: int) -> bool:
    """``non_blocking`` given (as a keyword, or positionally at ``position``) and not False.

    A variable (``non_blocking=self.pin_memory``) is trusted to be true.
    """
    for keyword in node.keywords:
        if keyword.arg == "non_blocking":
            return not (isinstance(keyword.value, ast.Constant) and not keyword.value.value)
    if position < len(node.args):
        flag = node.args[position]
        return not (isinstance(flag, ast.Constant) and not flag.value)
    return False


@dataclass(frozen=True)
class HostToDeviceCopy:
    """A copy of the host tensor ``source`` to the accelerator; ``subject`` is where it lands."""

    source: ast.expr
    subject: ast.expr
    non_blocking: bool
    pinned: bool
    spelling: str  # "to", "cuda" or "copy_"


def host_to_device_copy(node: ast.Call, ctx: Context) -> HostToDeviceCopy | None:
    """``host.to(device)``, ``host.cuda()`` or ``device_buffer.copy_(host)``, else None."""
    func = node.func
    if not isinstance(func, ast.Attribute) or ctx.qualified_name(func) is not None:
        return None
    method = func.attr
    source: ast.expr
    subject: ast.expr
    if method in ("to", "cuda"):
        source, subject = func.value, node
        if method == "to" and ctx.value(node).place not in (Place.DEVICE, Place.PARAM):
            return None  # a dtype conversion, a copy to the host, or an unknown target
        if isinstance(source, ast.Call) and _names_class(source.func):
            return None  # nn.Linear(...).to(device): a module, not a tensor
        flag_position = 2 if method == "to" else 1
    elif method == "copy_" and node.args:
        source, subject = node.args[0], func.value
        if not maybe_device_tensor(ctx.value(subject)):
            return None
        flag_position = 1
    else:
        return None
    value = ctx.value(source)
    if not is_host_tensor(value):
        return None
    return HostToDeviceCopy(
        source, subject, _non_blocking(node, flag_position), PINNED in value.tags, method
    )


def _names_class(func: ast.expr) -> bool:
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name[:1].isupper()


def is_device_tensor(node: ast.expr, ctx: Context) -> bool:
    """True when ``node`` is known to be a tensor that may live on the accelerator."""
    return maybe_device_tensor(ctx.value(node))


def device_tensor_in(nodes: Iterable[ast.expr | None], ctx: Context) -> ast.expr | None:
    """The first of ``nodes`` -- or of the elements of a list / tuple / set literal among
    them -- that is a tensor which may live on the accelerator."""
    for node in nodes:
        if node is None:
            continue
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            found = device_tensor_in(node.elts, ctx)
            if found is not None:
                return found
        elif isinstance(node, ast.Starred):
            continue
        elif is_device_tensor(node, ctx):
            return node
    return None


def is_builtin_call(node: ast.Call, ctx: Context, names: Iterable[str]) -> str | None:
    """The builtin ``node`` calls (``int``, ``print``...), when it is one of ``names``."""
    func = node.func
    if (
        isinstance(func, ast.Name)
        and func.id in names
        and ctx.qualified_name(func) is None  # not shadowed by an import
    ):
        return func.id
    return None


def short(ctx: Context, node: ast.AST, limit: int = 40) -> str:
    """The source of ``node`` for a one-line suggestion, elided when long."""
    text = ctx.source(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."
