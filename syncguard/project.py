"""The project phase: resolve calls across files, find hot paths, place findings.

Input is the :class:`~syncguard.facts.FileFacts` of every linted file; output
is the list of :class:`Finding`. Three analyses run once over the call graph:

* hot roots (``forward`` of modules, compiled and marked functions, config
  globs) and their propagation to resolvable callees (cold functions stop it);
* parameter summaries: which parameters of a function reach a sync site,
  directly or through further calls (a fixpoint, so cycles terminate);
* compiled reachability, to say that a sync is also a graph break.

A site whose data comes from a parameter is reported where a hot caller passes
device data for it (a sync hidden in a helper), not in the helper itself.
"""

from __future__ import annotations

import fnmatch
import functools
import operator
import re
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from syncguard.facts import (
    MODULE_SCOPE,
    CallSite,
    ClassFacts,
    FileFacts,
    Fix,
    FunctionFacts,
    Requirement,
    Site,
    Span,
    Step,
)
from syncguard.rule import HotPath, Record, Rule
from syncguard.values import (
    CPU,
    FALSY,
    FIELD_PREFIX,
    FORWARDED,
    NONE,
    NOT_NONE,
    TRUTHY,
    Place,
    Value,
)

FunctionId = tuple[str, str]  # (path, qualname within the module)
ClassId = tuple[str, str]

_NN_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module", "nn.Module"})
_AUTOGRAD_FUNCTION = frozenset({"torch.autograd.Function", "torch.autograd.function.Function"})
_PLAIN_BASES = frozenset(
    {"object", "ABC", "abc.ABC", "Generic", "typing.Generic", "Protocol", "typing.Protocol",
     "NamedTuple", "typing.NamedTuple", "TypedDict", "typing.TypedDict", "Enum", "enum.Enum",
     "IntEnum", "enum.IntEnum", "Exception", "ValueError", "RuntimeError", "dict", "list",
     "tuple", "str", "int", "float", "set"}
)  # fmt: skip
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
class SourceFile:
    """A linted file: its display path, its import root and its facts.

    ``targets``, when an earlier run resolved this file's calls against files with
    the same interfaces, gives the callee of each call of each function (by
    qualname); the facts then hold only calls that resolve."""

    path: str
    root: str
    facts: FileFacts
    targets: Mapping[str, Sequence[FunctionId]] | None = None
    # Likewise known from such a run with the same settings: the functions that
    # Project._declared_root_reason finds a reason for, with the reason.
    roots: Mapping[str, str] | None = None


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


@dataclass(frozen=True, slots=True)
class HotSettings:
    """Config the project phase uses: what is hot, and which parameters hold host data."""

    hot_functions: tuple[str, ...] = ()
    cold_functions: tuple[str, ...] = ()
    compiled_functions: tuple[str, ...] = ()
    host_parameters: tuple[str, ...] = ()  # globs over parameter names (``*grid_thw``)


@dataclass(slots=True)
class _Hot:
    reason: str
    via: tuple[Step, ...]  # call sites from the hot root down to this function
    is_root: bool


@dataclass(slots=True)
class _Chain:
    steps: tuple[Step, ...]  # from the function holding the parameter down to the sync line
    site: Site
    site_path: str
    # What the first step's function must be called with for the chain to run.
    requires: tuple[Requirement, ...] = ()


