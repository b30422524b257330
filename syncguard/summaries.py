"""Function summaries of the project phase: what each function does with its parameters.

* Which parameters reach which sync sites, directly or through further calls: device
  data passed for such a parameter syncs there. Computed from the sites up through
  the callers, with a worklist, so recursion and cycles terminate.
* Which parameters every caller passes host data for (a least fixpoint over the
  callers), and which the ``host-parameters`` setting names.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from syncguard.bindings import FunctionId
from syncguard.branches import Branches
from syncguard.callgraph import CallGraph
from syncguard.facts import Requirement, Site, Step
from syncguard.globs import Matcher, compiled_globs
from syncguard.values import Place


@dataclass(slots=True)
class Chain:
    """How device data for a parameter reaches a sync site."""

    steps: tuple[Step, ...]  # from the function holding the parameter down to the sync line
    site: Site
    site_path: str
    # What the first step's function must be called with for the chain to run.
    requires: tuple[Requirement, ...] = ()


# Per function: parameter -> (function, code, span of the site) -> the chain to it.
Summary = dict[FunctionId, dict[str, dict[tuple, Chain]]]


class DeclaredHost:
    """Parameters that the ``host-parameters`` globs name (``*grid_thw``, or
    ``pkg.models.minicpmv.*:tgt_sizes`` for the functions a glob matches)."""

    def __init__(self, graph: CallGraph, patterns: tuple[str, ...]) -> None:
        self.graph = graph
        anywhere = tuple(p for p in patterns if ":" not in p)
        scoped = [p.rpartition(":")[::2] for p in patterns if ":" in p]
        self._any_name: Matcher | None = compiled_globs(anywhere)[0] if anywhere else None
        self._by_function: list[tuple[Matcher, Matcher]] = [
            (compiled_globs((where,))[0], compiled_globs((name,))[0]) for where, name in scoped
        ]
        self._memo: dict[FunctionId, frozenset[str]] = {}

    def __call__(self, fid: FunctionId) -> frozenset[str]:
        found = self._memo.get(fid)
        if found is None:
            matchers = [self._any_name] if self._any_name is not None else []
            if self._by_function:
                qualified = self.graph.bindings.qualified(fid)
                matchers += [name for where, name in self._by_function if where(qualified)]
            params = self.graph.functions[fid].params
            found = frozenset(p for p in params if any(m(p) for m in matchers))
            self._memo[fid] = found
        return found


def parameter_summaries(
    graph: CallGraph,
    branches: Branches,
    declared_host: DeclaredHost,
    roots: Collection[FunctionId] = (),
) -> Summary:
    """For each function: parameter -> the sync sites device data for it reaches.

    Sites of ``roots`` (hot roots, which report their own sites) do not reach
    their callers: ``self.encoder(x)`` does not repeat the encoder's findings."""
    bindings = graph.bindings
    summary: Summary = {}
    pending: deque[FunctionId] = deque()
    for fid in graph.ids:
        for site in graph.functions[fid].sites:
            if site.value.place is not Place.PARAM or bindings.on_host(fid[0], site.value):
                continue
            key = (fid, site.code, site.span)
            step = Step(fid[0], site.span.line, bindings.qualified(fid))
            for name in site.value.params - declared_host(fid):
                entries = summary.setdefault(fid, {}).setdefault(name, {})
                entries.setdefault(key, Chain((step,), site, fid[0], site.requires))
            if fid not in pending:
                pending.append(fid)
    while pending:
        target = pending.popleft()
        if target in roots:
            continue
        for caller, call in graph.callers.get(target, ()):
            changed = False
            caller_params = graph.functions[caller].params
            # list(): a recursive call (caller == target) adds to the entries it reads.
            for name, entries in list(summary.get(target, {}).items()):
                argument = graph.argument(call, target, name)
                if (
                    argument is None
                    or argument.place is not Place.PARAM
                    or bindings.on_host(caller[0], argument)
                ):
                    continue
                step = Step(caller[0], call.span.line, bindings.qualified(caller))
                for outer in argument.params:
                    if outer not in caller_params or outer in declared_host(caller):
                        continue
                    mine = summary.setdefault(caller, {}).setdefault(outer, {})
                    for key, chain in list(entries.items()):
                        if branches.call_excludes(call, target, chain.requires):
                            continue
                        requires = call.requires + branches.forwarded(call, target, chain.requires)
                        known = mine.get(key)
                        if known is None:
                            mine[key] = Chain(
                                (step, *chain.steps), chain.site, chain.site_path, requires
                            )
                            changed = True
                            continue
                        # Several ways to the site: it runs under what they all require.
                        common = tuple(r for r in known.requires if r in requires)
                        if common != known.requires:
                            known.requires = common
                            changed = True
            if changed and caller not in pending:
                pending.append(caller)
    return summary


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
