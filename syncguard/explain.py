"""Why a line is (or is not) reported: ``syncguard check --explain PATH:LINE``.

Three answers a user needs to trust, or suppress, a finding in code they did not write:

* **why the function is hot**: its root (a ``forward``, a preset's entry, a step loop)
  and every call on the way down to it;
* **what the data is, and why**: for each sync on the line, where its data lives and
  the assignments it comes from (the binding chain), or the parameter whose callers
  decide it;
* **which callers were considered**: each call of the function, whether it may run per
  step, what it passes for the parameters the syncs depend on, and which are dropped
  because they never take the branch the sync is in.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from syncguard.analysis import FileAnalyzer
from syncguard.bindings import FunctionId
from syncguard.facts import FunctionFacts, Requirement
from syncguard.findings import Finding
from syncguard.hotness import HotPaths
from syncguard.parsing import parse
from syncguard.project import Project
from syncguard.reading import read_source
from syncguard.rule import Rule
from syncguard.rules import all_rules
from syncguard.values import Place, Value

_DEPTH = 4  # assignments followed back from a sync's data


@dataclass
class Explanation:
    """What ``--explain`` says of one line; :meth:`render` writes it out."""

    path: str
    line: int
    function: str  # qualified name of the innermost function holding the line
    presets: list[str] = field(default_factory=list)
    hot: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    callers: list[str] = field(default_factory=list)

    def render(self) -> str:
        out = [f"{self.path}:{self.line} in {self.function}"]
        if self.presets:
            out += ["", "presets in force:", *(f"  {line}" for line in self.presets)]
        out += ["", "why it is hot:", *(f"  {line}" for line in self.hot)]
        here = [f for f in self.findings if (f.path, f.span.line) == (self.path, self.line)]
        out += ["", "reported here:"]
        out += [f"  {f.code} {f.message}" for f in here] or ["  nothing"]
        below = [f for f in self.findings if f not in here]
        if below:  # a sync on a parameter: reported where a hot caller passes device data
            out += ["", "reported at the hot call sites that reach it:"]
            out += [f"  {f.path}:{f.span.line}: {f.code} {f.message}" for f in below]
        out += ["", "the data:", *(f"  {line}" for line in self.data or ["no sync on this line"])]
        out += ["", "callers considered:", *(f"  {line}" for line in self.callers or ["none"])]
        return "\n".join(out) + "\n"


def explain(project: Project, path: str, line: int) -> Explanation:
    """Why ``line`` of the linted file at ``path`` is or is not reported by ``project``."""
    if path not in project.by_path:
        wanted = os.path.abspath(path)
        matching = [known for known in project.by_path if os.path.abspath(known) == wanted]
        if not matching:
            raise LookupError(f"{path}: not among the linted files")
        path = matching[0]
    fid = _function_at(project, path, line)
    graph = project.graph
    paths = project.hotness.hot_paths()
    here = Explanation(path, line, project.qualified(fid))
    here.presets = [
        f"{each.preset.name} ({each.preset.release}): {each.reason}" for each in project.presets
    ]
    here.hot = _hot_lines(project, paths, fid, line)
    here.findings = [
        finding for finding in project.findings("hot") if _touches(finding, path, line)
    ]
    function = graph.functions[fid]
    sites = [site for site in function.sites if site.span.line <= line <= site.span.end_line]
    here.data = _data_lines(project, fid, line, sites)
    here.callers = _caller_lines(project, paths, fid, [r for s in sites for r in s.requires])
    return here


def _function_at(project: Project, path: str, line: int) -> FunctionId:
    """The innermost function of the file whose body holds ``line``: the one defined last
    before it that has a site or call on it (else the one defined last before it)."""
    functions = project.by_path[path].facts.functions
    before = sorted(
        (facts.line, qualname) for qualname, facts in functions.items() if facts.line <= line
    )
    for _, qualname in reversed(before):
        facts = functions[qualname]
        if any(s.span.line <= line <= s.span.end_line for s in facts.sites) or any(
            c.span.line == line for c in facts.calls
        ):
            return (path, qualname)
    return (path, before[-1][1] if before else "<module>")


def _touches(finding: Finding, path: str, line: int) -> bool:
    last = finding.chain[-1] if finding.chain else None
    return (finding.path == path and finding.span.line == line) or (
        last is not None and last.path == path and last.line == line
    )


def _hot_lines(project: Project, paths: HotPaths, fid: FunctionId, line: int) -> list[str]:
    info = paths.hot.get(fid)
    if info is not None:
        found = [f"{project.qualified(fid)} is hot: {info.reason}"]
        if info.is_root:
            found.append("it is a hot root")
        found += [f"  step: {step}" for step in info.via]
        return found
    for loop in paths.step_loops.get(fid, ()):
        if loop.holds(line):
            kinds = ", ".join(sorted(loop.flags)) or "calls that reach a hot root"
            return [
                f"a step loop of {project.qualified(fid)} (lines {loop.line}-{loop.end_line}: "
                f"{kinds}): everything its body calls runs every step"
            ]
    if project.hotness.is_cold(fid):
        return [f"not hot: {project.qualified(fid)} is cold (its name, a decorator or a setting)"]
    return [f"not hot: no hot root or step loop reaches {project.qualified(fid)}"]


def _data_lines(project: Project, fid: FunctionId, line: int, sites: Sequence[object]) -> list[str]:
    """Where the data of each sync on ``line`` lives, and the assignments it comes from,
    from a walk of the file that notes them as the rules report."""
    traced = _trace(fid[0], project.by_path[fid[0]].facts.module, line)
    found: list[str] = []
    for code, subject, value, chain in traced:
        found.append(f"{code} on `{subject}`: {_placement(value)}")
        found += [f"  {step}" for step in chain]
        if value.place is Place.PARAM:
            names = ", ".join(f"`{name}`" for name in sorted(value.params))
            found.append(f"  parameter {names}: reported where a hot caller passes device data")
    return found


def _placement(value: Value) -> str:
    if value.place is Place.HOST:
        return "host data"
    if value.place is Place.PARAM:
        return "whatever the callers pass for " + ", ".join(sorted(value.params))
    origin = sorted(value.tags - value.kinds)
    where = "device data" if value.place is Place.DEVICE else "may be on the device"
    return f"{where} ({', '.join(origin)})" if origin else where


def _trace(path: str, module: str, line: int) -> list[tuple[str, str, Value, list[str]]]:
    source = read_source(path)
    tree = parse(source)
    assert isinstance(tree, ast.Module)
    is_package = path.endswith("__init__.py")
    rules = [rule_class() for rule_class in all_rules().values()]
    tracer = _Tracer(tree, source, module, is_package, rules, line)
    tracer.analyze()
    return tracer.traced


class _Tracer(FileAnalyzer):
    """The per-file analysis, noting for each report on one line its data's binding chain."""

    def __init__(
        self,
        tree: ast.Module,
        source: str,
        module: str,
        is_package: bool,
        rules: Sequence[Rule],
        line: int,
    ) -> None:
        super().__init__(tree, source, module, is_package, rules)
        self.line = line
        self.traced: list[tuple[str, str, Value, list[str]]] = []

    def report(self, node: ast.AST, *, subject: ast.expr | None, **options: object) -> None:
        before = len(self.scope.facts.sites)
        super().report(node, subject=subject, **options)  # type: ignore[arg-type]
        if getattr(node, "lineno", None) != self.line or len(self.scope.facts.sites) == before:
            return
        if subject is None:
            self.traced.append((self.rule_code, "the stream or device", Value(Place.DEVICE), []))
            return
        chain: list[str] = []
        self._follow(subject, chain, _DEPTH, set())
        self.traced.append((self.rule_code, self.source(subject), self.value(subject), chain))

    def _follow(self, node: ast.expr, chain: list[str], depth: int, seen: set[str]) -> None:
        if depth == 0:
            return
        for name in sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}):
            if name in seen:
                continue
            seen.add(name)
            assigned = self.assigned(name)
            value = self._name_value(name)
            if assigned is not None:
                where = getattr(assigned, "lineno", "?")
                chain.append(
                    f"`{name}` = `{self.source(assigned)}` (line {where}): {_placement(value)}"
                )
                self._follow(assigned, chain, depth - 1, seen)
            elif name in self.scope.facts.params:
                chain.append(f"`{name}` is a parameter: {_placement(value)}")