_Matcher = Callable[[str], object]  # a compiled glob's ``match``
# Argument states (see Project._argument_state) that contradict a requirement.
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
        # Memos for one project run: class hierarchies, cold checks and dotted names are
        # asked for again and again while resolving calls and propagating hotness.
        self._mro_memo: dict[ClassId, tuple[list[ClassId], list[str]]] = {}
        self._cold_memo: dict[FunctionId, bool] = {}
        self._dotted_memo: dict[tuple[str, str], tuple[str, str] | None] = {}
        self._excluded_memo: dict[tuple[FunctionId, tuple[Requirement, ...]], bool] = {}
        self._maybe_hot: set[FunctionId] = set()  # set by hot_paths()
        self._bases_memo: dict[str, list[tuple[str, str]]] | None = None
        self._field_memo: dict[tuple[str, str], bool] = {}
        self._roots: set[FunctionId] = set()
        self.by_path = {file.path: file for file in self.files}
        self.non_blocking = frozenset(rule.code for rule in self.rules if not rule.blocks_host)
        self.modules: dict[str, list[SourceFile]] = {}
        for file in sorted(self.files, key=lambda f: f.path):
            self.modules.setdefault(file.facts.module, []).append(file)
        self.functions: dict[FunctionId, FunctionFacts] = {
            (file.path, qualname): function
            for file in self.files
            for qualname, function in file.facts.functions.items()
        }
        self._host_matchers_memo = self._host_matchers()
        self._declared_memo: dict[FunctionId, frozenset[str]] = {}
        # In (path, line) order, as a sort of every function by that key would give.
        self.ids: list[FunctionId] = []
        self.targets: dict[tuple[FunctionId, int], FunctionId] = {}
        self.callers: dict[FunctionId, list[tuple[FunctionId, CallSite]]] = {}
        # ``Cls.__init__`` -> where a ``Cls`` is built (``Cls(...)``): function and call.
        self.constructions: dict[FunctionId, list[tuple[FunctionId, CallSite]]] = {}
        functions, targets, callers = self.functions, self.targets, self.callers
        constructions = self.constructions
        for file in sorted(self.files, key=lambda f: f.path):
            known = file.targets
            in_order = sorted(file.facts.functions.items(), key=lambda item: item[1].line)
            for qualname, function in in_order:
                fid = (file.path, qualname)
                self.ids.append(fid)
                calls = function.calls
                if not calls:
                    continue
                resolved: Sequence[FunctionId | None] | None = (
                    known.get(qualname, ()) if known is not None else None
                )
                if resolved is None or len(resolved) != len(calls):
                    resolved = [self._resolve_call(fid, call) for call in calls]
                for index, (call, target) in enumerate(zip(calls, resolved, strict=True)):
                    if target is None or target not in functions:
                        continue
                    if _constructs(call, target):
                        # ``Cls(...)``: cold (``__init__``), so it tells only who builds what.
                        targets[(fid, index)] = target
                        constructions.setdefault(target, []).append((fid, call))
                    elif not call.once:
                        targets[(fid, index)] = target
                        found = callers.get(target)
                        if found is None:
                            callers[target] = [(fid, call)]
                        else:
                            found.append((fid, call))

    def resolved_calls(self, path: str) -> dict[str, list[tuple[int, FunctionId]]]:
        """For each function of the file at ``path``: (index among its calls, callee) of
        each call that resolves in the tree."""
        found: dict[str, list[tuple[int, FunctionId]]] = {}
        for qualname, function in self.by_path[path].facts.functions.items():
            fid = (path, qualname)
            for index in range(len(function.calls)):
                target = self.targets.get((fid, index))
                if target is not None:
                    found.setdefault(qualname, []).append((index, target))
        return found

    def declared_roots(self, path: str) -> dict[str, str]:
        """Qualname -> :meth:`_declared_root_reason` of the functions of the file at
        ``path`` that have one."""
        found: dict[str, str] = {}
        for qualname in self.by_path[path].facts.functions:
            reason = self._declared_root_reason((path, qualname))
            if reason is not None:
                found[qualname] = reason
        return found

    def _host_matchers(self) -> tuple[_Matcher | None, list[tuple[_Matcher, _Matcher]]]:
        """The ``host-parameters`` globs: one matcher for ``PARAM_GLOB`` entries, and
        (function matcher, parameter matcher) pairs for ``FUNCTION_GLOB:PARAM_GLOB``."""
        anywhere = tuple(p for p in self.settings.host_parameters if ":" not in p)
        scoped = [p.rpartition(":")[::2] for p in self.settings.host_parameters if ":" in p]
        return (
            _compiled_globs(anywhere)[0] if anywhere else None,
            [(_compiled_globs((where,))[0], _compiled_globs((name,))[0]) for where, name in scoped],
        )

    def _declared_host(self, fid: FunctionId) -> frozenset[str]:
        """Parameters of ``fid`` that the ``host-parameters`` setting names."""
        found = self._declared_memo.get(fid)
        if found is None:
            any_name, by_function = self._host_matchers_memo
            matchers = [any_name] if any_name is not None else []
            if by_function:
                qualified = self.qualified(fid)
                matchers += [name for where, name in by_function if where(qualified)]
            params = self.functions[fid].params
            found = frozenset(p for p in params if any(m(p) for m in matchers))
            self._declared_memo[fid] = found
        return found

    # ------------------------------------------------------------ resolution

    def qualified(self, fid: FunctionId) -> str:
        module = self.by_path[fid[0]].facts.module
        return module if fid[1] == MODULE_SCOPE else f"{module}.{fid[1]}"

    def _module_file(self, module: str, root: str) -> SourceFile | None:
        candidates = self.modules.get(module)
        if not candidates:
            return None
        for candidate in candidates:
            if candidate.root == root:
                return candidate
        return candidates[0]

    def _resolve_dotted(self, dotted: str, root: str, depth: int = 0) -> tuple[str, str] | None:
        """(path, qualname) of the function or class ``dotted`` names, if in the tree."""
        if depth == 0:
            key = (dotted, root)
            if key not in self._dotted_memo:
                self._dotted_memo[key] = self._resolve_dotted(dotted, root, 1)
            return self._dotted_memo[key]
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            file = self._module_file(".".join(parts[:cut]), root)
            if file is None:
                continue
            rest = ".".join(parts[cut:])
            facts = file.facts
            if rest in facts.functions or rest in facts.classes:
                return (file.path, rest)
            head, _, tail = rest.partition(".")
            reexport = facts.imports.get(head)
            if reexport is not None and depth < 8:
                return self._resolve_dotted(
                    f"{reexport}.{tail}" if tail else reexport, file.root, depth + 1
                )
            return None
        return None

    def _resolve_name(self, fid: FunctionId, name: str) -> tuple[str, str] | None:
        path, qualname = fid
        file = self.by_path[path]
        facts = file.facts
        parts = qualname.split(".") if qualname != MODULE_SCOPE else []
        while parts:  # enclosing function scopes (nested defs), innermost first
            prefix = ".".join(parts)
            candidate = f"{prefix}.{name}"
            if candidate in facts.functions and prefix in facts.functions:
                return (path, candidate)
            parts.pop()
        if name in facts.functions or name in facts.classes:
            return (path, name)
        imported = facts.imports.get(name)
        if imported:
            return self._resolve_dotted(imported, file.root)
        return None

    def _resolve_class(self, path: str, name: str) -> ClassId | None:
        file = self.by_path[path]
        if name in file.facts.classes:
            return (path, name)
        head, _, tail = name.partition(".")
        imported = file.facts.imports.get(head)
        if imported is not None:
            found = self._resolve_dotted(f"{imported}.{tail}" if tail else imported, file.root)
        else:
            found = self._resolve_dotted(name, file.root) if "." in name else None
        if found is not None and found[1] in self.by_path[found[0]].facts.classes:
            return found
        return None

    def _on_host(self, path: str, value: Value) -> bool:
        """True for a value the per-file phase could not place but the tree can: a field
        of a class from another module that declares it host data (``# CPU tensor``)."""
        if value.place is Place.HOST:
            return True
        for tag in value.tags:
            if tag.startswith(FIELD_PREFIX):
                key = (self.by_path[path].root, tag)
                found = self._field_memo.get(key)
                if found is None:
                    found = self._field_memo[key] = self._host_field(*key)
                return found
        return False

    def _host_field(self, root: str, tag: str) -> bool:
        class_name, _, attribute = tag[len(FIELD_PREFIX) :].rpartition(".")
        found = self._resolve_dotted(class_name, root)
        if found is None or found[1] not in self.by_path[found[0]].facts.classes:
            return False
        return any(attribute in self._class(cid).host_fields for cid in self.mro(found)[0])

    def _class(self, cid: ClassId) -> ClassFacts:
        return self.by_path[cid[0]].facts.classes[cid[1]]

    def mro(self, cid: ClassId) -> tuple[list[ClassId], list[str]]:
        """In-tree classes in method resolution order, and the external bases met."""
        found = self._mro_memo.get(cid)
        if found is None:
            found = self._mro_memo[cid] = self._compute_mro(cid)
        return found

    def _compute_mro(self, cid: ClassId) -> tuple[list[ClassId], list[str]]:
        order: list[ClassId] = []
        external: list[str] = []
        stack = [cid]
        while stack:
            current = stack.pop(0)
            if current in order:
                continue
            order.append(current)
            for base in self._class(current).bases:
                resolved = self._resolve_class(current[0], base)
                if resolved is None:
                    external.append(base)
                else:
                    stack.append(resolved)
        return order, external

    def _method(self, cid: ClassId, name: str) -> FunctionId | None:
        for path, qualname in self.mro(cid)[0]:
            candidate = f"{qualname}.{name}"
            if candidate in self.by_path[path].facts.functions:
                return (path, candidate)
        return None

    def _resolve_call(self, fid: FunctionId, call: CallSite) -> FunctionId | None:
        kind = call.callee[0]
        function = self.functions[fid]
        path = fid[0]
        found: tuple[str, str] | None = None
        if kind == "name":
            found = self._resolve_name(fid, call.callee[1])
        elif kind == "dotted":
            found = self._resolve_dotted(call.callee[1], self.by_path[path].root)
        elif kind in ("self", "attr") and function.class_name is not None:
            owner: ClassId | None = (path, function.class_name)
            method = call.callee[-1]
            if kind == "attr" and owner is not None:
                type_name = self._attribute_type(owner, call.callee[1])
                owner = self._resolve_class(path, type_name) if type_name else None
            found = self._method(owner, method) if owner is not None else None
            if found is None and kind == "self":
                found = self._submodule_call(path, function.class_name, method)
        if found is not None and found[1] in self.by_path[found[0]].facts.classes:
            found = (found[0], f"{found[1]}.__init__")  # a construction: the class's own
        if found is None or found not in self.functions:
            return None  # unknown, external, or a class without an __init__ of its own
        return found

    def _submodule_call(self, path: str, class_name: str, attribute: str) -> FunctionId | None:
        """``self.visual(x)``, ``visual`` an attribute made in ``__init__`` from a class of the
        tree: its ``__call__``, or its ``forward`` when it may be an ``nn.Module``."""
        type_name = self._attribute_type((path, class_name), attribute)
        owner = self._resolve_class(path, type_name) if type_name else None
        if owner is None:
            return None
        found = self._method(owner, "__call__")
        if found is None and self._class_kind(owner) in ("module", "unknown"):
            found = self._method(owner, "forward")
        return found

    def _attribute_type(self, cid: ClassId, attribute: str) -> str | None:
        for current in self.mro(cid)[0]:
            type_name = self._class(current).attribute_types.get(attribute)
            if type_name is not None:
                return type_name
        return None

    # ------------------------------------------------------------- hot paths

    def _class_kind(self, cid: ClassId) -> str | None:
        """``module`` for nn.Module subclasses, ``unknown`` when a base cannot be resolved
        (it may be a module), ``autograd`` for Functions, None for plain classes."""
        external = self.mro(cid)[1]
        if any(base in _AUTOGRAD_FUNCTION for base in external):
            return "autograd"
        if any(base in _NN_MODULE for base in external):
            return "module"
        if any(base not in _PLAIN_BASES for base in external):
            return "unknown"
        return None

    def _is_cold(self, fid: FunctionId) -> bool:
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
        return bool(patterns) and _matches(self.qualified(fid), patterns) is not None

    def _preprocessing(self, fid: FunctionId) -> bool:
        """True for a method of a module that only input processors build (a filterbank
        made by a feature extractor): it runs on the CPU before the model sees the data."""
        class_name = self.functions[fid].class_name
        if class_name is None:
            return False
        builders = self.constructions.get((fid[0], f"{class_name}.__init__"), [])
        return (
            bool(builders)
            and all(self._is_preprocessor(builder) for builder, _ in builders)
            and not self._subclassed((fid[0], class_name))
        )

    def _is_preprocessor(self, fid: FunctionId) -> bool:
        class_name = self.functions[fid].class_name
        return class_name is not None and any(
            base.rpartition(".")[2] in _PREPROCESSOR_BASES
            for base in self.mro((fid[0], class_name))[1]
        )

    def _subclassed(self, cid: ClassId) -> bool:
        """True when a class of the tree derives from ``cid`` (directly is enough)."""
        if self._bases_memo is None:  # base name as written, last part -> (file, base)
            self._bases_memo = {}
            for file in self.files:
                for facts in file.facts.classes.values():
                    for base in facts.bases:
                        name = base.rpartition(".")[2]
                        self._bases_memo.setdefault(name, []).append((file.path, base))
        written = self._bases_memo.get(cid[1].rpartition(".")[2], ())
        return any(self._resolve_class(path, base) == cid for path, base in written)

    def _root_reason(self, fid: FunctionId, compiled_refs: set[FunctionId]) -> str | None:
        function = self.functions[fid]
        if function.marker == "hot":
            return "# syncguard: hot"
        for decorator in function.decorators:
            if decorator in _HOT_DECORATORS:
                return _HOT_DECORATORS[decorator]
        if fid in compiled_refs:
            return "torch.compile"
        known = self.by_path[fid[0]].roots
        if known is not None:
            return known.get(fid[1])
        return self._declared_root_reason(fid)

    def _declared_root_reason(self, fid: FunctionId) -> str | None:
        """Why ``fid`` is a hot root by what its class is or by the configured globs;
        this depends only on its file, the interfaces of the others and the settings."""
        function = self.functions[fid]
        name = function.qualname.rpartition(".")[2]
        if function.class_name is not None and name in ("forward", "__call__", "backward"):
            kind = self._class_kind((fid[0], function.class_name))
            # __call__ of an unresolvable base is usually not a module (processors, tokenizers).
            if (kind == "module" and name != "backward") or (
                kind == "unknown" and name == "forward"
            ):
                return name
            if kind == "autograd" and name != "__call__":
                return f"autograd.Function.{name}"
        here = self.qualified(fid)
        pattern = _matches(here, self.settings.hot_functions)
        if pattern is not None:
            return f"hot-functions: {pattern}"
        if _matches(here, self.settings.compiled_functions) is not None:
            return "compiled-functions"
        return None

    def _compiled_refs(self) -> set[FunctionId]:
        found: set[FunctionId] = set()
        for file in self.files:
            for caller, reference in file.facts.compiled:
                fid = (file.path, caller)
                if fid not in self.functions:
                    continue
                target = self._resolve_call(
                    fid, CallSite(reference, Span(0, 0, 0, 0), (0, 0), (), (), False)
                )
                if target is not None:
                    found.add(target)
        return found

    def hot_paths(self) -> tuple[dict[FunctionId, _Hot], set[FunctionId]]:
        """Hot functions with why they are hot, and the ones traced by torch.compile."""
        compiled_refs = self._compiled_refs()
        hot: dict[FunctionId, _Hot] = {}
        compiled_roots: list[FunctionId] = []
        for fid in self.ids:
            reason = self._root_reason(fid, compiled_refs)  # first: most functions have none
            if reason is not None and not self._is_cold(fid) and not self._preprocessing(fid):
                hot[fid] = _Hot(reason, (), True)
                function = self.functions[fid]
                if reason in ("torch.compile", "compiled-functions") or any(
                    d in _COMPILED_DECORATORS for d in function.decorators
                ):
                    compiled_roots.append(fid)
        # What any hot root reaches, branches aside: callers outside it never run per step,
        # so what they pass cannot make a branch of a hot function run (_never_taken).
        self._maybe_hot = self._reachable(hot)
        self._roots = set(hot)
        queue = deque(fid for fid in self.ids if fid in hot)
        while queue:
            fid = queue.popleft()
            info = hot[fid]
            root = self.qualified(fid) if info.is_root else info.reason[len("called from ") :]
            for index, call in enumerate(self.functions[fid].calls):
                target = self.targets.get((fid, index))
                if target is None or target in hot or self._is_cold(target):
                    continue
                if self._never_taken(fid, call.requires):
                    continue
                step = Step(fid[0], call.span.line, self.qualified(fid))
                hot[target] = _Hot(f"called from {root}", (*info.via, step), False)
                queue.append(target)
        return hot, self._reachable(compiled_roots)

    def _reachable(self, roots: Iterable[FunctionId]) -> set[FunctionId]:
        seen = set(roots)
        queue = deque(seen)
        while queue:
            fid = queue.popleft()
            for index in range(len(self.functions[fid].calls)):
                target = self.targets.get((fid, index))
                if target is not None and target not in seen and not self._is_cold(target):
                    seen.add(target)
                    queue.append(target)
        return seen

    # ------------------------------------------------------- hidden syncs

    def _argument(self, call: CallSite, target: FunctionId, name: str) -> Value | None:
        function = self.functions[target]
        params = function.params
        if name not in params:
            return None
        bound = (
            function.kind == "classmethod"
            or (call.callee[0] in ("self", "attr") and function.kind == "method")
            or _constructs(call, target)
        )
        index = params.index(name) - (1 if bound else 0)
        if 0 <= index < len(call.args):
            return call.args[index]
        for keyword, value in call.kwargs:
            if keyword == name:
                return value
        return None

    def _argument_state(self, call: CallSite, target: FunctionId, name: str) -> str | None:
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
            argument = self._argument(call, target, name)
            if argument is None:
                if call.spread or call.forwards_kwargs:
                    return None
                return dict(self.functions[target].literal_defaults).get(name)
        for tag, state in _ARGUMENT_STATES:
            if tag in argument.tags:
                return state
        return next((tag for tag in argument.tags if tag.startswith("num:")), None)

    def _call_excludes(
        self, call: CallSite, target: FunctionId, requires: tuple[Requirement, ...]
    ) -> bool:
        """True when ``call`` passes ``target`` arguments that contradict ``requires``:
        ``None`` where the code needs ``p is not None``, a default ``False`` for ``if p:``."""
        return any(
            _contradicts(state, self._argument_state(call, target, name))
            for name, state in requires
        )

    def _forwarded(
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
            argument = self._argument(call, target, name)
            if argument is None and through_kwargs:
                default = dict(self.functions[target].literal_defaults).get(name, "")
                found.append((f"**{name}={default}", state))
            elif argument is not None and FORWARDED in argument.tags:
                found.extend((outer, state) for outer in argument.params)
        return tuple(found)

    def _never_taken(self, fid: FunctionId, requires: tuple[Requirement, ...]) -> bool:
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
                for caller, call in self.callers.get(fid, ())
                if caller != fid
                and (
                    caller in self._maybe_hot or (fid in self._roots and not self._is_cold(caller))
                )
            ]
            found = bool(callers) and all(
                self._call_excludes(call, fid, requires)
                or self._never_taken(caller, self._forwarded(call, fid, requires))
                for caller, call in callers
            )
            self._excluded_memo[key] = found
        return found

    def _flag_never_set(self, fid: FunctionId, attribute: str, state: str) -> bool:
        """True when ``self.<attribute>`` of ``fid``'s class comes from an ``__init__``
        parameter that every construction in the tree (at least one) gives a value
        contradicting ``state``: ``if self.adaptive:`` where all pass ``adaptive=False``."""
        class_name = self.functions[fid].class_name
        if class_name is None:
            return False
        parameter = self._class((fid[0], class_name)).init_parameters.get(attribute)
        init = (fid[0], f"{class_name}.__init__")
        built = self.constructions.get(init, [])
        return (
            parameter is not None
            and bool(built)
            and all(
                _contradicts(state, self._argument_state(call, init, parameter))
                for _, call in built
            )
            and not self._subclassed((fid[0], class_name))  # else a subclass may set it
        )

    def summaries(
        self, roots: Collection[FunctionId] = ()
    ) -> dict[FunctionId, dict[str, dict[tuple, _Chain]]]:
        """For each function: parameter -> the sync sites device data for it reaches.

        Sites of ``roots`` (hot roots, which report their own sites) do not reach
        their callers: ``self.encoder(x)`` does not repeat the encoder's findings."""
        summary: dict[FunctionId, dict[str, dict[tuple, _Chain]]] = {}
        pending: deque[FunctionId] = deque()
        for fid in self.ids:
            for site in self.functions[fid].sites:
                if site.value.place is not Place.PARAM or self._on_host(fid[0], site.value):
                    continue
                key = (fid, site.code, site.span)
                step = Step(fid[0], site.span.line, self.qualified(fid))
                for name in site.value.params - self._declared_host(fid):
                    entries = summary.setdefault(fid, {}).setdefault(name, {})
                    entries.setdefault(key, _Chain((step,), site, fid[0], site.requires))
                if fid not in pending:
                    pending.append(fid)
        while pending:
            target = pending.popleft()
            if target in roots:
                continue
            for caller, call in self.callers.get(target, ()):
                changed = False
                caller_params = self.functions[caller].params
                # list(): a recursive call (caller == target) adds to the entries it reads.
                for name, entries in list(summary.get(target, {}).items()):
                    argument = self._argument(call, target, name)
                    if (
                        argument is None
                        or argument.place is not Place.PARAM
                        or self._on_host(caller[0], argument)
                    ):
                        continue
                    step = Step(caller[0], call.span.line, self.qualified(caller))
                    for outer in argument.params:
                        if outer not in caller_params or outer in self._declared_host(caller):
                            continue
                        mine = summary.setdefault(caller, {}).setdefault(outer, {})
                        for key, chain in list(entries.items()):
                            if self._call_excludes(call, target, chain.requires):
                                continue
                            requires = call.requires + self._forwarded(call, target, chain.requires)
                            known = mine.get(key)
                            if known is None:
                                mine[key] = _Chain(
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

    # -------------------------------------------------------------- findings

    def host_parameters(
        self, wanted: Iterable[FunctionId] | None = None
    ) -> dict[FunctionId, frozenset[str]]:
        """Parameters that every caller in the tree (cold ones and the function itself
        aside) passes host data for: host values, or parameters of its own that are such.
        A root such as a submodule's ``forward`` then sees host data there
        (``self.encoder(x, lens_cpu)``), where without callers they may hold anything.

        With ``wanted``, only the functions that are asked for and their callers,
        transitively, are looked at (what a function learns depends on its callers
        alone): the same answer for those, at a fraction of the cost."""
        scope = self.functions if wanted is None else self._upstream(wanted)
        callers = {
            fid: [
                (caller, call)
                for caller, call in self.callers.get(fid, ())
                if caller != fid and not self._is_cold(caller)
            ]
            for fid in scope
        }
        known: dict[FunctionId, set[str]] = {fid: set(self._declared_host(fid)) for fid in scope}
        callees: dict[FunctionId, set[FunctionId]] = {}
        for fid, calls in callers.items():
            for caller, _ in calls:
                callees.setdefault(caller, set()).add(fid)
        # A least fixpoint (only what some chain of callers proves), as a worklist: a
        # function is looked at again only when one of its callers learned something.
        pending = deque(fid for fid in self.ids if callers.get(fid))
        queued = set(pending)
        while pending:
            fid = pending.popleft()
            queued.discard(fid)
            calls = callers[fid]
            grew = False
            for name in self.functions[fid].params:
                if name in known[fid]:
                    continue
                if all(
                    argument is not None
                    and (
                        argument.place is Place.HOST
                        or (argument.place is Place.PARAM and argument.params <= known[caller])
                    )
                    for caller, argument in (
                        (caller, self._argument(call, fid, name)) for caller, call in calls
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

    def _upstream(self, wanted: Iterable[FunctionId]) -> set[FunctionId]:
        """``wanted`` and every function that calls one of them, transitively (cold
        callers and recursion aside, as :meth:`host_parameters` counts callers)."""
        seen = set(wanted)
        stack = list(seen)
        while stack:
            fid = stack.pop()
            for caller, _ in self.callers.get(fid, ()):
                if caller not in seen and caller != fid and not self._is_cold(caller):
                    seen.add(caller)
                    stack.append(caller)
        return seen

    @staticmethod
    def _passes_parameters(function: FunctionFacts) -> bool:
        """True when some site or call of ``function`` works on its parameters' data."""
        return any(site.value.place is Place.PARAM for site in function.sites) or any(
            value.place is Place.PARAM
            for call in function.calls
            for value in (*call.args, *(value for _, value in call.kwargs))
        )

    def findings(self, scope: str = "hot") -> list[Finding]:
        hot, compiled = self.hot_paths()
        summary = self.summaries({fid for fid, info in hot.items() if info.is_root})
        # What callers pass matters only where a root's own parameters reach a sync.
        host_parameters = self.host_parameters(
            fid
            for fid in self.ids
            if (hot[fid].is_root if fid in hot else scope == "all")
            and self._passes_parameters(self.functions[fid])
        )
        results: list[Finding] = []
        for fid in self.ids:
            info = hot.get(fid)
            if info is None and scope != "all":
                continue
            function = self.functions[fid]
            treat_as_root = info is None or info.is_root
            severity = "error" if info is not None else "warning"
            reason = info.reason if info is not None else None
            via = info.via if info is not None else ()
            here = self.qualified(fid)
            graph_break = fid in compiled
            on_host = host_parameters.get(fid, frozenset())  # what all callers pass host
            for site in function.sites:
                if site.value.place is Place.PARAM and (
                    not treat_as_root or site.value.params <= on_host
                ):
                    continue
                if self._on_host(fid[0], site.value):
                    continue  # a host field of a class from another module
                if self._never_taken(fid, site.requires):
                    continue  # a branch no caller takes
                step = Step(fid[0], site.span.line, here)
                results.append(
                    self._finding(site, fid[0], site.span, site.statement, severity, reason,
                                  (*via, step), site.in_loop, graph_break, site.fix, (),
                                  site.suggestion)
                )  # fmt: skip
            for index, call in enumerate(function.calls):
                target = self.targets.get((fid, index))
                if target is None or target not in summary or self._is_cold(target):
                    continue
                target_hot = hot.get(target)
                if target_hot is not None and target_hot.is_root:
                    continue  # the callee reports its own sites
                if info is None and target_hot is None:
                    continue  # cold to cold: the callee reports its sites itself
                if self._never_taken(fid, call.requires):
                    continue
                # One finding per rule code and call: the first sync site, with a count.
                by_code: dict[str, list[tuple[str, _Chain]]] = {}
                for name, entries in sorted(summary[target].items()):
                    argument = self._argument(call, target, name)
                    if argument is None or self._on_host(fid[0], argument):
                        continue
                    if argument.place is Place.PARAM and (
                        not treat_as_root or argument.params <= on_host
                    ):
                        continue  # reported where the caller's caller passes device data
                    for chain in entries.values():
                        if not self._call_excludes(
                            call, target, chain.requires
                        ) and not self._never_taken(
                            fid, self._forwarded(call, target, chain.requires)
                        ):
                            by_code.setdefault(chain.site.code, []).append((name, chain))
                for group in by_code.values():
                    group.sort(key=lambda item: (item[1].site_path, item[1].site.span.line))
                    name, chain = group[0]
                    sync = chain.site
                    sites = {(c.site_path, c.site.span) for _, c in group}
                    callee = self.qualified(target).rpartition(".")[2]
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
                    at_sites = tuple((c.site_path, *c.site.statement) for _, c in group)
                    results.append(
                        self._finding(
                            sync, fid[0], call.span, call.statement, severity, reason,
                            (*via, step, *chain.steps), call.in_loop, graph_break,
                            None, at_sites, suggestion, message,
                        )
                    )  # fmt: skip
        results.extend(self._project_findings(hot, scope))
        results.sort(key=lambda finding: finding.sort_key)
        return results

    def _project_findings(self, hot: Mapping[FunctionId, _Hot], scope: str) -> list[Finding]:
        """Findings of the rules' project-level checks (see :mod:`syncguard.rule`)."""
        view = _View(self, hot, scope)
        results: list[Finding] = []
        for rule in self.rules:
            for report in rule.check_project(view):
                fid = (report.path, report.function)
                info = hot.get(fid)
                if fid not in self.functions or (info is None and scope != "all"):
                    continue
                step = Step(report.path, report.span.line, self.qualified(fid))
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

    def __init__(self, project: Project, hot: Mapping[FunctionId, _Hot], scope: str) -> None:
        self.project = project
        self.hot_functions = hot
        self.scope = scope
        self.by_code: dict[str, list[Record]] = {}

    def records(self, code: str) -> Sequence[Record]:
        found = self.by_code.get(code)
        if found is None:
            functions = self.project.functions
            found = [
                Record(file.path, qualname, item)
                for file in sorted(self.project.files, key=lambda f: f.path)
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
        return self.project.qualified((path, function))


def _constructs(call: CallSite, target: FunctionId) -> bool:
    """True for ``Cls(...)`` resolved to ``Cls.__init__`` (not ``Base.__init__(self)``)."""
    return target[1].endswith(".__init__") and not call.callee[-1].endswith("__init__")


def _contradicts(required: str, passed: str | None) -> bool:
    """True when an argument in state ``passed`` (see ``Project._argument_state``) cannot
    satisfy the requirement ``required``: ``"none"``, ``"true"``, ``"cmp:>:0"``..."""
    if passed is None:
        return False
    if passed.startswith("num:"):
        number = float(passed[4:])
        if required.startswith("cmp:"):
            _, comparison, bound = required.split(":", 2)
            return not _COMPARE[comparison](number, float(bound))
        return {"none": True, "true": number == 0, "false": number != 0}.get(required, False)
    return passed in _CONTRADICTS.get(required, ())


def _matches(name: str, patterns: tuple[str, ...]) -> str | None:
    """The first glob of ``patterns`` that matches ``name``."""
    if not patterns:
        return None
    any_match, each = _compiled_globs(patterns)
    if any_match(name) is None:  # one regex for all: most names match none
        return None
    for pattern, match in each:
        if match(name):
            return pattern
    return None


@functools.lru_cache(maxsize=32)
def _compiled_globs(
    patterns: tuple[str, ...],
) -> tuple[Callable[[str], object], tuple[tuple[str, Callable[[str], object]], ...]]:
    """A matcher for any of ``patterns``, and one for each."""
    translated = [fnmatch.translate(pattern) for pattern in patterns]
    any_match = re.compile("|".join(f"(?:{regex})" for regex in translated)).match
    return any_match, tuple(
        (pattern, re.compile(regex).match)
        for pattern, regex in zip(patterns, translated, strict=True)
    )


def root_of(path: str, module: str, is_package: bool) -> str:
    """The folder from which ``module`` is importable, given the file's display path."""
    depth = module.count(".") + (1 if is_package else 0)
    parent = PurePath(path).parent
    for _ in range(depth):
        parent = parent.parent
    return str(parent)
