"""The last pass of the project phase: findings, from the hot functions and the summaries.

A sync site in a hot function is a finding unless its data is a parameter (then the
hot caller that passes device data for it gets the finding, with the chain down to
the site), a host field, or in a branch no per-step caller takes. Rules' project-level
checks (see :mod:`syncguard.rule`) add theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from syncguard.bindings import FunctionId
from syncguard.callgraph import CallGraph
from syncguard.facts import Fix, FunctionFacts, Site, Span, Step
from syncguard.hotness import Hot, HotPaths
from syncguard.rule import HotPath, Record, Rule
from syncguard.summaries import Chain, DeclaredDevice, DeclaredHost, Summary
from syncguard.values import Place


@dataclass(frozen=True, slots=True)
class Finding:
    """A sync reported to the user (before suppressions and code selection)."""

    code: str
    message: str
    path: str
    span: Span
    severity: str  # "error" in a hot path, "warning" outside
    hot: str | None
    chain: tuple[Step, ...]
    suggestion: str
    fix: Fix | None
    # (path, first line, last line) of statements where a suppression comment applies.
    suppressible_at: tuple[tuple[str, int, int], ...] = ()

    @property
    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.span.line, self.span.column, self.code, self.message)


def passes_parameters(function: FunctionFacts) -> bool:
    """True when some site or call of ``function`` works on its parameters' data."""
    return any(site.value.place is Place.PARAM for site in function.sites) or any(
        value.place is Place.PARAM
        for call in function.calls
        for value in (*call.args, *(value for _, value in call.kwargs))
    )


