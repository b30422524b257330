"""What a function's or a class's body shows at a glance, read before the per-file phase
walks it: the methods of its classes, the attributes its methods fill, the parameters it
uses as tensors, the parts of the tuples it returns, the calls that build objects. Each is
one walk of the body, on a walk quicker than ``ast.walk`` (it skips contexts and operators)."""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

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
    node: ast.FunctionDef | ast.AsyncFunctionDef,
    env: dict[str, Value],
    receivers: set[str] | None = None,
) -> set[str]:
    """Parameters of ``node`` (not known host data) that its body calls a tensor-only
    method on (``x.sum()``, ``x.cpu()``); ``receivers``: the names it calls them on, when
    a walk of the body (:func:`class_body`) already found them."""
    if not any(v.place is Place.PARAM and PYSEQ not in v.tags for v in env.values()):
        return set()  # no parameter to find (a method of ``self`` alone)
    if receivers is None:
        receivers = set()
        pending: list[ast.AST] = list(node.body)
        while pending:
            current = pending.pop()
            if isinstance(current, _SCOPES):
                continue  # a nested scope's own names
            _note_receiver(current, receivers)
            _push_children(current, pending)
    found = set()
    for name in receivers:
        value = env.get(name)
        if value is not None and value.place is Place.PARAM and PYSEQ not in value.tags:
            found.add(name)
    return found


def _note_receiver(node: ast.AST, receivers: set[str]) -> None:
    """Add ``x`` for a call ``x.sum()`` of a tensor-only method on a name."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _TENSOR_USES
        and isinstance(node.func.value, ast.Name)
    ):
        receivers.add(node.func.value.id)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
# Fields that hold only leaves no reader here asks for: load/store contexts and operators.
_LEAF_FIELDS = frozenset({"ctx", "op", "ops"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _push_children(node: ast.AST, pending: list[ast.AST] | deque[ast.AST]) -> None:
    """Append the child nodes of ``node`` to ``pending`` (contexts and operators left out):
    ``ast.iter_child_nodes`` without its two generators per node."""
    kind = type(node)
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(f for f in kind._fields if f not in _LEAF_FIELDS)
    for name in fields:
        child = getattr(node, name, None)
        if type(child) is list:
            pending.extend(item for item in child if isinstance(item, ast.AST))
        elif isinstance(child, ast.AST):
            pending.append(child)


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and every node below it, contexts and operators left out, in no set order."""
    pending = [node]
    while pending:
        current = pending.pop()
        yield current
        _push_children(current, pending)


def breadth_first(node: ast.AST) -> Iterator[ast.AST]:
    """:func:`walk` in the order of ``ast.walk`` (level by level, fields in order)."""
    pending = deque([node])
    while pending:
        current = pending.popleft()
        yield current
        _push_children(current, pending)


@dataclass
class ClassBody:
    """What the methods of a class do with ``self``, from one walk of each method."""

    # Attributes the methods store items into outside ``__init__`` (``self.norms[i] = n``,
    # ``self.cache.append(t)``).
    filled: set[str] = field(default_factory=set)
    # ``self.attr = param`` made in ``__init__``, for attributes nothing else in the class
    # assigns and parameters ``__init__`` never reassigns: what the constructor is given.
    init_parameters: dict[str, str] = field(default_factory=dict)
    # Method -> the names its own body (not nested scopes) calls a tensor-only method on,
    # for :func:`used_as_tensors`.
    receivers: dict[ast.AST, set[str]] = field(default_factory=dict)


_FILLERS = frozenset({"append", "extend", "insert", "update", "setdefault"})


def class_body(node: ast.ClassDef) -> ClassBody:
    """The :class:`ClassBody` of ``node``."""
    body = ClassBody()
    stores: dict[str, int] = {}  # self attribute -> assignments anywhere in the class
    from_init: dict[str, str] = {}
    reassigned: set[str] = set()
    parameters: set[str] = set()
    for method in node.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or not method.args.args:
            continue
        owner = method.args.args[0].arg
        is_init = method.name == "__init__"
        if is_init:
            arguments = method.args
            parameters = {a.arg for a in (*arguments.args[1:], *arguments.kwonlyargs)}
        receivers = body.receivers[method] = set()
        # One walk of the method: its own body, then the rest (signature, nested scopes).
        own: list[ast.AST] = list(method.body)
        rest: list[ast.AST] = [
            *method.decorator_list,
            method.args,
            *getattr(method, "type_params", ()),
        ]
        if method.returns is not None:
            rest.append(method.returns)
        while own or rest:
            if own:
                child = own.pop()
                if isinstance(child, _SCOPES):
                    rest.append(child)
                    continue
                _note_receiver(child, receivers)
                _push_children(child, own)
            else:
                child = rest.pop()
                _push_children(child, rest)
            if isinstance(child, ast.Name):
                if is_init and isinstance(child.ctx, ast.Store):
                    reassigned.add(child.id)
            elif isinstance(child, ast.Attribute):
                if isinstance(child.ctx, ast.Store) and _of(child.value, owner):
                    stores[child.attr] = stores.get(child.attr, 0) + 1
            elif isinstance(child, ast.Assign):
                if is_init and isinstance(child.value, ast.Name):
                    for target in child.targets:
                        if isinstance(target, ast.Attribute) and _of(target.value, owner):
                            from_init[target.attr] = child.value.id
            elif is_init:
                continue
            elif isinstance(child, ast.Subscript):
                if isinstance(child.ctx, ast.Store):
                    _note_filled(child.value, owner, body.filled)
            elif (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr in _FILLERS
            ):
                _note_filled(child.func.value, owner, body.filled)
    body.init_parameters = {
        attribute: parameter
        for attribute, parameter in from_init.items()
        if stores.get(attribute) == 1 and parameter in parameters - reassigned
    }
    return body


def _of(node: ast.expr, owner: str) -> bool:
    """True for the name ``owner`` (a method's ``self``)."""
    return isinstance(node, ast.Name) and node.id == owner


def _note_filled(stored: ast.expr, owner: str, filled: set[str]) -> None:
    if isinstance(stored, ast.Attribute) and _of(stored.value, owner):
        filled.add(stored.attr)


def builds(callee: tuple) -> bool:
    """True for a call that builds an object of a class (``Cls(...)``): in code that runs
    once, it still tells what is built where."""
    last = callee[-1]
    return isinstance(last, str) and last.rpartition(".")[2][:1].isupper()
