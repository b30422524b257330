"""What a receiver is: the type expressions the per-file phase records, so the project
phase can tell which function a call on an object reaches.

A type expression (:data:`TypeExpr`) is a nested tuple of strings, cheap to cache and
to compare, that the per-file phase writes for what it cannot know alone and the
project phase (:mod:`syncguard.bindings`) resolves across files:

* ``("exact", name)``: an instance of exactly the class ``name`` (``Proc(k)``);
* ``("sub", name)``: an instance of that class or a subclass (``x: Base``, ``cast(Base, x)``);
* ``("result", callee)``: what a call of ``callee`` returns (``make_generator(cfg)``);
* ``("attr", name)``: what ``self.<name>`` holds in the enclosing class;
* ``("global", name)``: what a module-level name of this file holds;
* ``("items", T)``: the elements of the container ``T`` (``self.procs[i]``, a loop over it);
* ``("box", T)``: a container of ``T`` (``[A(), B()]``, ``nn.ModuleList(...)``, a dict);
* ``("func", callee)``: the function itself (``self.fwd = kernels.flash_fwd``);
* ``("member", T, name)``: attribute ``name`` of a value of ``T`` (``ops.lamb`` of
  ``ops = Builder().load()``): the method of that name of its class;
* ``("union", T, ...)``: any of them.

A class ``name`` is as written in the file or qualified through its imports (the project
phase resolves it like a base class); a ``callee`` is the unresolved reference of
:class:`~syncguard.facts.CallSite` (``("name", f)``, ``("dotted", "a.b.f")``,
``("self", method)``...).
"""

from __future__ import annotations

import ast

from syncguard.conditions import dotted_name
from syncguard.facts import FunctionFacts
from syncguard.parsing import parse
from syncguard.placement import Placement
from syncguard.torch_api import BUILTIN_NAMES, COMMON_METHODS, EXTERNAL_ROOTS
from syncguard.values import BOOL, EVENT, INDEX, PYSEQ, SCALAR, STREAM, TENSOR

TypeExpr = tuple  # nested tuples of str, see the module docstring

# Calls that build a container of their arguments' elements (``nn.ModuleList(layers)``).
_CONTAINERS = frozenset(
    {"list", "tuple", "set", "frozenset", "sorted", "reversed", "ModuleList", "ModuleDict",
     "ParameterList", "Sequential", "OrderedDict", "dict", "deque"}
)  # fmt: skip
# Containers that take their elements one by one as arguments (``nn.Sequential(a, b)``).
_VARIADIC_CONTAINERS = frozenset({"Sequential"})
_OPTIONAL = frozenset({"Optional", "typing.Optional"})
_SEQUENCE_ANNOTATIONS = frozenset(
    {"list", "List", "tuple", "Tuple", "Sequence", "Iterable", "set", "Set", "ModuleList",
     "typing.List", "typing.Sequence", "typing.Iterable", "collections.abc.Sequence",
     "collections.abc.Iterable", "nn.ModuleList", "torch.nn.ModuleList", "deque"}
)  # fmt: skip
_MAPPING_ANNOTATIONS = frozenset(
    {"dict", "Dict", "Mapping", "MutableMapping", "typing.Dict", "typing.Mapping",
     "collections.abc.Mapping", "ModuleDict", "nn.ModuleDict", "torch.nn.ModuleDict"}
)  # fmt: skip
# Names that never name a class of the tree in an annotation.
_PLAIN_ANNOTATIONS = frozenset(
    {"int", "float", "bool", "str", "bytes", "None", "Any", "object", "typing.Any", "Tensor",
     "torch.Tensor", "Callable", "typing.Callable", "type", "Type"}
)  # fmt: skip
# Methods of containers that give one of their elements, or all of them.
_ELEMENT_METHODS = frozenset({"get", "pop", "setdefault", "popitem", "__getitem__"})
_ELEMENTS_METHODS = frozenset({"values", "copy"})
# Calls that return (a binding of) their first argument, a callable.
_PARTIAL = frozenset({"functools.partial", "partial", "types.MethodType", "MethodType"})
_CAST = frozenset({"typing.cast", "cast"})


