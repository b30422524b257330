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

from syncguard.bindings import Bindings, FunctionId
from syncguard.facts import CallSite, Span
from syncguard.torch_api import COMMON_METHODS
from syncguard.values import KEY_PREFIX, Place, Value, tuple_part

Caller = tuple[FunctionId, CallSite]


class CallGraph:
    """Resolved calls: callees by (caller, call index), callers and constructions by callee."""

    def __init__(self, bindings: Bindings) -> None:
        self.bindings = bindings
        self.functions = bindings.functions
        # In (path, line) order, as a sort of every function by that key would give.
        self.ids: list[FunctionId] = []
        self.targets: dict[tuple[FunctionId, int], tuple[FunctionId, ...]] = {}
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
                resolved: Sequence[tuple[FunctionId, ...]] | None = (
                    known.get(qualname, ()) if known is not None else None
                )
                if resolved is None or len(resolved) != len(calls):
                    resolved = [self.resolve_call(fid, call) for call in calls]
                for index, (call, found) in enumerate(zip(calls, resolved, strict=True)):
                    found = tuple(target for target in found if target in functions)
                    if not found:
                        continue
                    targets[(fid, index)] = found
                    for target in found:
                        if constructs(call, target):
                            # ``Cls(...)``: cold (``__init__``): it tells only who builds what.
                            constructions.setdefault(target, []).append((fid, call))
                        elif not call.once:
                            callers.setdefault(target, []).append((fid, call))

    def callees(self, fid: FunctionId, index: int) -> tuple[FunctionId, ...]:
        """What call ``index`` of ``fid`` may reach (empty when nothing of the tree)."""
        return self.targets.get((fid, index), ())

    def resolved_calls(self, path: str) -> dict[str, list[tuple[int, tuple[FunctionId, ...]]]]:
        """For each function of the file at ``path``: (index among its calls, callees) of
        each call that resolves in the tree."""
        found: dict[str, list[tuple[int, tuple[FunctionId, ...]]]] = {}
        for qualname, function in self.bindings.by_path[path].facts.functions.items():
            fid = (path, qualname)
            for index in range(len(function.calls)):
                targets = self.targets.get((fid, index))
                if targets:
                    found.setdefault(qualname, []).append((index, targets))
        return found

    def resolve_call(self, fid: FunctionId, call: CallSite) -> tuple[FunctionId, ...]:
        """The functions of the tree that ``call`` in ``fid`` may reach."""
        bindings = self.bindings
        callee = call.callee
        kind = callee[0]
        path = fid[0]
        if kind in ("name", "dotted"):
            if kind == "name":
                found = bindings.resolve_name(fid, callee[1])
            else:
                found = bindings.resolve_dotted(callee[1], bindings.by_path[path].root)
            return self._known(found)
        if kind == "method":
            return tuple(bindings.by_name(callee[1]))
        if kind == "on":
            return self._on(bindings.values(path, fid[1], callee[1]), callee[2]) or self._named(
                callee[2]
            )
        if kind == "value":
            held = bindings.values(path, fid[1], callee[1])
            if call.indirect:  # a reference handed on: only the functions it holds run
                held = frozenset(token for token in held if token[0] == "function")
            return self._called(held)
        owner = bindings.owner_class(fid) if kind in ("self", "attr") else None
        if owner is None:
            return ()
        class_name = owner[1]
        method = callee[-1]
        if kind == "attr":
            type_name = bindings.attribute_type(owner, callee[1])
            typed = bindings.resolve_class(path, type_name) if type_name else None
            found = bindings.method(typed, method) if typed is not None else None
            held = bindings.values(path, fid[1], ("attr", callee[1]))
            resolved = _unique((*self._known(found), *self._on(held, method)))
            return resolved or self._named(method)
        targets = bindings.dispatch(owner, method, exact=False)  # overrides below count
        if not targets and method == "__call__":
            targets = bindings.call_methods(owner, exact=False)
        if not targets:
            # ``self.fwd(q, k)``: an attribute that holds a function or an object; the
            # class ``__init__`` makes it from, and whatever else it is given.
            made = self._submodule_call(path, class_name, method)
            given = self._called(bindings.values(path, fid[1], ("attr", method)))
            return _unique([made, *given] if made is not None else given)
        return tuple(targets)

    def _named(self, method: str) -> tuple[FunctionId, ...]:
        """A method of an object whose class the tree does not tell: by its name, when few
        class hierarchies define it (and it is no method of Python's types or tensors)."""
        return () if method in COMMON_METHODS else tuple(self.bindings.by_name(method))

    def _known(self, found: tuple[str, str] | None) -> tuple[FunctionId, ...]:
        """``found`` as callees: a class is built (its own ``__init__``)."""
        if found is not None and found[1] in self.bindings.by_path[found[0]].facts.classes:
            found = (found[0], f"{found[1]}.__init__")  # a construction: the class's own
        if found is None or found not in self.functions:
            return ()  # unknown, external, or a class without an __init__ of its own
        return (found,)

    def _on(self, tokens: frozenset[tuple], method: str) -> tuple[FunctionId, ...]:
        """What calling ``method`` on a value of ``tokens`` runs."""
        found: list[FunctionId] = []
        for token in sorted(tokens, key=_token_order):
            if token[0] == "instance":
                found += self.bindings.dispatch(token[1], method, token[2])
            elif token[0] == "class":  # Cls.create(...): a class or static method
                own = self.bindings.method(token[1], method)
                found += [own] if own is not None else []
        return _unique(found)

    def _called(self, tokens: frozenset[tuple]) -> tuple[FunctionId, ...]:
        """What calling a value of ``tokens`` runs: a function, an object's ``__call__``
        (a module's ``forward``), a class's ``__init__``, each element of a container of
        callables (``nn.Sequential``)."""
        found: list[FunctionId] = []
        for token in sorted(tokens, key=_token_order):
            if token[0] == "function":
                found.append(token[1])
            elif token[0] == "instance":
                found += self.bindings.call_methods(token[1], token[2])
            elif token[0] == "class":
                found += self._known(token[1])
            elif token[0] == "box":
                found += self._called(token[1])
        return _unique(found)

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
                found.update(
                    self.resolve_call(
                        fid, CallSite(reference, Span(0, 0, 0, 0), (0, 0), (), (), False)
                    )
                )
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
                for target in self.targets.get((fid, index), ()):
                    if target not in seen and not is_cold(target):
                        seen.add(target)
                        queue.append(target)
        return seen

    def argument(
        self, call: CallSite, target: FunctionId, name: str, caller: FunctionId | None = None
    ) -> Value | None:
        """What ``call`` passes for parameter ``name`` of ``target``, if it passes it; with
        the ``caller`` known, ``f(**kwargs)`` passes what the caller's own ``**kwargs``
        holds under that name."""
        function = self.functions[target]
        params = function.params
        if name not in params:
            return None
        bound = (
            function.kind == "classmethod"
            or (call.callee[0] in _BOUND_CALLS and function.kind == "method")
            or constructs(call, target)
        )
        index = params.index(name) - (1 if bound else 0)
        if 0 <= index < len(call.args):
            return call.args[index]
        if index >= 0 and call.spread_parts is not None:
            return tuple_part(call.spread_parts, index - len(call.args))
        for keyword, value in call.kwargs:
            if keyword == name:
                return value
        if caller is not None and call.forwards_kwargs and not call.spread:
            # ``**kwargs`` is the caller's last parameter; its item is where its callers
            # put it (host when ``host-parameters`` name the item).
            outer = self.functions[caller].params[-1]
            return Value(Place.PARAM, frozenset((outer,)), frozenset((f"{KEY_PREFIX}{name}",)))
        return None


# Callee kinds that call a method on an object: its first parameter is bound.
_BOUND_CALLS = frozenset({"self", "attr", "on", "method", "value"})


def constructs(call: CallSite, target: FunctionId) -> bool:
    """True for ``Cls(...)`` resolved to ``Cls.__init__`` (not ``Base.__init__(self)``)."""
    last = call.callee[-1]
    return target[1].endswith(".__init__") and not (
        isinstance(last, str) and last.endswith("__init__")
    )


def _token_order(token: tuple) -> tuple:
    """Tokens in a stable order (their contents, boxes by their size)."""
    return (token[0], repr(token[1:]))


def _unique(found: Iterable[FunctionId]) -> tuple[FunctionId, ...]:
    return tuple(dict.fromkeys(found))
