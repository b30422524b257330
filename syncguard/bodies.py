"""What a function's or a class's body shows at a glance, read before the per-file phase
walks it: the methods of its classes, the attributes its methods fill, the parameters it
uses as tensors, the parts of the tuples it returns, the calls that build objects."""

from __future__ import annotations

import ast

from syncguard.values import PYSEQ, Place, Value


def method_names(statements: list[ast.stmt]) -> set[str]:
    """Names of the methods of the classes among ``statements`` (nested classes too)."""
    found: set[str] = set()
    classes = [s for s in statements if isinstance(s, ast.ClassDef)]
    while classes:
        for member in classes.pop().body:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.add(member.name)
            elif isinstance(member, ast.ClassDef):
                classes.append(member)
    return found


def part_sources(
    returns: list[tuple[frozenset[str] | None, ...] | None],
) -> tuple[tuple[str, ...] | None, ...]:
    """Per part of the tuples a function returns (all of one length): the functions whose
    results that part holds, or None when it may hold device data."""
    if not returns or any(parts is None for parts in returns):
        return ()
    lengths = {len(parts) for parts in returns if parts is not None}
    if len(lengths) != 1:
        return ()
    found: list[tuple[str, ...] | None] = []
    for index in range(lengths.pop()):
        each = [parts[index] for parts in returns if parts is not None]
        host = all(part is not None for part in each)
        found.append(tuple(sorted(frozenset().union(*each))) if host else None)  # type: ignore[arg-type]
    return tuple(found)


# Methods that only tensors have (of the common ones): a parameter they are called on in
# its function is a tensor there, whatever the annotation does not say.
_TENSOR_USES = frozenset(
    {"cpu", "cuda", "numel", "masked_fill", "masked_fill_", "index_select", "unsqueeze",
     "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor", "element_size",
     "is_cuda", "detach", "nonzero", "argmax", "cumsum", "sum"}
)  # fmt: skip


def used_as_tensors(
    node: ast.FunctionDef | ast.AsyncFunctionDef, env: dict[str, Value]
) -> set[str]:
    """Parameters of ``node`` (not known host data) that its body calls a tensor-only
    method on (``x.sum()``, ``x.cpu()``)."""
    found: set[str] = set()
    pending: list[ast.AST] = list(node.body)
    while pending:
        current = pending.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue  # a nested scope's own names
        if (
            isinstance(current, ast.Call)
            and isinstance(current.func, ast.Attribute)
            and current.func.attr in _TENSOR_USES
            and isinstance(current.func.value, ast.Name)
        ):
            name = current.func.value.id
            value = env.get(name)
            if value is not None and value.place is Place.PARAM and PYSEQ not in value.tags:
                found.add(name)
        pending.extend(ast.iter_child_nodes(current))
    return found


def filled_attributes(node: ast.ClassDef) -> set[str]:
    """Attributes of ``self`` that the methods of a class store items into outside
    ``__init__`` (``self.norms[i] = n``, ``self.cache.append(t)``)."""
    found: set[str] = set()
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
            continue
        if method.name == "__init__":
            continue
        owner = method.args.args[0].arg
        for child in ast.walk(method):
            if isinstance(child, ast.Subscript) and isinstance(child.ctx, ast.Store):
                stored = child.value
            elif (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr in ("append", "extend", "insert", "update", "setdefault")
            ):
                stored = child.func.value
            else:
                continue
            if (
                isinstance(stored, ast.Attribute)
                and isinstance(stored.value, ast.Name)
                and stored.value.id == owner
            ):
                found.add(stored.attr)
    return found


def builds(callee: tuple) -> bool:
    """True for a call that builds an object of a class (``Cls(...)``): in code that runs
    once, it still tells what is built where."""
    last = callee[-1]
    return isinstance(last, str) and last.rpartition(".")[2][:1].isupper()
