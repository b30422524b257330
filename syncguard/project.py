"""The project phase: the passes that run once every file's facts are known.

Input is the :class:`~syncguard.facts.FileFacts` of every linted file; output is
the list of :class:`~syncguard.findings.Finding`. The passes, each its own module:

1. :mod:`~syncguard.bindings`: what names mean across files, class hierarchies;
2. :mod:`~syncguard.callgraph`: which function each call reaches;
3. :mod:`~syncguard.hotness`: hot roots and what they reach (with
   :mod:`~syncguard.branches`: which branches per-step callers take);
4. :mod:`~syncguard.summaries`: which parameters reach which sync, which
   parameters every caller passes host data for;
5. :mod:`~syncguard.findings`: the findings, with their chains.

A site whose data comes from a parameter is reported where a hot caller passes
device data for it (a sync hidden in a helper), not in the helper itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from syncguard import presets
from syncguard.bindings import Bindings, FunctionId, SourceFile
from syncguard.callgraph import CallGraph
from syncguard.facts import Step
from syncguard.findings import Finding, FindingBuilder, passes_parameters
from syncguard.hotness import Hotness, HotSettings
from syncguard.rule import Rule
from syncguard.summaries import (
    DeclaredDevice,
    DeclaredHost,
    host_parameters,
    parameter_summaries,
)

__all__ = [
    "Finding", "FunctionId", "HotSettings", "Project", "SourceFile", "Step", "root_of",
]  # fmt: skip


@dataclass
class Project:
    """The linted tree, with calls resolved; see the module docstring."""

    files: Sequence[SourceFile]
    settings: HotSettings = field(default_factory=HotSettings)
    rule_messages: Mapping[str, str] = field(default_factory=dict)
    graph_breaking: frozenset[str] = frozenset()
    # Rules whose ``check_project`` runs after the per-function findings.
    rules: Sequence[Rule] = ()

    def __post_init__(self) -> None:
        self.bindings = Bindings(self.files)
        self.by_path = self.bindings.by_path
        self.graph = CallGraph(self.bindings)
        # The framework presets in force: those named, and with "auto" those of the
        # frameworks the tree is or imports (a function of every file's interface).
        self.presets = presets.select(
            self.settings.presets,
            (file.facts.module for file in self.files),
            (target for file in self.files for target in file.facts.imports.values()),
        )
        self.hotness = Hotness(self.graph, presets.apply(self.settings, self.presets))
        self._findings: dict[str, list[Finding]] = {}

    def qualified(self, fid: FunctionId) -> str:
        return self.bindings.qualified(fid)

    def resolved_calls(self, path: str) -> dict[str, list[tuple[int, tuple[FunctionId, ...]]]]:
        """For each function of the file at ``path``: (index among its calls, callees) of
        each call that resolves in the tree."""
        return self.graph.resolved_calls(path)

    def declared_roots(self, path: str) -> dict[str, str]:
        """Qualname -> why it is a hot root by its class or the settings, for the
        functions of the file at ``path`` that are."""
        return self.hotness.declared_roots(path)

    def findings(self, scope: str = "hot") -> list[Finding]:
        """The findings in ``scope`` ("hot" or "all"), worked out once per scope."""
        found = self._findings.get(scope)
        if found is None:
            found = self._findings[scope] = self._worked_out(scope)
        return list(found)

    def _worked_out(self, scope: str) -> list[Finding]:
        graph, hotness = self.graph, self.hotness
        paths = hotness.hot_paths()
        hot = paths.hot
        declared_host = DeclaredHost(graph, hotness.settings.host_parameters)
        roots = {fid for fid, info in hot.items() if info.is_root}
        summary = parameter_summaries(graph, paths.branches, declared_host, roots, hotness.is_cold)
        # What callers pass matters only where a root's own parameters reach a sync.
        on_host = host_parameters(
            graph,
            hotness.cold_or_test,
            declared_host,
            (
                fid
                for fid in graph.ids
                if (
                    (hot[fid].is_root if fid in hot else scope == "all")
                    or fid in paths.step_loops
                    or fid in paths.callbacks
                )
                and passes_parameters(graph.functions[fid])
            ),
        )
        builder = FindingBuilder(
            graph,
            paths,
            hotness.is_cold,
            declared_host,
            DeclaredDevice(graph, hotness.settings.device_parameters, declared_host),
            self.rule_messages,
            self.graph_breaking,
            self.rules,
        )
        return builder.findings(scope, summary, on_host)


def root_of(path: str, module: str, is_package: bool) -> str:
    """The folder from which ``module`` is importable, given the file's display path."""
    depth = module.count(".") + (1 if is_package else 0)
    parent = PurePath(path).parent
    for _ in range(depth):
        parent = parent.parent
    return str(parent)
