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
import re
from collections.abc import Callable, Collection

from syncguard.bindings import ClassId, FunctionId
from syncguard.callgraph import CallGraph
from syncguard.facts import CallSite, Requirement
from syncguard.values import CPU, FALSY, FORWARDED, NONE, NOT_NONE, PYSEQ, TRUTHY

_WORDS = re.compile(r"[A-Za-z_]\w*")
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
        self._unbuilt_memo: dict[FunctionId, bool] = {}
        self._named: set[str] | None = None  # class names other files import, or registries hold
        self._rooted: set[ClassId] | None = None  # classes with a method among the roots

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
        if self.unbuilt(fid):
            return True
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

    def unbuilt(self, fid: FunctionId) -> bool:
        """True for a method of objects the tree never makes, where it makes the others
        of their kind: a class below a base of the tree that some code of the tree builds
        other classes of (``Cls(...)``), while neither it nor a class below it is built,
        imported by another file, returned or held by name, or has a hot root (a
        ``forward`` that code outside the tree may call on an object it builds). Such a
        class is built only by tests or nowhere ("not yet used"): a call on a receiver
        typed with the base never runs its methods. (A hierarchy whose classes the tree
        builds by name, from a registry of strings, has none built: nothing is judged.)"""
        function = self.graph.functions[fid]
        if function.kind != "method" or function.class_name is None:
            return False
        found = self._unbuilt_memo.get(fid)
        if found is None:
            found = self._unbuilt_memo[fid] = self._compute_unbuilt((fid[0], function.class_name))
        return found

    def _compute_unbuilt(self, cid: ClassId) -> bool:
        bindings = self.graph.bindings
        if cid[1] not in bindings.by_path[cid[0]].facts.classes:
            return False
        family = [cid, *bindings.subclasses(cid)]
        if any(self._named_or_built(each) for each in family):
            return False
        above = bindings.mro(cid)[0][1:]
        if not above:
            return False  # no base of the tree: not reached through one
        members = set(family)
        return any(
            self._constructed(other)
            for base in above
            for other in (base, *bindings.subclasses(base))
            if other not in members
        )

    def _constructed(self, cid: ClassId) -> bool:
        return bool(self.graph.constructions.get((cid[0], f"{cid[1]}.__init__")))

    def _named_or_built(self, cid: ClassId) -> bool:
        init = (cid[0], f"{cid[1]}.__init__")
        return (
            init not in self.graph.functions
            or not self._root_classes().isdisjoint(self.graph.bindings.mro(cid)[0])
            or self._constructed(cid)
            or cid[1].rpartition(".")[2] in self._named_elsewhere()
        )

    def _root_classes(self) -> set[ClassId]:
        if self._rooted is None:
            functions = self.graph.functions
            self._rooted = {
                (fid[0], class_name)
                for fid in self.roots
                if (class_name := functions[fid].class_name) is not None
            }
        return self._rooted

    def _named_elsewhere(self) -> set[str]:
        """The last parts of every name a file imports, and the names in what functions
        return, attributes and module-level registries hold (their type expressions)."""
        if self._named is None:
            named: set[str] = set()
            for file in self.graph.bindings.files:
                facts = file.facts
                named.update(target.rpartition(".")[2] for target in facts.imports.values())
                held: list[object] = [facts.globals]
                held += [c.attribute_values for c in facts.classes.values()]
                held += [f.returns for f in facts.functions.values() if f.returns]
                named.update(_WORDS.findall(repr(held)))
            self._named = named
        return self._named

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