def union(*types: TypeExpr | None) -> TypeExpr | None:
    """One type expression for any of ``types`` (None ones left out; flattened; in order)."""
    found: list[TypeExpr] = []
    for each in types:
        if each is None:
            continue
        for part in each[1:] if each[0] == "union" else (each,):
            if part not in found:
                found.append(part)
    if not found:
        return None
    return found[0] if len(found) == 1 else ("union", *found)


def box(elements: TypeExpr | None) -> TypeExpr | None:
    return None if elements is None else ("box", elements)


def items(container: TypeExpr | None) -> TypeExpr | None:
    """The elements of ``container``, simplified where the container is written here."""
    if container is None:
        return None
    if container[0] == "box":
        return container[1]  # type: ignore[no-any-return]
    if container[0] == "union":
        return union(*(items(part) for part in container[1:]))
    return ("items", container)


class Receivers(Placement):
    """Type expressions of the expressions of the scope being walked."""

    # Class qualname -> attribute -> what ``self.<attribute>`` is given anywhere in the class.
    attribute_values: dict[str, dict[str, TypeExpr]]
    functions: dict[str, FunctionFacts]  # the file's functions walked so far
    # Function qualname -> the module-level name it registers its argument into.
    registrars: dict[str, str]
    module_names: set[str]  # names assigned at module level
    method_names: set[str]  # names of the methods the file's classes define
    # The scope being walked and its loop variables that run over a literal list of
    # names (``for name in ["step", "zero_grad"]``), with those names.
    _name_loops: tuple[object, dict[str, tuple[str, ...]]] | None = None

    def callee_of(self, func: ast.expr) -> tuple | None:
        """An unresolved reference to the function ``func`` names, if it may be ours."""
        qualified = self.qualified_name(func)
        if qualified is not None:
            if qualified.partition(".")[0] in EXTERNAL_ROOTS:
                return None
            return ("dotted", qualified)
        scope = self.scope
        if isinstance(func, ast.Name):
            name = func.id
            if name in BUILTIN_NAMES and name not in self.module_defs:
                return None
            if name == scope.self_name:
                # self(...): the object's own __call__ (cls(...) in a classmethod builds one).
                return ("self", "__call__") if scope.facts.kind == "method" else None
            if name in scope.env and name not in self.module_defs:
                # A local variable holding a callable: what it was given, when known.
                held = scope.types.get(name)
                return ("value", held) if held is not None else None
            return ("name", name)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id == scope.self_name:
                return ("self", func.attr)
            if func.value.id in self.module_defs:
                return ("name", f"{func.value.id}.{func.attr}")  # Class.static_or_classmethod
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Attribute)
            and isinstance(func.value.value, ast.Name)
            and func.value.value.id == scope.self_name
        ):
            return ("attr", func.value.attr, func.attr)
        if isinstance(func, ast.Attribute):
            receiver = self.type_of(func.value)
            if receiver is not None:
                return ("on", receiver, func.attr)
            if func.attr not in COMMON_METHODS and not self._is_data(func.value):
                return ("method", func.attr)  # an object of unknown class: by name
            return None
        held = self.type_of(func)
        return ("value", held) if held is not None else None

    def _is_data(self, node: ast.expr) -> bool:
        """True for a receiver known to be data (a tensor, a list, a number), whose
        methods are not the tree's."""
        value = self.value(node)
        return bool(value.tags & {TENSOR, PYSEQ, SCALAR, INDEX, BOOL, STREAM, EVENT})

    def type_of(self, node: ast.expr) -> TypeExpr | None:
        """What ``node`` is, as far as the project phase may tell (see the module doc)."""
        scope = self.scope
        if isinstance(node, ast.Name):
            name = node.id
            held = scope.types.get(name)
            if held is not None:
                return held
            if scope.facts.kind == "class" and f"{scope.facts.qualname}.{name}" in self.functions:
                return ("func", ("self", name))  # a method, named in its class's body
            if name in scope.env or name == scope.self_name:
                return None  # a local of unknown kind
            if scope is not self.module_scope and (
                name in self.module_scope.types or name in self.module_names
            ):
                return ("global", name)  # also a registry its decorators fill
            if name in self.module_defs or name in self.imports or name in scope.imports:
                callee = self.callee_of(node)
                return ("func", callee) if callee is not None else None
            return None
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id == scope.self_name:
                return ("attr", node.attr)
            callee = self.callee_of(node) if self.qualified_name(node) is not None else None
            if callee is not None:
                return ("func", callee)
            owner = self.type_of(node.value)
            # ``ops.multi_tensor_lion`` of ``ops = Builder().load()``: a member of what it is.
            return ("member", owner, node.attr) if owner is not None else None
        if isinstance(node, ast.Call):
            return self._call_type(node)
        if isinstance(node, ast.Subscript):
            return items(self.type_of(node.value))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return box(union(*(self.type_of(element) for element in node.elts)))
        if isinstance(node, ast.Dict):
            return box(union(*(self.type_of(value) for value in node.values)))
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return box(self.type_of(node.elt))
        if isinstance(node, ast.DictComp):
            return box(self.type_of(node.value))
        if isinstance(node, ast.IfExp):
            return union(self.type_of(node.body), self.type_of(node.orelse))
        if isinstance(node, ast.BoolOp):
            return union(*(self.type_of(value) for value in node.values))
        if isinstance(node, (ast.Await, ast.NamedExpr, ast.Starred)):
            return self.type_of(node.value)
        return None

    def _call_type(self, node: ast.Call) -> TypeExpr | None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        qualified = self.qualified_name(func) or name
        if qualified in _CAST and node.args:
            return annotation_type(node.args[0])
        if qualified in _PARTIAL and node.args:
            return self.type_of(node.args[0])
        if qualified == "getattr" and len(node.args) >= 2 and name not in self.module_defs:
            # ``getattr(ops, name)``, the name a literal or a loop over literal names.
            members = self.literal_names(node.args[1])
            return union(*(self._member_type(node.args[0], member) for member in members))
        if name in _CONTAINERS and (qualified == name or qualified.startswith("torch.")):
            if name in _VARIADIC_CONTAINERS:
                return box(union(*(self.type_of(argument) for argument in node.args)))
            return box(items(self.type_of(node.args[0]))) if node.args else None
        if isinstance(func, ast.Attribute) and (
            func.attr in _ELEMENT_METHODS or func.attr in _ELEMENTS_METHODS
        ):
            container = self.type_of(func.value)
            if container is not None and container[0] != "func":
                found = items(container)
                return box(found) if func.attr in _ELEMENTS_METHODS else found
        callee = self.callee_of(func)
        if callee is None:
            return None
        if callee[0] in ("name", "dotted") and callee[-1].rpartition(".")[2][:1].isupper():
            return ("exact", callee[1])  # Cls(...): an instance of the class
        return ("result", callee)

    def bind_type(self, target: ast.expr, source: TypeExpr | None) -> None:
        """Note what ``target`` is given (names and ``self`` attributes): every kind it is
        given in the function counts (where it is used, it may hold any of them)."""
        if source is None:
            return
        scope = self.scope
        if isinstance(target, ast.Name) and scope.facts.kind == "class":
            # ``_TABLE = {Op: _run_op}`` in a class body: what ``self._TABLE`` holds.
            attributes = self.attribute_values.setdefault(scope.facts.qualname, {})
            attributes[target.id] = union(attributes.get(target.id), source) or source
        elif isinstance(target, ast.Name):
            scope.types[target.id] = union(scope.types.get(target.id), source) or source
        elif (
            isinstance(target, ast.Attribute)
            and isinstance(target.value, ast.Name)
            and target.value.id == scope.self_name
            and scope.facts.class_name is not None
        ):
            attributes = self.attribute_values.setdefault(scope.facts.class_name, {})
            attributes[target.attr] = union(attributes.get(target.attr), source) or source

        elif isinstance(target, ast.Subscript):  # REG[key] = fn, self.table[key] = obj
            self.bind_type(target.value, box(source))
        elif isinstance(target, ast.Starred):
            self.bind_type(target.value, source)
        elif isinstance(target, (ast.Tuple, ast.List)):
            # ``self.sampler, self.verifier = state.make_samplers()``: each target is one
            # of the elements (which one is not kept); a starred one, a list of them.
            for element in target.elts:
                held = source if isinstance(element, ast.Starred) else items(source)
                self.bind_type(element, held)

    def literal_names(self, node: ast.expr) -> tuple[str, ...]:
        """The strings ``node`` may be here: a literal, or a loop variable over literals."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return (node.value,)
        loops = self._name_loops
        if isinstance(node, ast.Name) and loops is not None and loops[0] is self.scope:
            return loops[1].get(node.id, ())
        return ()

    def _member_type(self, owner: ast.expr, member: str) -> TypeExpr | None:
        """What ``getattr(owner, member)`` is: a method of the class being walked, a
        function of a module, a member of a value of known type."""
        if isinstance(owner, ast.Name) and owner.id == self.scope.self_name:
            return ("func", ("self", member)) if member in self.method_names else ("attr", member)
        return self.type_of(ast.Attribute(value=owner, attr=member, ctx=ast.Load()))

    def _note_name_loop(self, target: ast.expr, iterable: ast.expr) -> None:
        """``for name in ["a", "b"]`` (or over a local list of literal names): ``name`` is
        one of them in the loop (``setattr(self, name, ...)`` binds each)."""
        if isinstance(iterable, ast.Name):
            iterable = self.scope.assigned.get(iterable.id, iterable)
        if not isinstance(target, ast.Name) or not isinstance(
            iterable, (ast.List, ast.Tuple, ast.Set)
        ):
            return
        names = tuple(
            element.value
            for element in iterable.elts
            if isinstance(element, ast.Constant) and isinstance(element.value, str)
        )
        if not names or len(names) != len(iterable.elts):
            return
        if self._name_loops is None or self._name_loops[0] is not self.scope:
            self._name_loops = (self.scope, {})
        self._name_loops[1][target.id] = names

    def bind_named_attributes(self, call: ast.Call) -> None:
        """``setattr(self, name, fn)``, the name a literal or a loop variable over literal
        names: ``self.<name>`` holds ``fn`` for each of them. Where ``fn`` is one of several
        members picked by the same name (``fn = getattr(ops, name)``), each attribute
        holds the member of its own name."""
        if len(call.args) != 3:
            return
        owner, named, value = call.args
        names = self.literal_names(named)
        held = self.type_of(value)
        if not names or held is None:
            return
        if not (isinstance(owner, ast.Name) and owner.id == self.scope.self_name):
            return
        parts = held[1:] if held[0] == "union" else (held,)
        for member in names:
            own = [part for part in parts if _member_name(part) == member]
            target = ast.Attribute(value=owner, attr=member, ctx=ast.Store())
            self.bind_type(target, union(*own) if own else held)

    def bind_element_types(self, target: ast.expr, iterable: ast.expr) -> None:
        """``for p in self.procs``, ``for i, p in enumerate(procs)``, ``for k, v in
        d.items()``: the loop variable is an element of the container."""
        self._note_name_loop(target, iterable)
        if isinstance(iterable, ast.Call) and isinstance(iterable.func, (ast.Name, ast.Attribute)):
            function = iterable.func
            called = function.id if isinstance(function, ast.Name) else function.attr
            pairs = isinstance(target, ast.Tuple) and len(target.elts) == 2
            if called == "enumerate" and pairs and iterable.args:
                self.bind_type(target.elts[1], items(self.type_of(iterable.args[0])))  # type: ignore[attr-defined]
                return
            if called == "items" and pairs and isinstance(function, ast.Attribute):
                self.bind_type(target.elts[1], items(self.type_of(function.value)))  # type: ignore[attr-defined]
                return
        self.bind_type(target, items(self.type_of(iterable)))

    def grow_container(self, call: ast.Call) -> None:
        """``self.procs.append(P())``, ``procs.extend(...)``: the container holds more;
        ``setattr(self, name, fn)``: the attribute holds ``fn``."""
        func = call.func
        if isinstance(func, ast.Name) and func.id == "setattr":
            self.bind_named_attributes(call)
            return
        if not (isinstance(func, ast.Attribute) and call.args):
            return
        if func.attr in ("append", "add", "appendleft"):
            self.bind_type(func.value, box(self.type_of(call.args[-1])))
        elif func.attr == "extend":
            self.bind_type(func.value, self.type_of(call.args[0]))
        elif func.attr == "insert" and len(call.args) == 2:
            self.bind_type(func.value, box(self.type_of(call.args[1])))

    def reference_arguments(self, call: ast.Call) -> list[tuple]:
        """Callees of the functions ``call`` is given as arguments, not called here
        (``partial(self.m, x)``, ``run(model, self._compute_loss)``, a hook to register):
        the receiving code calls them."""
        found = []
        for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
            if isinstance(argument, ast.Starred):
                continue
            held = self.type_of(argument)
            for part in held[1:] if held is not None and held[0] == "union" else (held,):
                if part is not None and part[0] == "attr" and part[1] in self.method_names:
                    callee = ("self", part[1])  # self.method, bound
                elif part is not None and part[0] == "attr" and self._holds_function(part[1]):
                    callee = ("value", part)  # self.op = ops.kernel: the kernel
                elif part is not None and part[0] == "func":
                    callee = part[1]
                else:
                    continue
                last = callee[-1] if isinstance(callee[-1], str) else ""
                if not last.rpartition(".")[2][:1].isupper():  # a class is no callback
                    found.append(callee)
        return found

    def _holds_function(self, attribute: str) -> bool:
        """True when the class being walked gives ``self.<attribute>`` a function or a
        member of another value (a kernel of a loaded module), not only objects."""
        owner = self.scope.facts.class_name
        held = self.attribute_values.get(owner, {}).get(attribute) if owner else None
        parts = held[1:] if held is not None and held[0] == "union" else (held,)
        return any(part is not None and part[0] in ("func", "member") for part in parts)

    def registers_into(self, target: ast.expr, value: ast.expr) -> str | None:
        """``REGISTRY[name] = fn`` in a function, ``REGISTRY`` a module-level name and
        ``fn`` a parameter of the function: the module-level name it registers into
        (a registration decorator)."""
        scope = self.scope
        if (
            scope is not self.module_scope
            and isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id not in scope.env
            and (
                target.value.id in self.module_scope.env
                or target.value.id in self.module_scope.types
            )
            and isinstance(value, ast.Name)
            and value.id in scope.facts.params
        ):
            return target.value.id
        return None


def _member_name(part: TypeExpr) -> str | None:
    """The name a member type names its member by (``getattr(ops, "lamb")`` -> ``lamb``)."""
    if part[0] == "member":
        return part[2]  # type: ignore[no-any-return]
    if part[0] == "func" and isinstance(part[1][-1], str):
        return part[1][-1].rpartition(".")[2]  # type: ignore[no-any-return]
    return part[1] if part[0] == "attr" else None


def annotation_type(node: ast.expr | None) -> TypeExpr | None:
    """What an annotation says a value is: ``Base`` -> an instance of it or a subclass,
    ``list[Proc]`` / ``dict[str, Proc]`` -> a container of such, ``Optional[X]`` -> X."""
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            parsed = parse(node.value, mode="eval")
        except SyntaxError:
            return None
        assert isinstance(parsed, ast.Expression)
        return annotation_type(parsed.body)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # X | None
        return union(annotation_type(node.left), annotation_type(node.right))
    if isinstance(node, ast.Subscript):
        written = dotted_name(node.value)
        if written in _OPTIONAL:
            return annotation_type(node.slice)
        if written in ("Union", "typing.Union") and isinstance(node.slice, ast.Tuple):
            return union(*(annotation_type(part) for part in node.slice.elts))
        if written in _SEQUENCE_ANNOTATIONS:
            inner = (
                node.slice.elts[0]
                if isinstance(node.slice, ast.Tuple) and node.slice.elts
                else node.slice
            )
            return box(annotation_type(inner))
        if written in _MAPPING_ANNOTATIONS and isinstance(node.slice, ast.Tuple):
            return box(annotation_type(node.slice.elts[-1]))
        return None
    written = dotted_name(node)
    if written is None or written in _PLAIN_ANNOTATIONS or written in BUILTIN_NAMES:
        return None
    if written.partition(".")[0] in EXTERNAL_ROOTS:
        return None
    return ("sub", written)
