"""The first pass of the project phase: what names mean across the linted tree.

Which file defines the module, function or class a dotted name refers to (through
imports and re-exports), the classes of the tree in method resolution order, the
kind of a class (an ``nn.Module``, an autograd ``Function``, a plain class), the
classes its ``__init__`` assigns to attributes, and the fields a class declares as
host data.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from syncguard.facts import MODULE_SCOPE, ClassFacts, FileFacts, FunctionFacts
from syncguard.values import FIELD_PREFIX, RESULT_PREFIX, Place, Value

FunctionId = tuple[str, str]  # (path, qualname within the module)
ClassId = tuple[str, str]

_NN_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "nn.Module"})
_AUTOGRAD_FUNCTION = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
# A call of a method on an object of unknown class (``model.prepare_inputs(...)``, the
# object a parameter) reaches the methods of that name when at most this many class
# hierarchies of the tree define one; more, and the name says too little to pick.
BY_NAME_LIMIT = 2
_PLAIN_BASES = frozenset(
    {"object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol", "typing.Protocol",
     "NamedTuple", "typing.NamedTuple", "TypedDict", "typing.TypedDict", "Enum", "enum.Enum",
     "IntEnum", "enum.IntEnum", "Exception", "ValueError", "RuntimeError", "dict", "list",
     "tuple", "str", "int", "float", "set"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class SourceFile:
    """A linted file: its display path, its import root and its facts.

    ``targets``, when an earlier run resolved this file's calls against files with
    the same interfaces, gives the callee of each call of each function (by
    qualname); the facts then hold only calls that resolve."""

    path: str
    root: str
    facts: FileFacts
    targets: Mapping[str, Sequence[tuple[FunctionId, ...]]] | None = None
    # Likewise known from such a run with the same settings: the functions that
    # Hotness.declared_root_reason finds a reason for, with the reason.
    roots: Mapping[str, str] | None = None


def _namespace_prefixes(files: Sequence[SourceFile]) -> dict[str, str]:
    """Top-level package of the tree -> the prefix its imports give it, when the tree
    imports it mostly below a package that is not in the tree (``outer.core.x`` for
    ``core.x``; relative imports name it ``core.x``, a plugin may import ``other.engine``)."""
    tops = {file.facts.module.partition(".")[0] for file in files}
    seen: dict[str, dict[str, int]] = {}
    own: dict[str, int] = {}  # imports naming a top-level package by its own name
    for file in files:
        for target in file.facts.imports.values():
            head, _, rest = target.partition(".")
            top = rest.partition(".")[0]
            if head in tops:
                own[head] = own.get(head, 0) + 1
            elif rest and top in tops:
                counts = seen.setdefault(top, {})
                counts[head] = counts.get(head, 0) + 1
    found = {}
    for top, counts in seen.items():
        prefix = max(sorted(counts), key=counts.__getitem__)
        if counts[prefix] > own.get(top, 0):  # mostly imported below that prefix
            found[top] = prefix
    return found


def _bases(facts: ClassFacts) -> list[str]:
    """The class's bases as names: a generic one without its parameters
    (``Builder[Metadata]`` derives from ``Builder``, ``Generic[T]`` is ``Generic``)."""
    return [base.partition("[")[0] for base in facts.bases]


def _prefixed(module: str, prefixes: dict[str, str]) -> str:
    prefix = prefixes.get(module.partition(".")[0])
    return f"{prefix}.{module}" if prefix else module


class TreeCallFilter:
    """Keeps the calls that may resolve to a function of the linted tree.

    A dotted callee (``pkg.mod.f``, from an import) resolves only through a
    module of the tree named by one of its prefixes, as in the project phase;
    most name the standard library or a third-party package. Dropping those
    changes no finding and spares decoding and resolving them.
    """

    def __init__(self, modules: set[str]) -> None:
        self.modules = modules
        self.heads = {module.partition(".")[0] for module in modules}
        self.known: dict[str, bool] = {}

    def __call__(self, callee: tuple) -> bool:
        if callee[0] != "dotted":
            return True
        dotted = callee[1]
        found = self.known.get(dotted)
        if found is None:
            parts = dotted.split(".")
            # A namespace package's files (``outer/core/``, no ``outer/__init__.py``)
            # are named ``core.x`` here and imported as ``outer.core.x``.
            found = self._in_tree(parts) or self._in_tree(parts[1:])
            self.known[dotted] = found
        return found

    def _in_tree(self, parts: list[str]) -> bool:
        return (
            bool(parts)
            and parts[0] in self.heads
            and any(".".join(parts[:cut]) in self.modules for cut in range(1, len(parts)))
        )


class Bindings:
    """The files of the tree by path and module, and what their names resolve to."""

    def __init__(self, files: Sequence[SourceFile]) -> None:
        self.files = files
        # Memos for one project run: class hierarchies and dotted names are asked for
        # again and again while resolving calls and propagating hotness.
        self._mro_memo: dict[ClassId, tuple[list[ClassId], list[str]]] = {}
        self._dotted_memo: dict[tuple[str, str], tuple[str, str] | None] = {}
        self._bases_memo: dict[str, list[tuple[str, str]]] | None = None
        self._field_memo: dict[tuple[str, str], bool] = {}
        self._ancestors_memo: dict[ClassId, frozenset[str]] = {}
        self._children_memo: dict[ClassId, list[ClassId]] | None = None
        self._subclasses_memo: dict[ClassId, list[ClassId]] = {}
        self._by_name_memo: dict[str, list[FunctionId]] | None = None
        self._values_memo: dict[tuple[str, str | None, tuple], frozenset[tuple]] = {}
        self._registered_memo: dict[tuple[str, str], frozenset[tuple]] | None = None
        self._class_names_memo: dict[str, list[ClassId]] | None = None
        self.by_path = {file.path: file for file in files}
        # Each file's module as the tree imports it: a package below a folder without an
        # ``__init__.py`` (a namespace package, ``outer/core/``) is named ``core`` by its
        # files but imported as ``outer.core``; the imports say which prefix it has.
        prefixes = _namespace_prefixes(files)
        self.module_names = {file.path: _prefixed(file.facts.module, prefixes) for file in files}
        self.modules: dict[str, list[SourceFile]] = {}
        for file in sorted(files, key=lambda f: f.path):
            self.modules.setdefault(file.facts.module, []).append(file)
            named = self.module_names[file.path]
            if named != file.facts.module:
                self.modules.setdefault(named, []).append(file)
        self.functions: dict[FunctionId, FunctionFacts] = {
            (file.path, qualname): function
            for file in files
            for qualname, function in file.facts.functions.items()
        }

    def qualified(self, fid: FunctionId) -> str:
        """The function's fully qualified name (``package.module.Class.method``)."""
        module = self.module_names[fid[0]]
        return module if fid[1] == MODULE_SCOPE else f"{module}.{fid[1]}"

    def _module_file(self, module: str, root: str) -> SourceFile | None:
        candidates = self.modules.get(module)
        if not candidates:
            return None
        for candidate in candidates:
            if candidate.root == root:
                return candidate
        return candidates[0]

    def resolve_dotted(self, dotted: str, root: str, depth: int = 0) -> tuple[str, str] | None:
        """(path, qualname) of the function or class ``dotted`` names, if in the tree."""
        if depth == 0:
            key = (dotted, root)
            if key not in self._dotted_memo:
                self._dotted_memo[key] = self.resolve_dotted(dotted, root, 1)
            return self._dotted_memo[key]
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            file = self._module_file(".".join(parts[:cut]), root)
            if file is None:
                continue
            rest = ".".join(parts[cut:])
            facts = file.facts
            if rest in facts.functions or rest in facts.classes:
                return (file.path, rest)
            head, _, tail = rest.partition(".")
            reexport = facts.imports.get(head)
            if reexport is not None and depth < 8:
                return self.resolve_dotted(
                    f"{reexport}.{tail}" if tail else reexport, file.root, depth + 1
                )
            return None
        return None

    def resolve_name(self, fid: FunctionId, name: str) -> tuple[str, str] | None:
        """What ``name`` means inside function ``fid``: a nested function of an enclosing
        one, a function or class of its module, or what an import of the module names."""
        path, qualname = fid
        file = self.by_path[path]
        facts = file.facts
        parts = qualname.split(".") if qualname != MODULE_SCOPE else []
        while parts:  # enclosing function scopes (nested defs), innermost first
            prefix = ".".join(parts)
            candidate = f"{prefix}.{name}"
            if candidate in facts.functions and prefix in facts.functions:
                return (path, candidate)
            parts.pop()
        if name in facts.functions or name in facts.classes:
            return (path, name)
        imported = facts.imports.get(name)
        if imported:
            return self.resolve_dotted(imported, file.root)
        return None

    def resolve_class(self, path: str, name: str) -> ClassId | None:
        """The class of the tree that ``name`` (as written in the file at ``path``) means."""
        file = self.by_path[path]
        if name in file.facts.classes:
            return (path, name)
        head, _, tail = name.partition(".")
        imported = file.facts.imports.get(head)
        if imported is not None:
            found = self.resolve_dotted(f"{imported}.{tail}" if tail else imported, file.root)
        else:
            found = self.resolve_dotted(name, file.root) if "." in name else None
        if found is not None and found[1] in self.by_path[found[0]].facts.classes:
            return found
        return None

    def on_host(self, path: str, value: Value) -> bool:
        """True for a value the per-file phase could not place but the tree can: a field
        of a class from another module that declares it host data (``# CPU tensor``), or
        what a function of another module returns when it returns host data."""
        if value.place is Place.HOST:
            return True
        for tag in value.tags:
            if tag.startswith((FIELD_PREFIX, RESULT_PREFIX)):
                return self._placed(self.by_path[path].root, tag)
        return False

    def _sources_placed(self, function: FunctionId, sources: Sequence[str]) -> bool:
        """True when every function in ``sources`` (named as in ``function``'s file)
        returns host data."""
        below = self.by_path[function[0]].root
        return all(self._placed(below, f"{RESULT_PREFIX}{source}") for source in sources)

    def _placed(self, root: str, tag: str) -> bool:
        key = (root, tag)
        found = self._field_memo.get(key)
        if found is None:
            self._field_memo[key] = False  # while deciding: a cycle of results proves nothing
            found = self._field_memo[key] = self._host_field(root, tag)
        return found

    def _host_field(self, root: str, tag: str) -> bool:
        if tag.startswith(RESULT_PREFIX):  # a call of a function that returns host data
            name, _, part = tag[len(RESULT_PREFIX) :].partition("#")
            function = self.resolve_dotted(name, root)
            facts = self.functions.get(function) if function is not None else None
            if facts is None or function is None:
                return False
            if part:  # ``a, b = f()``: that part of what it returns
                index = int(part)
                parts = facts.part_sources
                if index >= len(parts) or parts[index] is None:
                    return facts.host_result and self._sources_placed(
                        function, facts.result_sources
                    )
                return self._sources_placed(function, parts[index] or ())
            return facts.host_result and self._sources_placed(function, facts.result_sources)
        class_name, _, attribute = tag[len(FIELD_PREFIX) :].rpartition(".")
        found = self.resolve_dotted(class_name, root)
        if found is None or found[1] not in self.by_path[found[0]].facts.classes:
            return False
        return any(attribute in self.class_facts(cid).host_fields for cid in self.mro(found)[0])

    def class_facts(self, cid: ClassId) -> ClassFacts:
        return self.by_path[cid[0]].facts.classes[cid[1]]

    def mro(self, cid: ClassId) -> tuple[list[ClassId], list[str]]:
        """In-tree classes in method resolution order, and the external bases met."""
        found = self._mro_memo.get(cid)
        if found is None:
            found = self._mro_memo[cid] = self._compute_mro(cid)
        return found

    def _compute_mro(self, cid: ClassId) -> tuple[list[ClassId], list[str]]:
        order: list[ClassId] = []
        external: list[str] = []
        stack = [cid]
        while stack:
            current = stack.pop(0)
            if current in order:
                continue
            order.append(current)
            for base in _bases(self.class_facts(current)):
                resolved = self.resolve_class(current[0], base)
                if resolved is None:
                    external.append(base)
                else:
                    stack.append(resolved)
        return order, external

    def method(self, cid: ClassId, name: str) -> FunctionId | None:
        """The method ``name`` of class ``cid``, its own or inherited from the tree."""
        for path, qualname in self.mro(cid)[0]:
            candidate = f"{qualname}.{name}"
            if candidate in self.by_path[path].facts.functions:
                return (path, candidate)
        return None

    def attribute_type(self, cid: ClassId, attribute: str) -> str | None:
        """The class (as written) that ``__init__`` of ``cid`` or a base assigns to
        ``self.<attribute>``."""
        for current in self.mro(cid)[0]:
            type_name = self.class_facts(current).attribute_types.get(attribute)
            if type_name is not None:
                return type_name
        return None

    def ancestors(self, cid: ClassId) -> frozenset[str]:
        """The qualified names of ``cid``, of its bases in the tree and of the bases outside
        it (as imported: ``transformers.Trainer``)."""
        found = self._ancestors_memo.get(cid)
        if found is None:
            order, external = self.mro(cid)
            found = frozenset((*(self.qualified_class(member) for member in order), *external))
            self._ancestors_memo[cid] = found
        return found

    def qualified_class(self, cid: ClassId) -> str:
        return f"{self.module_names[cid[0]]}.{cid[1]}"

    def class_kind(self, cid: ClassId) -> str | None:
        """``module`` for nn.Module subclasses, ``unknown`` when a base cannot be resolved
        (it may be a module), ``autograd`` for Functions, None for plain classes."""
        external = self.mro(cid)[1]
        if any(base in _AUTOGRAD_FUNCTION for base in external):
            return "autograd"
        if any(base in _NN_MODULE for base in external):
            return "module"
        if any(base not in _PLAIN_BASES for base in external):
            return "unknown"
        return None

    def subclassed(self, cid: ClassId) -> bool:
        """True when a class of the tree derives from ``cid`` (directly is enough)."""
        if self._bases_memo is None:  # base name as written, last part -> (file, base)
            self._bases_memo = {}
            for file in self.files:
                for facts in file.facts.classes.values():
                    for base in _bases(facts):
                        name = base.rpartition(".")[2]
                        self._bases_memo.setdefault(name, []).append((file.path, base))
        written = self._bases_memo.get(cid[1].rpartition(".")[2], ())
        return any(self.resolve_class(path, base) == cid for path, base in written)

    # ------------------------------------------------------- class hierarchy below

    def _children(self) -> dict[ClassId, list[ClassId]]:
        """Class -> the classes of the tree that name it as a direct base."""
        if self._children_memo is None:
            self._children_memo = {}
            for file in sorted(self.files, key=lambda f: f.path):
                for qualname, facts in file.facts.classes.items():
                    for base in _bases(facts):
                        parent = self.resolve_class(file.path, base)
                        if parent is not None and parent != (file.path, qualname):
                            self._children_memo.setdefault(parent, []).append((file.path, qualname))
        return self._children_memo

    def subclasses(self, cid: ClassId) -> list[ClassId]:
        """Every class of the tree that derives from ``cid``, nearest first."""
        found = self._subclasses_memo.get(cid)
        if found is None:
            found, seen, queue = [], {cid}, deque([cid])
            children = self._children()
            while queue:
                for child in children.get(queue.popleft(), ()):
                    if child not in seen:
                        seen.add(child)
                        found.append(child)
                        queue.append(child)
            self._subclasses_memo[cid] = found
        return found

    def dispatch(self, cid: ClassId, name: str, exact: bool) -> list[FunctionId]:
        """The methods a call of ``name`` on an object of class ``cid`` may run: the one
        it has (its own or inherited), and, unless the class is known exactly, every
        override in the classes below it."""
        found: list[FunctionId] = []
        own = self.method(cid, name)
        if own is not None:
            found.append(own)
        if not exact:
            for child in self.subclasses(cid):
                candidate = (child[0], f"{child[1]}.{name}")
                if candidate in self.functions and candidate not in found:
                    found.append(candidate)
        return found

    def call_methods(self, cid: ClassId, exact: bool) -> list[FunctionId]:
        """What calling an object of class ``cid`` runs: ``__call__``, or ``forward`` for a
        module (``nn.Module.__call__`` runs it)."""
        found = self.dispatch(cid, "__call__", exact)
        if not found and self.class_kind(cid) in ("module", "unknown"):
            found = self.dispatch(cid, "forward", exact)
        return found

    def by_name(self, name: str) -> list[FunctionId]:
        """The methods named ``name`` when few class hierarchies of the tree define one
        (at most :data:`BY_NAME_LIMIT`): what a call of ``name`` on an object of unknown
        class may run. Methods that override one of another class of the tree count
        with it."""
        if self._by_name_memo is None:
            self._by_name_memo = {}
            for fid, function in self.functions.items():
                if function.class_name is not None and function.kind == "method":
                    method = function.qualname.rpartition(".")[2]
                    self._by_name_memo.setdefault(method, []).append(fid)
        found = self._by_name_memo.get(name, [])
        if not found or name.startswith("__"):
            return []
        families = 0
        for fid in found:
            cid = (fid[0], self.functions[fid].class_name or "")
            inherited = any(self.method(base, name) for base in self.mro(cid)[0][1:])
            families += not inherited
            if families > BY_NAME_LIMIT:
                return []
        return found

    # ------------------------------------------------------ values of type expressions

    def values(self, path: str, context: str | None, expr: tuple) -> frozenset[tuple]:
        """What the type expression ``expr`` (see :mod:`syncguard.receivers`), written in
        the file at ``path`` inside class or function ``context``, may hold: tokens
        ``("instance", class, exact)``, ``("function", fid)``, ``("class", class)`` and
        ``("box", tokens)`` for containers. Cycles of expressions resolve to nothing."""
        key = (path, context, expr)
        found = self._values_memo.get(key)
        if found is None:
            self._values_memo[key] = frozenset()  # while resolving: a cycle adds nothing
            found = self._values_memo[key] = self._compute_values(path, context, expr)
        return found

    def _compute_values(self, path: str, context: str | None, expr: tuple) -> frozenset[tuple]:
        kind = expr[0]
        if kind == "union":
            return frozenset().union(*(self.values(path, context, part) for part in expr[1:]))
        if kind in ("exact", "sub"):
            cid = self.resolve_class(path, expr[1])
            found_classes = [cid] if cid is not None else self.provided_classes(path, expr[1])
            return frozenset(("instance", each, kind == "exact") for each in found_classes)
        if kind == "member":
            return self._member_values(path, context, expr[1], expr[2])
        if kind == "box":
            inner = self.values(path, context, expr[1])
            return frozenset({("box", inner)}) if inner else frozenset()
        if kind == "items":
            return frozenset().union(
                *(token[1] for token in self.values(path, context, expr[1]) if token[0] == "box")
            )
        if kind == "global":
            held = self.by_path[path].facts.globals.get(expr[1])
            held_values = self.values(path, None, held) if held is not None else frozenset()
            registered = self._registered().get((path, expr[1]))
            return held_values | {("box", registered)} if registered else held_values
        if kind == "attr":
            return self._attribute_values(path, context, expr[1])
        if kind == "func":
            return self._defined(path, context, expr[1])
        if kind == "result":
            found: set[tuple] = set()
            for token in self._callable(path, context, expr[1]):
                if token[0] == "class":
                    found.add(("instance", token[1], True))
                elif token[0] == "function":
                    fid = token[1]
                    returns = self.functions[fid].returns
                    if returns:
                        found |= self.values(fid[0], fid[1], returns)
            return frozenset(found)
        return frozenset()

    def provided_classes(self, path: str, name: str) -> list[ClassId]:
        """The classes ``name`` (as written in the file at ``path``) may mean when it names a
        package of the tree that does not define it: a package that fills its namespace at
        import time (plugins found by a loop over its modules, one per device) provides
        the classes of that name in its own modules, whichever one the loop picks (and in
        a top-level copy of the package in the tree)."""
        file = self.by_path[path]
        head, _, tail = name.partition(".")
        imported = file.facts.imports.get(head)
        dotted = f"{imported}.{tail}" if imported and tail else imported or name
        package, _, last = dotted.rpartition(".")
        provider = self._module_file(package, file.root) if package else None
        if provider is None or not provider.path.endswith("__init__.py"):
            return []
        facts = provider.facts
        if last in facts.classes or last in facts.functions or last in facts.imports:
            return []  # it does say what the name is: unresolved for another reason
        if self._class_names_memo is None:
            self._class_names_memo = {}
            for each in sorted(self.files, key=lambda f: f.path):
                for qualname in each.facts.classes:
                    self._class_names_memo.setdefault(qualname, []).append((each.path, qualname))
        # Its own modules, and those of a top-level package of the tree of the same name:
        # the copy a source checkout imports when the installed one is not there (a
        # package may pick which one it loads its plugins from at import time).
        below = (f"{package}.", f"{package.rpartition('.')[2]}.")
        return [
            cid
            for cid in self._class_names_memo.get(last, ())
            if self.module_names[cid[0]].startswith(below)
        ]

    def _member_values(
        self, path: str, context: str | None, owner: tuple, name: str
    ) -> frozenset[tuple]:
        """The methods attribute ``name`` of a value of ``owner`` names: a static method of
        a class the value is, or a bound one of an instance. (What an instance's attributes
        hold is left out: ``head.quant_method`` of a layer may be any of the quantisation
        methods its class is ever given, far more than the one this layer holds.)"""
        found: set[tuple] = set()
        for token in self.values(path, context, owner):
            if token[0] == "class" or (token[0] == "instance" and token[2]):
                methods = [self.method(token[1], name)]
            elif token[0] == "instance":
                methods = list(self.dispatch(token[1], name, exact=False))
            else:
                continue
            found.update(("function", fid) for fid in methods if fid is not None)
        return frozenset(found)

    def _registered(self) -> dict[tuple[str, str], frozenset[tuple]]:
        """(file, module-level name) -> the functions and classes that a registration
        decorator of that file puts into it (``@register("cuda")`` on a definition)."""
        if self._registered_memo is None:
            found: dict[tuple[str, str], set[tuple]] = {}
            for file in sorted(self.files, key=lambda f: f.path):
                facts = file.facts
                members = [
                    (qualname, f.decorators, "function") for qualname, f in facts.functions.items()
                ] + [(qualname, c.decorators, "class") for qualname, c in facts.classes.items()]
                for qualname, decorators, kind in members:
                    for decorator in decorators:
                        target = self.resolve_name((file.path, MODULE_SCOPE), decorator)
                        if target is None and "." in decorator:
                            target = self.resolve_dotted(decorator, file.root)
                        if target is None:
                            continue
                        registry = self.by_path[target[0]].facts.registrars.get(target[1])
                        if registry is not None:
                            token = (kind, (file.path, qualname))
                            found.setdefault((target[0], registry), set()).add(token)
            self._registered_memo = {key: frozenset(value) for key, value in found.items()}
        return self._registered_memo

    def _callable(self, path: str, context: str | None, callee: tuple) -> frozenset[tuple]:
        """What ``callee`` may call: a function or class it names, or the methods of
        the objects it is called on (``("on", receiver, method)``, ``("attr", a, m)``)."""
        if callee[0] in ("on", "attr"):
            receiver = callee[1] if callee[0] == "on" else ("attr", callee[1])
            return frozenset(
                ("function", fid)
                for token in self.values(path, context, receiver)
                if token[0] == "instance"
                for fid in self.dispatch(token[1], callee[-1], token[2])
            )
        return self._defined(path, context, callee)

    def _defined(self, path: str, context: str | None, callee: tuple) -> frozenset[tuple]:
        """The function or class ``callee`` (``("name", f)``, ``("dotted", d)``, ``("self",
        m)``) names, as tokens."""
        found: tuple[str, str] | None = None
        if callee[0] == "name":
            found = self.resolve_name((path, context or MODULE_SCOPE), callee[1])
        elif callee[0] == "dotted":
            found = self.resolve_dotted(callee[1], self.by_path[path].root)
        elif callee[0] == "self":
            owner = self._class_of(path, context)
            if owner is not None:
                found = self.method(owner, callee[1])
        if found is None:
            return frozenset()
        if found[1] in self.by_path[found[0]].facts.classes:
            return frozenset({("class", found)})
        return frozenset({("function", found)}) if found in self.functions else frozenset()

    def _class_of(self, path: str, context: str | None) -> ClassId | None:
        """The class ``context`` is, or whose method it is."""
        if context is None:
            return None
        facts = self.by_path[path].facts
        if context in facts.classes:
            return (path, context)
        return self.owner_class((path, context))

    def owner_class(self, fid: FunctionId) -> ClassId | None:
        """The class of method ``fid``, or of the method a nested function is defined in
        (whose ``self`` it sees)."""
        functions = self.by_path[fid[0]].facts.functions
        qualname = fid[1]
        while qualname:
            function = functions.get(qualname)
            if function is not None and function.class_name is not None:
                return (fid[0], function.class_name)
            qualname = qualname.rpartition(".")[0]
        return None

    def _attribute_values(self, path: str, context: str | None, attribute: str) -> frozenset[tuple]:
        """What ``self.<attribute>`` holds for the class of ``context``: what it, its bases
        and the classes below it give the attribute."""
        owner = self._class_of(path, context)
        if owner is None:
            return frozenset()
        found: set[tuple] = set()
        for cid in (*self.mro(owner)[0], *self.subclasses(owner)):
            facts = self.class_facts(cid)
            held = facts.attribute_values.get(attribute)
            if held is not None:
                found |= self.values(cid[0], cid[1], held)
            written = facts.attribute_types.get(attribute)
            if written is not None:
                target = self.resolve_class(cid[0], written)
                if target is not None:
                    found.add(("instance", target, True))
        return frozenset(found)
