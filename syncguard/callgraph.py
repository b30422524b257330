"""The second pass of the project phase: which function of the tree each call reaches.

A call's callee, as the per-file phase recorded it (``("name", f)``, ``("dotted",
"a.b.f")``, ``("self", method)``, ``("attr", attribute, method)``), is resolved with
the :class:`~syncguard.bindings.Bindings`. Constructions (``Cls(...)``) only say who
builds what: they reach ``__init__``, which is never hot. Calls in code that runs
once (lazy initialisation) are kept out of the graph.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence

from syncguard.bindings import Bindings, ClassId, FunctionId
from syncguard.facts import CallSite, Span
from syncguard.values import Value

Caller = tuple[FunctionId, CallSite]


class CallGraph:
    """Resolved calls: callee by (caller, call index), callers and constructions by callee."""

    def __init__(self, bindings: Bindings) -> None:
        self.bindings = bindings
        self.functions = bindings.functions
        # In (path, line) order, as a sort of every function by that key would give.
        self.ids: list[FunctionId] = []
        self.targets: dict[tuple[FunctionId, int], FunctionId] = {}
        self.callers: dict[FunctionId, list[Caller]] = {}
        # ``Cls.__init__`` -> where a ``Cls`` is built (``Cls(...)``): function and call.
        self.constructions: dict[FunctionId, list[Caller]] = {}
        functions, targets, callers = self.functions, self.targets, self.callers
        constructions = self.constructions
        for file in sorted(bindings.files, key=lambda f: f.path):
            known = file.targets
            in_order = sorted(file.facts.functions.items(), key=lambda item: item[1].line)
            for qualname, function in in_order:
                fid = (file.path, qualname)
                self.ids.append(fid)
                calls = function.calls
                if not calls:
                    continue
                resolved: Sequence[FunctionId | None] | None = (
                    known.get(qualname, ()) if known is not None else None
                )
                if resolved is None or len(resolved) != len(calls):
                    resolved = [self.resolve_call(fid, call) for call in calls]
                for index, (call, target) in enumerate(zip(calls, resolved, strict=True)):
                    if target is None or target not in functions:
                        continue
                    if constructs(call, target):
                        # ``Cls(...)``: cold (``__init__``), so it tells only who builds what.
                        targets[(fid, index)] = target
                        constructions.setdefault(target, []).append((fid, call))
                    elif not call.once:
                        targets[(fid, index)] = target
                        found = callers.get(target)
                        if found is None:
                            callers[target] = [(fid, call)]
                        else:
                            found.append((fid, call))

    def resolved_calls(self, path: str) -> dict[str, list[tuple[int, FunctionId]]]:
        """For each function of the file at ``path``: (index among its calls, callee) of
        each call that resolves in the tree."""
        found: dict[str, list[tuple[int, FunctionId]]] = {}
        for qualname, function in self.bindings.by_path[path].facts.functions.items():
            fid = (path, qualname)
            for index in range(len(function.calls)):
                target = self.targets.get((fid, index))
                if target is not None:
                    found.setdefault(qualname, []).append((index, target))
        return found

    def resolve_call(self, fid: FunctionId, call: CallSite) -> FunctionId | None:
        """The function of the tree that ``call`` in ``fid`` reaches, if known."""
        bindings = self.bindings
        kind = call.callee[0]
        function = self.functions[fid]
        path = fid[0]
        found: tuple[str, str] | None = None
        if kind == "name":
            found = bindings.resolve_name(fid, call.callee[1])
        elif kind == "dotted":
            found = bindings.resolve_dotted(call.callee[1], bindings.by_path[path].root)
        elif kind in ("self", "attr") and function.class_name is not None:
            owner: ClassId | None = (path, function.class_name)
            method = call.callee[-1]
            if kind == "attr" and owner is not None:
                type_name = bindings.attribute_type(owner, call.callee[1])
                owner = bindings.resolve_class(path, type_name) if type_name else None
            found = bindings.method(owner, method) if owner is not None else None
            if found is None and kind == "self":
                found = self._submodule_call(path, function.class_name, method)
        if found is not None and found[1] in bindings.by_path[found[0]].facts.classes:
            found = (found[0], f"{found[1]}.__init__")  # a construction: the class's own
        if found is None or found not in self.functions:
            return None  # unknown, external, or a class without an __init__ of its own
        return found

    def _submodule_call(self, path: str, class_name: str, attribute: str) -> FunctionId | None:
        """``self.visual(x)``, ``visual`` an attribute made in ``__init__`` from a class of the
        tree: its ``__call__``, or its ``forward`` when it may be an ``nn.Module``."""
        bindings = self.bindings
        type_name = bindings.attribute_type((path, class_name), attribute)
        owner = bindings.resolve_class(path, type_name) if type_name else None
        if owner is None:
            return None
        found = bindings.method(owner, "__call__")
        if found is None and bindings.class_kind(owner) in ("module", "unknown"):
            found = bindings.method(owner, "forward")
        return found

    def compiled_refs(self) -> set[FunctionId]:
        """The functions passed to ``torch.compile(f)`` somewhere in the tree."""
        found: set[FunctionId] = set()
        for file in self.bindings.files:
            for caller, reference in file.facts.compiled:
                fid = (file.path, caller)
                if fid not in self.functions:
                    continue
                target = self.resolve_call(
                    fid, CallSite(reference, Span(0, 0, 0, 0), (0, 0), (), (), False)
                )
                if target is not None:
                    found.add(target)
        return found

    def reachable(
        self, roots: Iterable[FunctionId], is_cold: Callable[[FunctionId], bool]
    ) -> set[FunctionId]:
        """``roots`` and every function their calls reach, cold ones aside."""
        seen = set(roots)
        queue = deque(seen)
        while queue:
            fid = queue.popleft()
            for index in range(len(self.functions[fid].calls)):
                target = self.targets.get((fid, index))
                if target is not None and target not in seen and not is_cold(target):
                    seen.add(target)
                    queue.append(target)
        return seen

    def argument(self, call: CallSite, target: FunctionId, name: str) -> Value | None:
        """What ``call`` passes for parameter ``name`` of ``target``, if it passes it."""
        function = self.functions[target]
        params = function.params
        if name not in params:
            return None
        bound = (
            function.kind == "classmethod"
            or (call.callee[0] in ("self", "attr") and function.kind == "method")
            or constructs(call, target)
        )
        index = params.index(name) - (1 if bound else 0)
        if 0 <= index < len(call.args):
            return call.args[index]
        for keyword, value in call.kwargs:
            if keyword == name:
                return value
        return None


def constructs(call: CallSite, target: FunctionId) -> bool:
    """True for ``Cls(...)`` resolved to ``Cls.__init__`` (not ``Base.__init__(self)``)."""
    return target[1].endswith(".__init__") and not call.callee[-1].endswith("__init__")
