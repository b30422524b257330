"""What a test or a constant says: the simple tests an ``if`` proves, requirements on
parameters (``p is None``, ``p > 0``), device checks (``x.is_cuda``) and the state of a
literal argument (None, False, a number, ``"cpu"``)."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from syncguard.facts import Requirement
from syncguard.values import CPU, FALSY, NONE, TRUTHY


def attribute_named(call: ast.Call, function: str, owner: int | None) -> list[ast.expr]:
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


def dotted_name(node: ast.expr) -> str | None:
    """``a.b.c`` for a name or an attribute chain of one; None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def device_check(test: ast.expr) -> tuple[ast.expr | None, bool]:
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
    number = numeric_value(node)
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


def numeric_value(node: ast.expr | None) -> int | float | None:
    """The value of a numeric constant such as ``3``, ``-1`` or ``0.5`` (not a bool)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        number = numeric_value(node.operand)
        return -number if number is not None else None
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value  # type: ignore[return-value]
    return None


def literal_tag(state: str) -> str:
    """The tag of an argument whose :func:`literal_state` is ``state``."""
    return {"none": NONE, "false": FALSY, "true": TRUTHY, "cpu": CPU}.get(state, state)


# Comparison operators, and the one that holds when the comparison fails.
_COMPARISONS = {ast.Gt: (">", "<="), ast.GtE: (">=", "<"), ast.Lt: ("<", ">="),
                ast.LtE: ("<=", ">"), ast.Eq: ("==", "!="), ast.NotEq: ("!=", "==")}  # fmt: skip


def atoms_when(test: ast.expr, truth: bool) -> Iterator[tuple[ast.expr, bool]]:
    """The simple tests that ``test`` being ``truth`` proves, each with its truth: through
    ``not``, and all operands of a true ``and`` (a false ``or``); nothing of the others."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        yield from atoms_when(test.operand, not truth)
    elif isinstance(test, ast.BoolOp):
        if truth is isinstance(test.op, ast.And):
            for operand in test.values:
                yield from atoms_when(operand, truth)
    else:
        yield test, truth


def none_check(test: ast.expr) -> tuple[str, bool] | None:
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


def requirement_of(atom: ast.expr, holds: bool) -> Requirement | None:
    """The requirement on a name that a simple test being ``holds`` states: ``("p",
    "true")`` for ``p``, ``("p", "none")`` for ``p is None``, ``("p", "cmp:>:0")`` for
    ``p > 0``."""
    if isinstance(atom, ast.Name):
        return atom.id, "true" if holds else "false"
    check = none_check(atom)
    if check is not None:
        return check[0], "none" if check[1] is holds else "not-none"
    if (
        isinstance(atom, ast.Compare)
        and len(atom.ops) == 1
        and type(atom.ops[0]) in _COMPARISONS
        and isinstance(atom.left, ast.Name)
        and (bound := numeric_value(atom.comparators[0])) is not None
    ):
        when_true, when_false = _COMPARISONS[type(atom.ops[0])]
        return atom.left.id, f"cmp:{when_true if holds else when_false}:{bound!r}"
    return None


def not_none_when(test: ast.expr, truth: bool) -> set[str]:
    """Names ``test`` being ``truth`` proves are not None (``x is not None``, ``x``)."""
    names = set()
    for atom, holds in atoms_when(test, truth):
        if isinstance(atom, ast.Name) and holds:
            names.add(atom.id)
        elif (check := none_check(atom)) is not None and check[1] is not holds:
            names.add(check[0])
    return names
