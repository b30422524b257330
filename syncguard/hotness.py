"""The hotness pass of the project phase: which functions run on every step, and why.

Hot roots are ``forward`` / ``__call__`` of modules, ``forward`` / ``backward`` of
autograd Functions, compiled and marked functions and the configured globs. Hotness
flows along resolved calls (breadth first, so each function gets its shortest chain
from a root) and stops at cold functions: ``__init__``, memoised and measuring code,
``cold-functions``, and branches no per-step caller takes (:mod:`syncguard.branches`).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

from syncguard.bindings import ClassId, FunctionId
from syncguard.branches import Branches
from syncguard.callgraph import CallGraph
from syncguard.facts import Loop, Step
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
# Words that name timing, profiling or debugging code (``timed_encoder_operation``,
# ``profile_run``, ``_debug_validate_coverage``): its syncs are the measurement or the check;
# and code that prepares the steps or stands in for one (``warmup``, ``capture_graphs``,
# ``_dummy_run``, ``autotune``): it runs before the steps, not in them. A ``*state_dict*``
# function saves or loads a checkpoint: once per checkpoint, not per step.
_COLD_WORDS = frozenset(
    {"timed", "timer", "timing", "timings", "profile", "profiler", "profiling", "benchmark",
     "debug", "warmup", "capture", "dummy", "autotune"}
)  # fmt: skip
_COMPILED_DECORATORS = frozenset({"torch.compile"})
# Words that name code that prepares the steps (``compile_graphs``, ``tune_kernels``): a
# loop there runs before the steps, not in them.
_SETUP_WORDS = frozenset({"compile", "tune", "setup", "init", "initialize"})
# Methods that the training loop of torch itself calls once per step.
_STEP_METHODS = (
    ("torch.optim.Optimizer", "step"),
    ("torch.optim.optimizer.Optimizer", "step"),
)


@dataclass(frozen=True, slots=True)
class HotSettings:
    """Config the project phase uses: what is hot, and which parameters hold host data.

    ``origins`` names where an entry comes from when not from the user's settings
    (``preset transformers``): the reason of a finding then says so."""

    hot_functions: tuple[str, ...] = ()
    cold_functions: tuple[str, ...] = ()
    compiled_functions: tuple[str, ...] = ()
    host_parameters: tuple[str, ...] = ()  # globs over parameter names (``*grid_thw``)
    # ``FUNCTION:PARAM`` globs: parameters of hot functions a framework gives device data.
    device_parameters: tuple[str, ...] = ()
    # ``BASE:METHOD`` globs: a method of a class deriving from BASE (``torch.optim.Optimizer``,
    # qualified as imported) that the framework's own loop calls every step.
    hot_methods: tuple[str, ...] = ()
    # Globs over qualified class names (as imported) of classes that prepare inputs on the
    # host (a framework's input processors): a module only their methods build runs there.
    host_classes: tuple[str, ...] = ()
    origins: tuple[tuple[str, str], ...] = ()  # (entry, where it comes from)
    presets: tuple[str, ...] = ()  # names, or "auto" (see syncguard.presets)


@dataclass(slots=True)
class Hot:
    """Why a function is hot: its root's reason, the calls down to it, whether it is one."""

    reason: str
    via: tuple[Step, ...]  # call sites from the hot root down to this function
    is_root: bool


@dataclass(slots=True)
class HotPaths:
    """What the hotness pass found: hot functions, the compiled ones, the step loops of
    functions that are not hot themselves (function -> the loops, with the reason), the
    functions passed as callbacks (whose arguments no call shows), and the branch judge
    that knows which callers may run per step."""

    hot: dict[FunctionId, Hot]
    compiled: set[FunctionId]
    branches: Branches
    step_loops: dict[FunctionId, list[Loop]] = field(default_factory=dict)
    callbacks: set[FunctionId] = field(default_factory=set)


