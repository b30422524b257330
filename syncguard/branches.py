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
from syncguard.values import CPU, FALSY, FORWARDED, NONE, NOT_NONE, PYSEQ, TRUTHY

# Argument states (see Branches.argument_state) that contradict a requirement.
_CONTRADICTS = {
    "none": frozenset({"false", "true", "given", "cpu", "sequence"}),
    "not-none": frozenset({"none"}),
    "true": frozenset({"none", "false"}),
    "false": frozenset({"true", "cpu"}),
    "accelerator": frozenset({"none", "cpu"}),  # a device to copy to: not None, not "cpu"
    "tensor": frozenset({"none", "false", "true", "cpu", "sequence"}),  # isinstance(x, Tensor)
}
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le,
    "==": operator.eq, "!=": operator.ne,
}  # fmt: skip
_ARGUMENT_STATES = (
    (NONE, "none"), (FALSY, "false"), (TRUTHY, "true"), (CPU, "cpu"), (PYSEQ, "sequence"),
    (NOT_NONE, "given"),
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
        # By (id of the call, callee, requirements): calls live as long as the graph.
        self._excludes_memo: dict[tuple[int, FunctionId, tuple[Requirement, ...]], bool] = {}
        self._forwarded_memo: dict[
            tuple[int, FunctionId, tuple[Requirement, ...]], tuple[Requirement, ...]
        ] = {}

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
        if not requires:
            return False
        key = (id(call), target, requires)
        found = self._excludes_memo.get(key)
        if found is None:
            found = self._excludes_memo[key] = any(
                contradicts(state, self.argument_state(call, target, name))
                for name, state in requires
            )
        return found

    def forwarded(
        self, call: CallSite, target: FunctionId, requires: tuple[Requirement, ...]
    ) -> tuple[Requirement, ...]:
        """``requires`` on the caller's parameters that ``call`` passes on unchanged:
        ``f(x, check=check)`` with ``f`` needing ``check`` true needs the caller's too;
        through ``f(x, **kwargs)`` it needs the caller's callers to give ``check=``
        (written ``("**check=false", "true")``: the keyword, then ``f``'s default)."""
        if not requires:
            return ()
        key = (id(call), target, requires)
        known = self._forwarded_memo.get(key)
        if known is not None:
            return known
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
        result = self._forwarded_memo[key] = tuple(found)
        return result

    def never_taken(self, fid: FunctionId, requires: tuple[Requirement, ...]) -> bool:
        """True when every caller that may run per step (any caller in the tree for a hot
        root; recursion aside; at least one) contradicts ``requires``: code under ``if
        metadata is None:`` when all pass one (or pass on their own parameter, which their
        callers never leave None).

        A depth-first search over the callers with an explicit stack (call chains may be
        thousands of functions deep); a function being decided counts as taken (a cycle
        proves nothing)."""
        found = self._settled(fid, requires)
        if found is not None:
            return found
        # Frames: (function and requirements, its callers, the next caller to look at).
        stack = [self._open(fid, requires)]
        answer: bool | None = None  # what the frame just closed decided, for its parent
        while stack:
            frame = stack[-1]
            (target, needed), callers, index = frame
            if answer is not None:  # the caller at ``index`` was decided
                index = index + 1 if answer else len(callers) + 1
                answer = None
            while index < len(callers):
                caller, call = callers[index]
                if self.call_excludes(call, target, needed):
                    index += 1
                    continue
                outer = self.forwarded(call, target, needed)
                decided = self._settled(caller, outer)
                if decided is None:
                    break
                index = index + 1 if decided else len(callers) + 1
            if index < len(callers):  # decide that caller first
                frame[2] = index
                caller, call = callers[index]
                stack.append(self._open(caller, self.forwarded(call, target, needed)))
                continue
            answer = bool(callers) and index == len(callers)
            self._excluded_memo[frame[0]] = answer
            stack.pop()
        assert answer is not None
        return answer

    def _settled(self, fid: FunctionId, requires: tuple[Requirement, ...]) -> bool | None:
        """What :meth:`never_taken` knows of ``fid`` under ``requires`` without looking at
        its callers; None when they must be looked at."""
        if not requires:
            return False
        key = (fid, requires)
        found = self._excluded_memo.get(key)
        if found is not None:
            return found
        if any(
            self._flag_never_set(fid, name[5:], state)
            for name, state in requires
            if name.startswith("self.")
        ):
            self._excluded_memo[key] = True
            return True
        if all(name.startswith("self.") for name, _ in requires):
            self._excluded_memo[key] = False  # callers cannot set a flag of self
            return False
        return None

    def _open(self, fid: FunctionId, requires: tuple[Requirement, ...]) -> list:
        """A frame of :meth:`never_taken` for ``fid``: undecided until its callers are."""
        key = (fid, requires)
        self._excluded_memo[key] = False  # while deciding: a cycle proves nothing
        # A root (a forward) is also called from outside: every caller in the tree tells.
        callers = [
            (caller, call)
            for caller, call in self.graph.callers.get(fid, ())
            if caller != fid
            and (caller in self.maybe_hot or (fid in self.roots and not self.is_cold(caller)))
        ]
        return [key, callers, 0]

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
        states = {"none": True, "true": number == 0, "false": number != 0, "tensor": True}
        return states.get(required, False)
    return passed in _CONTRADICTS.get(required, ())