class FindingBuilder:
    """Turns hot paths and summaries into the sorted findings of one run."""

    def __init__(
        self,
        graph: CallGraph,
        paths: HotPaths,
        is_cold: Callable[[FunctionId], bool],
        declared_host: DeclaredHost,
        declared_device: DeclaredDevice,
        rule_messages: Mapping[str, str],
        graph_breaking: frozenset[str],
        rules: Sequence[Rule],
    ) -> None:
        self.graph = graph
        self.bindings = graph.bindings
        self.paths = paths
        self.is_cold = is_cold
        self.declared_host = declared_host
        self.declared_device = declared_device
        self.rule_messages = rule_messages
        self.graph_breaking = graph_breaking
        self.rules = rules
        self.non_blocking = frozenset(rule.code for rule in rules if not rule.blocks_host)

    def findings(
        self,
        scope: str,
        summary: Summary,
        host_parameters: Mapping[FunctionId, frozenset[str]],
    ) -> list[Finding]:
        graph, bindings, branches = self.graph, self.bindings, self.paths.branches
        hot, compiled = self.paths.hot, self.paths.compiled
        results: list[Finding] = []
        reported: set[tuple[str, Span, str]] = set()  # sites with a finding at their line
        for fid in graph.ids:
            info = hot.get(fid)
            loops = self.paths.step_loops.get(fid) if info is None else None
            if loops:  # only the step loops of this function are hot
                info = Hot(f"step loop in {bindings.qualified(fid)}", (), True)
            if info is None and scope != "all":
                continue
            function = graph.functions[fid]
            # Parameters a hot root, a callback or a step loop's function is given may hold
            # anything: syncs on them are reported here (else where callers pass device data).
            treat_as_root = info is None or info.is_root or fid in self.paths.callbacks
            severity = "error" if info is not None else "warning"
            reason = info.reason if info is not None else None
            via = info.via if info is not None else ()
            here = bindings.qualified(fid)
            graph_break = fid in compiled
            on_host = host_parameters.get(fid, frozenset())  # what all callers pass host
            on_device = self.declared_device(fid)  # what a framework passes device data for
            for site in function.sites:
                if loops and not any(
                    loop.line <= site.span.line <= loop.end_line for loop in loops
                ):
                    continue
                if (
                    site.value.place is Place.PARAM
                    and not site.value.params & on_device
                    and (not treat_as_root or site.value.params <= on_host)
                ):
                    continue
                if bindings.on_host(fid[0], site.value) or self.declared_host.keyed(
                    fid, site.value
                ):
                    continue  # a host field of a class, a host result, a field named host
                if branches.never_taken(fid, site.requires):
                    continue  # a branch no caller takes
                step = Step(fid[0], site.span.line, here)
                reported.add((fid[0], site.span, site.code))
                results.append(
                    self._finding(site, fid[0], site.span, site.statement, severity, reason,
                                  (*via, step), site.in_loop, graph_break, site.fix, (),
                                  site.suggestion)
                )  # fmt: skip
            for index, call in enumerate(function.calls):
                if loops and not any(loop.holds(call.span.line) for loop in loops):
                    continue
                if branches.never_taken(fid, call.requires):
                    continue
                # One finding per rule code and call: the first sync site, with a count.
                by_code: dict[str, list[tuple[str, Chain]]] = {}
                for target in graph.callees(fid, index):
                    if target not in summary or self.is_cold(target):
                        continue
                    target_hot = hot.get(target)
                    if target_hot is not None and target_hot.is_root:
                        continue  # the callee reports its own sites
                    if info is None and target_hot is None:
                        continue  # cold to cold: the callee reports its sites itself
                    for name, entries in sorted(summary[target].items()):
                        argument = graph.argument(call, target, name, fid)
                        if (
                            argument is None
                            or bindings.on_host(fid[0], argument)
                            or self.declared_host.keyed(fid, argument)
                        ):
                            continue
                        if (
                            argument.place is Place.PARAM
                            and not argument.params & on_device
                            and (not treat_as_root or argument.params <= on_host)
                        ):
                            continue  # reported where the caller's caller passes device data
                        for chain in entries.values():
                            if not branches.call_excludes(
                                call, target, chain.requires
                            ) and not branches.never_taken(
                                fid, branches.forwarded(call, target, chain.requires)
                            ):
                                by_code.setdefault(chain.site.code, []).append((name, chain))
                for group in by_code.values():
                    group.sort(
                        key=lambda item: (
                            item[1].site_path,
                            item[1].site.span.line,
                            item[1].site.span.column,
                        )
                    )
                    name, chain = group[0]
                    sync = chain.site
                    sites = {(c.site_path, c.site.span) for _, c in group}
                    callee = chain.step.function.rpartition(".")[2]
                    count = f", {len(sites)} sites" if len(sites) > 1 else ""
                    message = (
                        f"`{callee}()` syncs{count}: {self._message(sync)} (called here with "
                        f"device data for `{name}`)"
                    )
                    suggestion = (
                        f"pass host data for `{name}` (e.g. a `*_cpu` copy) or move this "
                        f"call out of the hot path; at the sync: {sync.suggestion}"
                    )
                    step = Step(fid[0], call.span.line, here)
                    at_sites = tuple(
                        dict.fromkeys((c.site_path, *c.site.statement) for _, c in group)
                    )
                    results.append(
                        self._finding(
                            sync, fid[0], call.span, call.statement, severity, reason,
                            (*via, step, *chain.steps), call.in_loop, graph_break,
                            None, at_sites, suggestion, message,
                        )
                    )  # fmt: skip
                    reported.add((chain.site_path, sync.span, sync.code))
                    # Every other site the call reaches is a finding of its own, at its line.
                    for other_name, other in group[1:]:
                        key = (other.site_path, other.site.span, other.site.code)
                        if key in reported:
                            continue
                        reported.add(key)
                        entry = f"{fid[0]}:{call.span.line}"
                        results.append(
                            self._finding(
                                other.site, other.site_path, other.site.span,
                                other.site.statement, severity, reason,
                                (*via, step, *other.steps), other.site.in_loop or call.in_loop,
                                graph_break, other.site.fix, ((fid[0], *call.statement),),
                                other.site.suggestion,
                                f"{self._message(other.site)} (device data for "
                                f"`{other_name}` comes from the hot call at {entry})",
                            )
                        )  # fmt: skip
        results.extend(self._project_findings(hot, scope))
        results.sort(key=lambda finding: finding.sort_key)
        return results

    def _project_findings(self, hot: Mapping[FunctionId, Hot], scope: str) -> list[Finding]:
        """Findings of the rules' project-level checks (see :mod:`syncguard.rule`)."""
        view = _View(self.graph, hot, scope)
        results: list[Finding] = []
        for rule in self.rules:
            for report in rule.check_project(view):
                fid = (report.path, report.function)
                info = hot.get(fid)
                if fid not in self.graph.functions or (info is None and scope != "all"):
                    continue
                step = Step(report.path, report.span.line, self.bindings.qualified(fid))
                results.append(
                    Finding(
                        code=rule.code,
                        message=report.message,
                        path=report.path,
                        span=report.span,
                        severity="error" if info is not None else "warning",
                        hot=info.reason if info is not None else None,
                        chain=(*(info.via if info is not None else ()), step),
                        suggestion=report.suggestion,
                        fix=None,
                        suppressible_at=tuple(
                            (report.path, *lines)
                            for lines in (report.statement, *report.suppressible_at)
                        ),
                    )
                )
        return results

    def _message(self, site: Site) -> str:
        return site.message or self.rule_messages.get(site.code, site.code)

    def _finding(
        self,
        site: Site,
        path: str,
        span: Span,
        statement: tuple[int, int],
        severity: str,
        reason: str | None,
        chain: tuple[Step, ...],
        in_loop: bool,
        graph_break: bool,
        fix: Fix | None,
        extra_suppressions: tuple[tuple[str, int, int], ...],
        suggestion: str,
        message: str | None = None,
    ) -> Finding:
        text = message or self._message(site)
        if in_loop and site.code not in self.non_blocking:
            text += " (inside a loop: syncs once per iteration)"
        if graph_break and site.code in self.graph_breaking:
            text += " (also a graph break under torch.compile)"
        return Finding(
            code=site.code,
            message=text,
            path=path,
            span=span,
            severity=severity,
            hot=reason,
            chain=chain,
            suggestion=suggestion,
            fix=fix,
            suppressible_at=((path, *statement), *extra_suppressions),
        )


class _View:
    """The :class:`~syncguard.rule.ProjectView` of a project, for one run."""

    def __init__(self, graph: CallGraph, hot: Mapping[FunctionId, Hot], scope: str) -> None:
        self.graph = graph
        self.hot_functions = hot
        self.scope = scope
        self.by_code: dict[str, list[Record]] = {}

    def records(self, code: str) -> Sequence[Record]:
        found = self.by_code.get(code)
        if found is None:
            functions = self.graph.functions
            found = [
                Record(file.path, qualname, item)
                for file in sorted(self.graph.bindings.files, key=lambda f: f.path)
                for qualname, item in file.facts.records.get(code, ())
            ]
            found.sort(
                key=lambda r: (r.path, getattr(functions.get((r.path, r.function)), "line", 0))
            )
            self.by_code[code] = found
        return found

    def hot(self, path: str, function: str) -> HotPath | None:
        info = self.hot_functions.get((path, function))
        return None if info is None else HotPath(info.reason, info.via)

    def qualified(self, path: str, function: str) -> str:
        return self.graph.bindings.qualified((path, function))