def _caller_lines(
    project: Project, paths: HotPaths, fid: FunctionId, requires: list[Requirement]
) -> list[str]:
    graph = project.graph
    branches = paths.branches
    function: FunctionFacts = graph.functions[fid]
    found: list[str] = []
    for caller, call in graph.callers.get(fid, ()):
        where = f"{project.qualified(caller)} (line {call.span.line})"
        runs = caller in paths.hot or caller in paths.step_loops or caller in branches.maybe_hot
        if not runs:
            found.append(f"{where}: not considered, it never runs per step")
            continue
        passed = [
            f"`{name}` = {branches.argument_state(call, fid, name) or 'unknown'}"
            for name in sorted({name for name, _ in requires})
            if not name.startswith("self.")
        ]
        detail = f", passes {', '.join(passed)}" if passed else ""
        if requires and branches.call_excludes(call, fid, tuple(requires)):
            conditions = " and ".join(_condition(name, state) for name, state in requires)
            found.append(f"{where}{detail}: dropped, the sync runs only when {conditions}")
        else:
            found.append(f"{where}{detail}: considered")
    if not found and function.class_name is not None:
        found.append("no call of it in the tree: it is reached as a root or not at all")
    return found


def _condition(name: str, state: str) -> str:
    """A requirement in words: ``metadata is not None``, ``kv_block_num > 0``."""
    if state.startswith("cmp:"):
        _, comparison, bound = state.split(":", 2)
        return f"{name} {comparison} {bound}"
    words = {"none": "is None", "not-none": "is not None", "true": "is true",
             "false": "is false", "accelerator": "is an accelerator"}  # fmt: skip
    return f"{name} {words.get(state, state)}"
