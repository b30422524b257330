"""The hotness pass of the project phase: which functions run on every step, and why.

Hot roots are ``forward`` / ``__call__`` of modules, ``forward`` / ``backward`` of
autograd Functions, compiled and marked functions and the configured globs. Hotness
flows along resolved calls (breadth first, so each function gets its shortest chain
from a root) and stops at cold functions: ``__init__``, memoised and measuring code,
``cold-functions``, and branches no per-step caller takes (:mod:`syncguard.branches`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from syncguard.bindings import FunctionId
from syncguard.branches import Branches
from syncguard.callgraph import CallGraph
from syncguard.facts import Step
from syncguard.globs import matches

_HOT_DECORATORS = {
    "torch.compile": "torch.compile",
    "torch.jit.script": "torch.jit.script",
    "syncguard.hot": "@syncguard.hot",
}
# Memoised functions run once per argument set (a device, a size), not once per step.
_COLD_DECORATORS = frozenset(
    {"syncguard.cold", "functools.cache", "functools.lru_cache", "functools.cached_property"}
)
# Words that name timing or profiling code (``timed_encoder_operation``, ``profile_run``).
_MEASURING_WORDS = frozenset(
    {"timed", "timer", "timing", "timings", "profile", "profiler", "profiling", "benchmark"}
)
_COMPILED_DECORATORS = frozenset({"torch.compile"})
# Hugging Face input processors: they run on the CPU while requests are prepared.
_PREPROCESSOR_BASES = frozenset(
    {"FeatureExtractionMixin", "SequenceFeatureExtractor", "ProcessorMixin",
     "ImageProcessingMixin", "BaseImageProcessor", "BaseImageProcessorFast",
     "BaseVideoProcessor"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class HotSettings:
    """Config the project phase uses: what is hot, and which parameters hold host data."""

    hot_functions: tuple[str, ...] = ()
    cold_functions: tuple[str, ...] = ()
    compiled_functions: tuple[str, ...] = ()
    host_parameters: tuple[str, ...] = ()  # globs over parameter names (``*grid_thw``)


@dataclass(slots=True)
class Hot:
    """Why a function is hot: its root's reason, the calls down to it, whether it is one."""

    reason: str
    via: tuple[Step, ...]  # call sites from the hot root down to this function
    is_root: bool


@dataclass(slots=True)
class HotPaths:
    """What the hotness pass found: hot functions, the compiled ones, and the branch
    judge that knows which callers may run per step."""

    hot: dict[FunctionId, Hot]
    compiled: set[FunctionId]
    branches: Branches


