"""Function summaries of the project phase: what each function does with its parameters.

* Which parameters reach which sync sites, directly or through further calls: device
  data passed for such a parameter syncs there. Computed from the sites up through
  the callers, with a worklist, so recursion and cycles terminate.
* Which parameters every caller passes host data for (a least fixpoint over the
  callers), and which the ``host-parameters`` setting names; which parameters the
  ``device-parameters`` setting says a framework gives device data.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from syncguard.bindings import FunctionId
from syncguard.branches import Branches
from syncguard.callgraph import CallGraph
from syncguard.facts import Requirement, Site, Span, Step
from syncguard.globs import Matcher, compiled_globs
from syncguard.values import KEY_PREFIX, Place, Value


@dataclass(slots=True)
class Chain:
    """How device data for a parameter reaches a sync site: the first step (in the
    function holding the parameter) and the chain of the callee it passes the data to
    (None at the sync line). Chains share their tails, so a long call chain costs one
    step per function, not one copy of the whole chain."""

    step: Step
    below: Chain | None
    site: Site
    site_path: str
    # What the first step's function must be called with for the chain to run.
    requires: tuple[Requirement, ...] = ()
    length: int = 1

    @property
    def steps(self) -> tuple[Step, ...]:
        """From the function holding the parameter down to the sync line."""
        found = []
        chain: Chain | None = self
        while chain is not None:
            found.append(chain.step)
            chain = chain.below
        return tuple(found)


# Per function: parameter -> site (numbered by function, code and span) -> the chain to it.
SiteKey = int
Summary = dict[FunctionId, dict[str, dict[SiteKey, Chain]]]


class NamedParameters:
    """Parameters that globs name (``*grid_thw``, or ``pkg.models.minicpmv.*:tgt_sizes``
    for the functions a glob matches)."""

    def __init__(self, graph: CallGraph, patterns: tuple[str, ...]) -> None:
        self.graph = graph
        anywhere = tuple(p for p in patterns if ":" not in p)
        scoped = [p.rpartition(":")[::2] for p in patterns if ":" in p]
        self._any_name: Matcher | None = compiled_globs(anywhere)[0] if anywhere else None
        self._by_function: list[tuple[Matcher, Matcher]] = [
            (compiled_globs((where,))[0], compiled_globs((name,))[0]) for where, name in scoped
        ]
        self._memo: dict[FunctionId, frozenset[str]] = {}
        self._matchers_memo: dict[FunctionId, list[Matcher]] = {}

    def _matchers(self, fid: FunctionId) -> list[Matcher]:
        found = self._matchers_memo.get(fid)
        if found is None:
            found = [self._any_name] if self._any_name is not None else []
            if self._by_function:
                qualified = self.graph.bindings.qualified(fid)
                found += [name for where, name in self._by_function if where(qualified)]
            self._matchers_memo[fid] = found
        return found

    def __call__(self, fid: FunctionId) -> frozenset[str]:
        found = self._memo.get(fid)
        if found is None:
            matchers = self._matchers(fid)
            params = self.graph.functions[fid].params
            found = frozenset(p for p in params if any(m(p) for m in matchers))
            self._memo[fid] = found
        return found


class DeclaredHost(NamedParameters):
    """Parameters that the ``host-parameters`` globs name, and items read under such names."""

    def keyed(self, fid: FunctionId, value: Value) -> bool:
        """True when ``value`` was read under a name (``inputs["grid_thw"]``) that the
        globs name as host data in function ``fid``."""
        keys = [tag[len(KEY_PREFIX) :] for tag in value.tags if tag.startswith(KEY_PREFIX)]
        if not keys:
            return False
        matchers = self._matchers(fid)
        return any(match(key) for key in keys for match in matchers)


class DeclaredDevice(NamedParameters):
    """Parameters that the ``device-parameters`` globs name (``pkg.models.*.embed:*``): a
    framework's runner gives them device data (``model.embed(**batch)`` after moving the
    batch to the GPU), as a hot root's parameters may hold anything; less the names that
    ``host-parameters`` declares host (fields the runner keeps on the CPU)."""

    def __init__(self, graph: CallGraph, patterns: tuple[str, ...], host: DeclaredHost) -> None:
        super().__init__(graph, patterns)
        self.host = host
        self.empty = not patterns

    def __call__(self, fid: FunctionId) -> frozenset[str]:
        if self.empty:
            return frozenset()
        return super().__call__(fid) - self.host(fid)


def parameter_summaries(
    graph: CallGraph,
    branches: Branches,
    declared_host: DeclaredHost,
    roots: Collection[FunctionId] = (),
    is_cold: Callable[[FunctionId], bool] = lambda fid: False,
) -> Summary:
    """For each function: parameter -> the sync sites device data for it reaches, each
    with its shortest chain and what the function must be called with for it to run.

    Sites of ``roots`` (hot roots, which report their own sites) do not reach
    their callers: ``self.encoder(x)`` does not repeat the encoder's findings; nor do
    those of cold functions (a debugging check, a warm-up), which never run per step.

    A worklist of what changed: when a function learns a site for a parameter (or a
    shorter chain to it, or that it runs under fewer requirements), only that entry is
    passed on to its callers, so each entry crosses each call a bounded number of
    times (near-linear in the size of the result, also through recursion and cycles).
    A site is kept under the requirements all its chains share."""
    bindings = graph.bindings
    summary: Summary = {}
    # Per function: the entries that changed since it last passed them on, in order.
    dirty: dict[FunctionId, dict[str, dict[SiteKey, None]]] = {}
    # Callees before callers: a function passes on what it learned once its callees have
    # (a chain is then walked once, not once per helper).
    rank = _callees_first(graph)
    pending: list[tuple[int, FunctionId]] = []
    queued: set[FunctionId] = set()
    numbers: dict[tuple[FunctionId, str, Span], int] = {}  # a site's key: a small number
    for fid in graph.ids:
        for site in graph.functions[fid].sites:
            if site.value.place is not Place.PARAM or bindings.on_host(fid[0], site.value):
                continue
            if declared_host.keyed(fid, site.value):
                continue
            key = numbers.setdefault((fid, site.code, site.span), len(numbers))
            step = Step(fid[0], site.span.line, bindings.qualified(fid))
            for name in sorted(site.value.params - declared_host(fid)):
                entries = summary.setdefault(fid, {}).setdefault(name, {})
                if key not in entries:
                    entries[key] = Chain(step, None, site, fid[0], site.requires)
                    dirty.setdefault(fid, {}).setdefault(name, {})[key] = None
        if fid in dirty:
            heapq.heappush(pending, (rank[fid], fid))
            queued.add(fid)
    while pending:
        target = heapq.heappop(pending)[1]
        queued.discard(target)
        changes = dirty.pop(target, {})
        if target in roots or is_cold(target):
            continue
        known_here = summary[target]
        for caller, call in graph.callers.get(target, ()):
            caller_params = graph.functions[caller].params
            call_step: Step | None = None
            for name, keys in changes.items():
                argument = graph.argument(call, target, name, caller)
                if (
                    argument is None
                    or argument.place is not Place.PARAM
                    or bindings.on_host(caller[0], argument)
                    or declared_host.keyed(caller, argument)
                ):
                    continue
                if call_step is None:
                    call_step = Step(caller[0], call.span.line, bindings.qualified(caller))
                entries = known_here[name]
                # What the call makes of the requirements of a chain (None: it excludes
                # the chain), once per distinct requirements.
                passed_on: dict[tuple[Requirement, ...], tuple[Requirement, ...] | None] = {}
                for outer in sorted(argument.params):
                    if outer not in caller_params or outer in declared_host(caller):
                        continue
                    mine = summary.setdefault(caller, {}).setdefault(outer, {})
                    learned: dict[SiteKey, None] | None = None
                    for key in list(keys):  # list(): a recursive call adds to what it reads
                        chain = entries[key]
                        needed = chain.requires
                        if needed in passed_on:
                            requires = passed_on[needed]
                        elif branches.call_excludes(call, target, needed):
                            requires = passed_on[needed] = None
                        else:
                            requires = passed_on[needed] = call.requires + branches.forwarded(
                                call, target, needed
                            )
                        if requires is None:
                            continue
                        known = mine.get(key)
                        length = chain.length + 1
                        if known is None:
                            mine[key] = Chain(
                                call_step, chain, chain.site, chain.site_path, requires, length
                            )
                        else:
                            # Several ways to the site: it runs under what they all require.
                            common = (
                                known.requires
                                if known.requires == requires
                                else tuple(r for r in known.requires if r in requires)
                            )
                            if common == known.requires and length >= known.length:
                                continue
                            known.requires = common
                            if length < known.length:
                                known.step, known.below, known.length = call_step, chain, length
                        if learned is None:
                            learned = dirty.setdefault(caller, {}).setdefault(outer, {})
                        learned[key] = None
                    if learned and caller not in queued:
                        heapq.heappush(pending, (rank[caller], caller))
                        queued.add(caller)
    return summary


def _callees_first(graph: CallGraph) -> dict[FunctionId, int]:
    """A number for each function, lower for callees than for their callers (but in a
    cycle): the post-order of a depth-first walk from every function along its calls."""
    callees: dict[FunctionId, list[FunctionId]] = {}
    for target, calls in graph.callers.items():
        for caller, _ in calls:
            callees.setdefault(caller, []).append(target)
    rank: dict[FunctionId, int] = {}
    visiting: set[FunctionId] = set()
    for start in graph.ids:
        if start in rank:
            continue
        stack = [(start, iter(callees.get(start, ())))]
        visiting.add(start)
        while stack:
            fid, below = stack[-1]
            for callee in below:
                if callee not in rank and callee not in visiting:
                    visiting.add(callee)
                    stack.append((callee, iter(callees.get(callee, ()))))
                    break
            else:
                stack.pop()
                visiting.discard(fid)
                rank[fid] = len(rank)
    return rank


def host_parameters(
    graph: CallGraph,
    is_cold: Callable[[FunctionId], bool],
    declared_host: DeclaredHost,
    wanted: Iterable[FunctionId] | None = None,
) -> dict[FunctionId, frozenset[str]]:
    """Parameters that every caller in the tree (cold ones and the function itself
    aside) passes host data for: host values, or parameters of its own that are such.
    A root such as a submodule's ``forward`` then sees host data there
    (``self.encoder(x, lens_cpu)``), where without callers they may hold anything.

    With ``wanted``, only the functions that are asked for and their callers,
    transitively, are looked at (what a function learns depends on its callers
    alone): the same answer for those, at a fraction of the cost."""
    scope = graph.functions if wanted is None else _upstream(graph, is_cold, wanted)
    callers = {
        fid: [
            (caller, call)
            for caller, call in graph.callers.get(fid, ())
            if caller != fid and not is_cold(caller)
        ]
        for fid in scope
    }
    known: dict[FunctionId, set[str]] = {fid: set(declared_host(fid)) for fid in scope}
    callees: dict[FunctionId, set[FunctionId]] = {}
    for fid, calls in callers.items():
        for caller, _ in calls:
            callees.setdefault(caller, set()).add(fid)
    # A least fixpoint (only what some chain of callers proves), as a worklist: a
    # function is looked at again only when one of its callers learned something.
    pending = deque(fid for fid in graph.ids if callers.get(fid))
    queued = set(pending)
    while pending:
        fid = pending.popleft()
        queued.discard(fid)
        calls = callers[fid]
        grew = False
        for name in graph.functions[fid].params:
            if name in known[fid]:
                continue
            if all(
                argument is not None
                and (
                    argument.place is Place.HOST
                    or (argument.place is Place.PARAM and argument.params <= known[caller])
                )
                for caller, argument in (
                    (caller, graph.argument(call, fid, name)) for caller, call in calls
                )
            ):
                known[fid].add(name)
                grew = True
        if grew:
            for callee in callees.get(fid, ()):
                if callee not in queued:
                    pending.append(callee)
                    queued.add(callee)
    return {fid: frozenset(names) for fid, names in known.items() if names}


def _upstream(
    graph: CallGraph, is_cold: Callable[[FunctionId], bool], wanted: Iterable[FunctionId]
) -> set[FunctionId]:
    """``wanted`` and every function that calls one of them, transitively (cold
    callers and recursion aside, as :func:`host_parameters` counts callers)."""
    seen = set(wanted)
    stack = list(seen)
    while stack:
        fid = stack.pop()
        for caller, _ in graph.callers.get(fid, ()):
            if caller not in seen and caller != fid and not is_cold(caller):
                seen.add(caller)
                stack.append(caller)
    return seen
