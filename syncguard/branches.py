"""Which branches the callers take: code under ``if metadata is None:`` (or ``if check:``,
``if self.adaptive:``, a copy to a device parameter) that no caller that may run per step
reaches is dropped.

A requirement (see :data:`syncguard.facts.Requirement`) is checked against the state
of what each call passes (None, False, a number, ``"cpu"``, a computed value), through
wrappers that pass their own parameter or ``**kwargs`` on, and for flags of ``self``
against what every construction of the class gives ``__init__``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection

from syncguard.bindings import FunctionId
from syncguard.callgraph import CallGraph
from syncguard.facts import CallSite, Requirement
from syncguard.values import CPU, FALSY, FORWARDED, NONE, NOT_NONE, TRUTHY

# Argument states (see Branches.argument_state) that contradict a requirement.
_CONTRADICTS = {
    "none": frozenset({"false", "true", "given", "cpu"}),
    "not-none": frozenset({"none"}),
    "true": frozenset({"none", "false"}),
    "false": frozenset({"true", "cpu"}),
    "accelerator": frozenset({"none", "cpu"}),  # a device to copy to: not None, not "cpu"
}
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
    "==": operator.eq, "!=": operator.ne,
}  # fmt: skip
_ARGUMENT_STATES = (
    (NONE, "none"), (FALSY, "false"), (TRUTHY, "true"), (CPU, "cpu"), (NOT_NONE, "given")
)  # fmt: skip


class Branches:
    """Decides, from the callers, whether code under some requirements can run per step.

    ``roots`` are the hot roots and ``maybe_hot`` what they reach, branches aside:
    callers outside it never run per step, so what they pass cannot make a branch of
    a hot function run."""

    def __init__(
        self,
        graph: CallGraph,
        is_cold: Callable[[FunctionId], bool],
        roots: Collection[FunctionId] = frozenset(),
        maybe_hot: Collection[FunctionId] = frozenset(),
    ) -> None:
        self.graph = graph
        self.is_cold = is_cold
        self.roots = roots
        self.maybe_hot = maybe_hot
        self._excluded_memo: dict[tuple[FunctionId, tuple[Requirement, ...]], bool] = {}

    def argument_state(self, call: CallSite, target: FunctionId, name: str) -> str | None:
        """What ``call`` passes for parameter ``name`` of ``target``: ``"none"``,
        ``"false"``, ``"true"``, ``"num:-1"`` (constants or defaults), ``"given"`` (a value
        that cannot be None), or None when unknown (``*args``, the caller's parameter,
        ``self.x``)."""
        if name.startswith("**"):  # a keyword the caller's callers give through **kwargs
            keyword, _, default = name[2:].partition("=")
            argument = dict(call.kwargs).get(keyword)
            if argument is None:
                return None if call.spread or call.forwards_kwargs else default or None
        else:
            argument = self.graph.argument(call, target, name)
            if argument is None:
                if call.spread or call.forwards_kwargs:
                    return None
                return dict(self.graph.functions[target].literal_defaults).get(name)
        for tag, state in _ARGUMENT_STATES:
            if tag in argument.tags:
                return state
        return next((tag for tag in argument.tags if tag.startswith("num:")), None)

    def call_excludes(
        self, call: CallSite, target: FunctionId, requires: tuple[Requirement, ...]
    ) -> bool:
        """True when ``call`` passes ``target`` arguments that contradict ``requires``:
        ``None`` where the code needs ``p is not None``, a default ``False`` for ``if p:``."""
        return any(
            contradicts(state, self.argument_state(call, target, name)) for name, state in requires
        )

    def forwarded(
        self, call: CallSite, target: FunctionId, requires: tuple[Requirement, ...]
    ) -> tuple[Requirement, ...]:
        """``requires`` on the caller's parameters that ``call`` passes on unchanged:
        ``f(x, check=check)`` with ``f`` needing ``check`` true needs the caller's too;
        through ``f(x, **kwargs)`` it needs the caller's callers to give ``check=``
        (written ``("**check=false", "true")``: the keyword, then ``f``'s default)."""
        found: list[Requirement] = []
        through_kwargs = call.forwards_kwargs and not call.spread
        for name, state in requires:
            if name.startswith("self."):
                continue  # the callee's own flag: decided by its constructors
            if name.startswith("**"):
                keyword = name[2:].partition("=")[0]
                if through_kwargs and keyword not in dict(call.kwargs):
                    found.append((name, state))
                continue
            argument = self.graph.argument(call, target, name)
            if argument is None and through_kwargs:
                default = dict(self.graph.functions[target].literal_defaults).get(name, "")
                found.append((f"**{name}={default}", state))
            elif argument is not None and FORWARDED in argument.tags:
                found.extend((outer, state) for outer in argument.params)
        return tuple(found)

    def never_taken(self, fid: FunctionId, requires: tuple[Requirement, ...]) -> bool:
        """True when every caller that may run per step (any caller in the tree for a hot
        root; recursion aside; at least one) contradicts ``requires``: code under ``if
        metadata is None:`` when all pass one (or pass on their own parameter, which their
        callers never leave None)."""
        if not requires:
            return False
        key = (fid, requires)
        found = self._excluded_memo.get(key)
        if found is None and any(
            self._flag_never_set(fid, name[5:], state)
            for name, state in requires
            if name.startswith("self.")
        ):
            found = self._excluded_memo[key] = True
        if found is None and all(name.startswith("self.") for name, _ in requires):
            found = self._excluded_memo[key] = False  # callers cannot set a flag of self
        if found is None:
            self._excluded_memo[key] = False  # while deciding: a cycle proves nothing
            # A root (a forward) is also called from outside: every caller in the tree tells.
            callers = [
                (caller, call)
                for caller, call in self.graph.callers.get(fid, ())
                if caller != fid
                and (caller in self.maybe_hot or (fid in self.roots and not self.is_cold(caller)))
            ]
            found = bool(callers) and all(
                self.call_excludes(call, fid, requires)
                or self.never_taken(caller, self.forwarded(call, fid, requires))
                for caller, call in callers
            )
            self._excluded_memo[key] = found
        return found

    def _flag_never_set(self, fid: FunctionId, attribute: str, state: str) -> bool:
        """True when ``self.<attribute>`` of ``fid``'s class comes from an ``__init__``
        parameter that every construction in the tree (at least one) gives a value
        contradicting ``state``: ``if self.adaptive:`` where all pass ``adaptive=False``."""
        graph = self.graph
        class_name = graph.functions[fid].class_name
        if class_name is None:
            return False
        parameter = graph.bindings.class_facts((fid[0], class_name)).init_parameters.get(attribute)
        init = (fid[0], f"{class_name}.__init__")
        built = graph.constructions.get(init, [])
        return (
            parameter is not None
            and bool(built)
            and all(
                contradicts(state, self.argument_state(call, init, parameter)) for _, call in built
            )
            and not graph.bindings.subclassed((fid[0], class_name))  # else a subclass may set it
        )


def contradicts(required: str, passed: str | None) -> bool:
    """True when an argument in state ``passed`` (see :meth:`Branches.argument_state`)
    cannot satisfy the requirement ``required``: ``"none"``, ``"true"``, ``"cmp:>:0"``..."""
    if passed is None:
        return False
    if passed.startswith("num:"):
        number = float(passed[4:])
        if required.startswith("cmp:"):
            _, comparison, bound = required.split(":", 2)
            return not _COMPARE[comparison](number, float(bound))
        return {"none": True, "true": number == 0, "false": number != 0}.get(required, False)
    return passed in _CONTRADICTS.get(required, ())