class Hotness:
    """Hot roots, cold functions and the propagation of hotness over the call graph."""

    def __init__(self, graph: CallGraph, settings: HotSettings) -> None:
        self.graph = graph
        self.bindings = graph.bindings
        self.functions = graph.functions
        self.settings = settings
        self._cold_memo: dict[FunctionId, bool] = {}

    def is_cold(self, fid: FunctionId) -> bool:
        cold = self._cold_memo.get(fid)
        if cold is None:
            cold = self._cold_memo[fid] = self._compute_cold(fid)
        return cold

    def _compute_cold(self, fid: FunctionId) -> bool:
        function = self.functions[fid]
        name = function.qualname.rpartition(".")[2]
        if name == "__init__" or function.marker == "cold":
            return True
        if _MEASURING_WORDS & set(name.lower().split("_")):
            return True  # timing / profiling code: its syncs are the measurement
        if function.decorators and not _COLD_DECORATORS.isdisjoint(function.decorators):
            return True
        patterns = self.settings.cold_functions
        return bool(patterns) and matches(self.bindings.qualified(fid), patterns) is not None

    def _preprocessing(self, fid: FunctionId) -> bool:
        """True for a method of a module that only input processors build (a filterbank
        made by a feature extractor): it runs on the CPU before the model sees the data."""
        class_name = self.functions[fid].class_name
        if class_name is None:
            return False
        builders = self.graph.constructions.get((fid[0], f"{class_name}.__init__"), [])
        return (
            bool(builders)
            and all(self._is_preprocessor(builder) for builder, _ in builders)
            and not self.bindings.subclassed((fid[0], class_name))
        )

    def _is_preprocessor(self, fid: FunctionId) -> bool:
        class_name = self.functions[fid].class_name
        return class_name is not None and any(
            base.rpartition(".")[2] in _PREPROCESSOR_BASES
            for base in self.bindings.mro((fid[0], class_name))[1]
        )

    def _root_reason(self, fid: FunctionId, compiled_refs: set[FunctionId]) -> str | None:
        function = self.functions[fid]
        if function.marker == "hot":
            return "# syncguard: hot"
        for decorator in function.decorators:
            if decorator in _HOT_DECORATORS:
                return _HOT_DECORATORS[decorator]
        if fid in compiled_refs:
            return "torch.compile"
        known = self.bindings.by_path[fid[0]].roots
        if known is not None:
            return known.get(fid[1])
        return self.declared_root_reason(fid)

    def declared_root_reason(self, fid: FunctionId) -> str | None:
        """Why ``fid`` is a hot root by what its class is or by the configured globs;
        this depends only on its file, the interfaces of the others and the settings."""
        function = self.functions[fid]
        name = function.qualname.rpartition(".")[2]
        if function.class_name is not None and name in ("forward", "__call__", "backward"):
            kind = self.bindings.class_kind((fid[0], function.class_name))
            # __call__ of an unresolvable base is usually not a module (processors, tokenizers).
            if (kind == "module" and name != "backward") or (
                kind == "unknown" and name == "forward"
            ):
                return name
            if kind == "autograd" and name != "__call__":
                return f"autograd.Function.{name}"
        here = self.bindings.qualified(fid)
        pattern = matches(here, self.settings.hot_functions)
        if pattern is not None:
            return f"hot-functions: {pattern}"
        if matches(here, self.settings.compiled_functions) is not None:
            return "compiled-functions"
        return None

    def declared_roots(self, path: str) -> dict[str, str]:
        """Qualname -> :meth:`declared_root_reason` of the functions of the file at
        ``path`` that have one."""
        found: dict[str, str] = {}
        for qualname in self.bindings.by_path[path].facts.functions:
            reason = self.declared_root_reason((path, qualname))
            if reason is not None:
                found[qualname] = reason
        return found

    def hot_paths(self) -> HotPaths:
        """Hot functions with why they are hot, and the ones traced by torch.compile."""
        graph = self.graph
        compiled_refs = graph.compiled_refs()
        hot: dict[FunctionId, Hot] = {}
        compiled_roots: list[FunctionId] = []
        for fid in graph.ids:
            reason = self._root_reason(fid, compiled_refs)  # first: most functions have none
            if reason is not None and not self.is_cold(fid) and not self._preprocessing(fid):
                hot[fid] = Hot(reason, (), True)
                function = self.functions[fid]
                if reason in ("torch.compile", "compiled-functions") or any(
                    d in _COMPILED_DECORATORS for d in function.decorators
                ):
                    compiled_roots.append(fid)
        # What any hot root reaches, branches aside: callers outside it never run per step,
        # so what they pass cannot make a branch of a hot function run.
        branches = Branches(graph, self.is_cold, set(hot), graph.reachable(hot, self.is_cold))
        queue = deque(fid for fid in graph.ids if fid in hot)
        while queue:
            fid = queue.popleft()
            info = hot[fid]
            qualified = self.bindings.qualified(fid)
            root = qualified if info.is_root else info.reason[len("called from ") :]
            for index, call in enumerate(self.functions[fid].calls):
                target = graph.targets.get((fid, index))
                if target is None or target in hot or self.is_cold(target):
                    continue
                if branches.never_taken(fid, call.requires):
                    continue
                step = Step(fid[0], call.span.line, qualified)
                hot[target] = Hot(f"called from {root}", (*info.via, step), False)
                queue.append(target)
        return HotPaths(hot, graph.reachable(compiled_roots, self.is_cold), branches)