class Hotness:
    """Hot roots, cold functions and the propagation of hotness over the call graph."""

    def __init__(self, graph: CallGraph, settings: HotSettings) -> None:
        self.graph = graph
        self.bindings = graph.bindings
        self.functions = graph.functions
        self.settings = settings
        self.origins = dict(settings.origins)
        self._hot_methods = [entry.partition(":")[::2] for entry in settings.hot_methods]
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
        if _COLD_WORDS & set(name.lower().split("_")) or "state_dict" in name.lower():
            return True  # measuring, debugging, set-up or checkpoint (state_dict) code
        if function.decorators and not _COLD_DECORATORS.isdisjoint(function.decorators):
            return True
        patterns = self.settings.cold_functions
        if patterns and matches(self.bindings.qualified(fid), patterns) is not None:
            return True
        return self._preprocessing(fid)  # built only by input processors: on the CPU

    def cold_or_test(self, fid: FunctionId) -> bool:
        """True for cold code and for test code: neither says what per-step callers pass
        (a test calls a model's ``forward`` with CPU tensors)."""
        return self.is_cold(fid) or _test_module(self.bindings.module_names[fid[0]])

    def _setup_code(self, fid: FunctionId) -> bool:
        """True for code that prepares the steps (``compile_graphs``, ``setup``) or tests
        them: a loop in it is no step loop."""
        name = self.functions[fid].qualname.rpartition(".")[2]
        if _test_module(self.bindings.module_names[fid[0]]):
            return True  # a test's loop runs its steps to check them, once
        return bool(_SETUP_WORDS & set(name.lower().split("_")))

    def _preprocessing(self, fid: FunctionId) -> bool:
        """True for a method of a module that only input processors (``host-classes`` of the
        presets) build, a filterbank made by a feature extractor: it runs on the CPU before
        the model sees the data."""
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
        patterns = self.settings.host_classes
        return (
            class_name is not None
            and bool(patterns)
            and any(
                matches(ancestor, patterns) is not None
                for ancestor in self.bindings.ancestors((fid[0], class_name))
            )
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
        if function.class_name is not None and function.kind == "method":
            entry = self._hot_method((fid[0], function.class_name), name)
            if entry is not None:
                return self._labelled("hot-methods", entry)
        here = self.bindings.qualified(fid)
        pattern = matches(here, self.settings.hot_functions)
        if pattern is not None:
            return self._labelled("hot-functions", pattern)
        if matches(here, self.settings.compiled_functions) is not None:
            return "compiled-functions"
        return None

    def _hot_method(self, cid: ClassId, name: str) -> str | None:
        """The ``BASE:METHOD`` entry (generic ones first) that makes method ``name`` of
        class ``cid`` a hot root."""
        entries = [*_STEP_METHODS, *self._hot_methods]
        candidates = [(base, method) for base, method in entries if fnmatchcase(name, method)]
        if not candidates:
            return None
        ancestors = self.bindings.ancestors(cid)
        for base, method in candidates:
            if any(fnmatchcase(ancestor, base) for ancestor in ancestors):
                return f"{base}:{method}"
        return None

    def _labelled(self, setting: str, entry: str) -> str:
        """The reason a root gives: the setting and entry, or where the entry comes from."""
        origin = self.origins.get(entry)
        if origin is not None:
            return f"{origin}: {entry}"
        if (entry.partition(":")[0], entry.partition(":")[2]) in _STEP_METHODS:
            return entry.replace(":", ".")
        return f"{setting}: {entry}"

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
        step_loops = self._step_loops(hot)
        loop_callees = [
            target
            for fid, loops in step_loops.items()
            for index, call in enumerate(self.functions[fid].calls)
            if any(loop.holds(call.span.line) for loop in loops)
            for target in graph.callees(fid, index)
            if not self.is_cold(target)
        ]
        # What any hot root or step loop reaches, branches aside: callers outside it never
        # run per step, so what they pass cannot make a branch of a hot function run.
        maybe_hot = graph.reachable([*hot, *loop_callees], self.is_cold)
        branches = Branches(graph, self.is_cold, set(hot), maybe_hot)
        self._propagate(hot, deque(fid for fid in graph.ids if fid in hot), branches)
        # Then what step loops reach (a function already hot keeps its reason).
        queue: deque[FunctionId] = deque()
        for fid, loops in step_loops.items():
            reason = f"step loop in {self.bindings.qualified(fid)}"
            for index, call in enumerate(self.functions[fid].calls):
                if not any(loop.holds(call.span.line) for loop in loops):
                    continue
                if branches.never_taken(fid, call.requires):
                    continue
                for target in graph.callees(fid, index):
                    if target not in hot and not self.is_cold(target):
                        step = Step(fid[0], call.span.line, self.bindings.qualified(fid))
                        hot[target] = Hot(reason, (step,), False)
                        queue.append(target)
        self._propagate(hot, queue, branches)
        callbacks = {
            target
            for fid in hot.keys() | step_loops.keys()
            for index, call in enumerate(self.functions[fid].calls)
            if call.indirect
            for target in graph.callees(fid, index)
        }
        compiled = graph.reachable(compiled_roots, self.is_cold)
        return HotPaths(hot, compiled, branches, step_loops, callbacks)

    def _propagate(self, hot: dict[FunctionId, Hot], queue: deque, branches: Branches) -> None:
        """Hotness from the functions in ``queue`` to what they call, breadth first."""
        graph = self.graph
        while queue:
            fid = queue.popleft()
            info = hot[fid]
            qualified = self.bindings.qualified(fid)
            reason = f"called from {qualified}" if info.is_root else info.reason
            for index, call in enumerate(self.functions[fid].calls):
                for target in graph.callees(fid, index):
                    if target in hot or self.is_cold(target):
                        continue
                    if branches.never_taken(fid, call.requires):
                        break
                    step = Step(fid[0], call.span.line, qualified)
                    hot[target] = Hot(reason, (*info.via, step), False)
                    queue.append(target)

    def _step_loops(self, hot: dict[FunctionId, Hot]) -> dict[FunctionId, list[Loop]]:
        """The loops that run a step each time round, in functions that are not hot: a
        loop whose body does a backward pass or an optimizer step, calls a model, or calls
        (through the tree) a hot root or a function that does, an event or scheduler loop
        (``while True:``) among them. Code that sets up (warm-up, graph capture, dummy
        runs) has none, and a call through it does not count."""
        graph = self.graph
        stepping = self._stepping(hot)
        found: dict[FunctionId, list[Loop]] = {}
        for fid in graph.ids:
            function = self.functions[fid]
            if not function.loops or fid in hot or self.is_cold(fid) or self._setup_code(fid):
                continue
            for loop in function.loops:
                # A function handed on (``partial(fn, self)``) is not run by the loop.
                callees = [
                    target
                    for index, call in enumerate(function.calls)
                    if loop.holds(call.span.line) and not call.indirect
                    for target in graph.callees(fid, index)
                ]
                if loop.flags & {"steps", "model"} or any(target in stepping for target in callees):
                    found.setdefault(fid, []).append(loop)
        return found

    def _stepping(self, hot: dict[FunctionId, Hot]) -> set[FunctionId]:
        """Functions that run a step: hot roots, functions doing a backward pass or an
        optimizer step, and every function that calls one of those (cold ones and set-up
        code aside)."""
        graph = self.graph
        seen = {fid for fid in graph.ids if fid in hot or self.functions[fid].steps}
        queue = deque(seen)
        while queue:
            fid = queue.popleft()
            for caller, _ in graph.callers.get(fid, ()):
                if caller not in seen and not self.is_cold(caller) and not self._setup_code(caller):
                    seen.add(caller)
                    queue.append(caller)
        return seen


def _test_module(module: str) -> bool:
    """``pkg.tests.test_model``, ``pkg.testing``, ``conftest``: test code."""
    parts = module.split(".")
    last = parts[-1]
    return (
        bool({"tests", "test", "testing"} & set(parts))
        or last.startswith("test_")
        or last.endswith("_test")
        or last == "conftest"
    )
