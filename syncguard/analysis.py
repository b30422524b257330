"""The per-file phase: one pass over a file's syntax tree.

It tracks, statement by statement, where each local value lives (see
:mod:`syncguard.values` and :mod:`syncguard.placement`), lets every rule visit the
nodes it cares about (:mod:`syncguard.walker`), and records the facts the project
phase needs: functions, classes, imports, sync sites and outgoing calls with the
placement of their arguments. Nothing here knows about hot paths or about
individual rules.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence

from syncguard.bodies import (
    builds,
    class_body,
    method_names,
    part_sources,
    used_as_tensors,
)
from syncguard.conditions import (
    literal_state,
    literal_tag,
)
from syncguard.declarations import (
    SEQUENCE_ANNOTATION,
    TENSOR_ANNOTATION,
    class_annotation,
    declared_host_fields,
    init_attribute_types,
    is_host_annotation,
)
from syncguard.facts import (
    MODULE_SCOPE,
    CallSite,
    ClassFacts,
    FileFacts,
    Fix,
    FunctionFacts,
    Site,
    source_lines,
)
from syncguard.naming import (
    as_named,
    cpu_version,
    last_name,
    names_model,
    names_stepper,
    says_cpu,
)
from syncguard.receivers import annotation_type, union
from syncguard.rule import Rule
from syncguard.scope import Scope
from syncguard.spreads import spread_result
from syncguard.torch_api import GRAD_SCALERS, torch_name
from syncguard.values import (
    BOOL,
    DEVICE,
    FORWARDED,
    GRAD_SCALER,
    HOST,
    INDEX,
    NOT_NONE,
    PYSEQ,
    TENSOR,
    UNKNOWN,
    Place,
    Value,
    param,
)
from syncguard.walker import Walker

_MARKER = re.compile(r"#\s*syncguard:\s*(hot|cold)\b")
# A parameter named or annotated as a module lives as long as the model does.
_MODULE_WORDS = frozenset({"layer", "module", "model"})
_MODULE_ANNOTATION = re.compile(r"Module|Layer")

_VISIT_METHODS: dict[type, tuple[tuple[type, str], ...]] = {}


def _visit_methods(rule_class: type) -> tuple[tuple[type, str], ...]:
    """(node type, method name) of each ``visit_<NodeType>`` method of a rule class."""
    found = _VISIT_METHODS.get(rule_class)
    if found is None:
        found = _VISIT_METHODS[rule_class] = tuple(
            (node_type, attribute)
            for attribute in dir(rule_class)
            if attribute.startswith("visit_")
            and isinstance(node_type := getattr(ast, attribute[len("visit_") :], None), type)
        )
    return found


class FileAnalyzer(Walker):
    """Computes :class:`FileFacts` for one parsed file; implements the rule ``Context``."""

    def __init__(
        self, tree: ast.Module, source: str, module: str, is_package: bool, rules: Sequence[Rule]
    ) -> None:
        self.tree = tree
        self.lines = source_lines(source)
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.imports: dict[str, str] = {}
        self.functions: dict[str, FunctionFacts] = {}
        self.classes: dict[str, ClassFacts] = {}
        self.compiled: list[tuple[str, tuple[str, ...]]] = []
        self.records: dict[str, list[tuple[str, object]]] = {}
        self.module_defs = {
            node.name
            for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        }
        self.module_names = {
            target.id
            for node in tree.body
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(target, ast.Name)
        }
        self.method_names = method_names(tree.body)
        self.visitors = self._visitors(rules, source)
        self.host_fields, self.host_records = declared_host_fields(tree, self.lines)
        self.class_attributes: dict[str, dict[str, Value]] = {}
        self.attribute_values: dict[str, dict[str, tuple]] = {}
        # Class -> the containers of ``self`` its methods store items into.
        self.filled_attributes: dict[str, set[str]] = {}
        # Method -> the names it calls tensor-only methods on (read with its class's body).
        self.method_receivers: dict[ast.AST, set[str]] = {}
        self.registrars: dict[str, str] = {}
        # Functions (analysed so far, by qualified name) whose every return is device data.
        self.device_results: dict[str, Value] = {}
        self.result_kinds: dict[str, frozenset[str]] = {}  # functions returning tensors
        self.scope = self._new_scope(
            FunctionFacts(MODULE_SCOPE, 1, None, (), "module", (), None), {}, None, None
        )
        self.module_scope = self.scope
        self.module_scope.host_code = says_cpu(module.rpartition(".")[2])
        self.statement: tuple[int, int] = (1, 1)
        self.rule_code = ""

    @staticmethod
    def _visitors(rules: Sequence[Rule], source: str) -> dict[type, list[tuple[str, Callable]]]:
        visitors: dict[type, list[tuple[str, Callable]]] = {}
        for rule in rules:
            if rule.tokens and not any(token in source for token in rule.tokens):
                continue
            for node_type, attribute in _visit_methods(type(rule)):
                visitors.setdefault(node_type, []).append((rule.code, getattr(rule, attribute)))
        return visitors

    def analyze(self) -> FileFacts:
        self.functions[MODULE_SCOPE] = self.scope.facts
        self._body(self.tree.body)
        return FileFacts(
            self.module,
            self.imports,
            self.functions,
            self.classes,
            self.compiled,
            self.records,
            dict(self.module_scope.types),
            self.registrars,
        )

    # ------------------------------------------------------------------ Context

    @property
    def function(self) -> str:
        return self.scope.facts.qualname

    @property
    def in_loop(self) -> bool:
        return self.scope.loop_depth > 0

    @property
    def default_device(self) -> bool:
        return self.scope.default_device

    def record(self, item: object) -> None:
        """Keep a rule-specific fact for the project phase (under the rule's code), with the
        qualified name of the function it comes from."""
        self.records.setdefault(self.rule_code, []).append((self.scope.facts.qualname, item))

    def assigned(self, name: str) -> ast.expr | None:
        return self.scope.assigned.get(name)

    def report(
        self,
        node: ast.AST,
        *,
        subject: ast.expr | None,
        suggestion: str,
        message: str | None = None,
        fix: Fix | None = None,
    ) -> None:
        value = DEVICE if subject is None else self.value(subject)
        if value.on_host or self.scope.lazy_depth or self.scope.host_code:
            return
        requires = self.scope.requires
        destination = self._destination_parameter(subject)
        if destination is not None:  # a copy to the device a caller names
            requires = (*requires, (destination, "accelerator"))
        self.scope.facts.sites.append(
            Site(
                code=self.rule_code,
                span=self.op_span(node),
                statement=self.statement,
                message=message or "",
                suggestion=suggestion,
                value=value.placement(),
                in_loop=self.in_loop,
                fix=fix,
                requires=requires,
            )
        )

    def _destination_parameter(self, node: ast.expr | None) -> str | None:
        """The parameter naming the device a call moves data to: ``x.to(device)``,
        ``torch.tensor(data, device=device)``; a caller passing ``"cpu"`` or None makes
        it a host copy."""
        if not isinstance(node, ast.Call):
            return None
        device = self._keyword(node, "device")
        if device is None and isinstance(node.func, ast.Attribute) and node.func.attr == "to":
            device = node.args[0] if node.args else None
        scope = self.scope
        if (
            isinstance(device, ast.Name)
            and device.id in scope.facts.params
            and device.id not in scope.rebound
        ):
            return device.id
        return None

    # ------------------------------------------------------------------ calls

    def _call(self, node: ast.Call) -> None:
        func = node.func
        if self.qualified_name(func) == "torch.compile" and node.args:
            reference = self.callee_of(node.args[0])
            if reference is not None:
                self.compiled.append((self.scope.facts.qualname, reference))
        callee = self.callee_of(func)
        self._note_loop_kinds(node, callee)
        if callee is None or (
            # Code that runs once matters only for what it builds (a ``Cls(...)``).
            self.scope.lazy_depth and not builds(callee)
        ):
            return
        calls = self.scope.facts.calls
        calls.append(
            CallSite(
                callee=callee,
                span=self.span(node),
                statement=self.statement,
                args=tuple(
                    self._argument_value(arg)
                    for arg in node.args
                    if not isinstance(arg, ast.Starred)
                ),
                kwargs=self._keyword_values(node),
                in_loop=self.in_loop,
                requires=self.scope.requires,
                spread=any(isinstance(arg, ast.Starred) for arg in node.args)
                or any(
                    keyword.arg is None and not self._own_kwargs(keyword.value)
                    for keyword in node.keywords
                ),
                forwards_kwargs=any(
                    keyword.arg is None and self._own_kwargs(keyword.value)
                    for keyword in node.keywords
                ),
                once=self.scope.lazy_depth > 0,
                spread_parts=self._spread_parts(node),
            )
        )
        if self.scope.lazy_depth:
            return
        for reference in self.reference_arguments(node):  # callbacks: called by the callee
            calls.append(
                CallSite(
                    reference, self.span(node), self.statement, (), (), self.in_loop,
                    self.scope.requires, spread=True, indirect=True,
                )
            )  # fmt: skip

    def _spread_parts(self, node: ast.Call) -> Value | None:
        """What a trailing ``*parts`` holding a call's result passes, part by part."""
        parts = spread_result(node, self.scope.assigned)
        if parts is None:
            return None
        return HOST if self.scope.host_code else self.value(parts)

    def _note_loop_kinds(self, node: ast.Call, callee: tuple | None) -> None:
        """Mark the loops around ``node`` (and the function) by what the call does: a
        backward pass or an optimizer step, or a call of a model."""
        func = node.func
        kind = None
        if (
            isinstance(func, ast.Attribute)
            and (func.attr == "backward" or (func.attr == "step" and names_stepper(func.value)))
        ) or self.qualified_name(func) == "torch.autograd.backward":
            kind = "steps"
        elif callee == ("self", "__call__") or names_model(last_name(func)):
            kind = "model"
        if kind is None:
            return
        if kind == "steps":
            self.scope.facts.steps = True
        for loop in self.scope.open_loops:
            loop[2].add(kind)

    def _keyword_values(self, node: ast.Call) -> tuple[tuple[str, Value], ...]:
        """What ``node`` passes by keyword: its keywords, and the items of a local dict it
        spreads whose names are known (``model(**inputs)`` after ``inputs["grid"] =
        grid.cpu()`` passes host data for ``grid``)."""
        found = [
            (keyword.arg, self._argument_value(keyword.value))
            for keyword in node.keywords
            if keyword.arg is not None
        ]
        given = {name for name, _ in found}
        for keyword in node.keywords:
            spread = keyword.value
            if keyword.arg is None and isinstance(spread, ast.Name):
                items = self.scope.dict_items.get(spread.id, {})
                found += [(k, v) for k, v in items.items() if k not in given]
        return tuple(found)

    def _own_kwargs(self, node: ast.expr) -> bool:
        """True for this function's ``**kwargs`` parameter, unchanged."""
        scope = self.scope
        return (
            isinstance(node, ast.Name)
            and node.id == scope.kwargs_name
            and node.id not in scope.rebound
        )

    def _argument_value(self, node: ast.expr) -> Value:
        """What a call passes: its placement (CPU code passes host data), and whether it
        is a constant such as None (which branches of the callee it takes)."""
        value = HOST if self.scope.host_code else self.value(node)
        state = literal_state(node)
        if state is not None:
            return value.with_tags(literal_tag(state))
        if self._never_none(node):
            return value.with_tags(NOT_NONE)
        scope = self.scope
        if (
            isinstance(node, ast.Name)
            and node.id in scope.facts.params
            and node.id not in scope.rebound
        ):
            return Value(value.place, frozenset((node.id,)), value.tags | {FORWARDED})
        return value

    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        table = self.imports if self.scope.facts.qualname == MODULE_SCOPE else self.scope.imports
        self.scope.qualified.clear()  # the names an import binds may mean something else now
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    table[alias.asname] = alias.name
                else:
                    top = alias.name.partition(".")[0]
                    table[top] = top
            return
        base = node.module or ""
        if node.level:
            parts = self.package.split(".") if self.package else []
            keep = len(parts) - (node.level - 1)
            prefix = ".".join(parts[: max(keep, 0)])
            base = f"{prefix}.{base}".strip(".") if base else prefix
        for alias in node.names:
            if alias.name == "*":
                continue
            table[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name

    # ------------------------------------------------------ functions, classes

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        outer = self.scope
        in_class = outer.facts.kind == "class"
        parent = outer.facts.qualname
        qualname = node.name if parent == MODULE_SCOPE else f"{parent}.{node.name}"
        decorators = tuple(self._decorator_name(d) for d in node.decorator_list)
        kind = "function"
        if in_class:
            kind = "method"
            if "staticmethod" in decorators:
                kind = "staticmethod"
            elif "classmethod" in decorators:
                kind = "classmethod"
        arguments = node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        all_arguments = [*positional, *arguments.kwonlyargs]
        if arguments.vararg:
            all_arguments.append(arguments.vararg)
        if arguments.kwarg:
            all_arguments.append(arguments.kwarg)
        self_name = positional[0].arg if kind in ("method", "classmethod") and positional else None
        closure_self = (
            outer.self_name
            if not in_class
            and outer is not self.module_scope
            and outer.self_name not in {argument.arg for argument in all_arguments}
            else None
        )  # a function nested in a method sees the method's ``self``
        defaults: dict[str, ast.expr | None] = {}
        for argument, positional_default in zip(
            reversed(positional), reversed(arguments.defaults), strict=False
        ):
            defaults[argument.arg] = positional_default
        for argument, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
            defaults[argument.arg] = kw_default
        env: dict[str, Value] = {}
        if not in_class and outer is not self.module_scope:
            # Closure: the enclosing function's parameters are not this function's.
            for name, value in outer.env.items():
                env[name] = UNKNOWN if value.place is Place.PARAM else value
        for argument in all_arguments:
            name = argument.arg
            default = defaults.get(name)
            if (
                name == self_name
                or is_host_annotation(argument.annotation)
                or (isinstance(default, ast.Constant) and default.value is not None)
            ):
                env[name] = HOST
            else:
                env[name] = as_named(name, param(name))
        module_params = set()
        typed_params: dict[str, str] = {}
        # Closures see the enclosing function's kinds of locals; parameters are their own.
        types: dict[str, tuple] = {}
        if not in_class and outer is not self.module_scope:
            own = {argument.arg for argument in all_arguments}
            types = {k: v for k, v in outer.types.items() if k not in own}
        for argument in all_arguments:  # annotations say what a parameter is
            annotation = ast.unparse(argument.annotation) if argument.annotation else ""
            if _MODULE_ANNOTATION.search(annotation) or _MODULE_WORDS & set(
                argument.arg.lower().split("_")
            ):
                module_params.add(argument.arg)
            known = env[argument.arg]
            annotated = class_annotation(annotation)
            if annotated in self.host_fields or annotated in self.imports:
                typed_params[argument.arg] = annotated
            declared = annotation_type(argument.annotation)
            if declared is not None and argument.arg != self_name:
                types[argument.arg] = declared
            if torch_name(annotated, self.imports) in GRAD_SCALERS:
                env[argument.arg] = known.with_tags(GRAD_SCALER)
            elif TENSOR_ANNOTATION.match(annotation.strip("'\"")) and not known.on_host:
                env[argument.arg] = known.with_tags(TENSOR)
            elif SEQUENCE_ANNOTATION.match(annotation):
                env[argument.arg] = known.with_tags(PYSEQ)
        for name in used_as_tensors(node, env, self.method_receivers.pop(node, None)):
            env[name] = env[name].with_tags(TENSOR)  # x.sum(), x.cpu() elsewhere: a tensor
        line_text = self.lines[node.lineno - 1] if node.lineno <= len(self.lines) else ""
        marker = _MARKER.search(line_text)
        facts = FunctionFacts(
            qualname=qualname,
            line=node.lineno,
            class_name=parent if in_class else None,
            params=tuple(argument.arg for argument in all_arguments),
            kind=kind,
            decorators=decorators,
            marker=marker.group(1) if marker else None,
            literal_defaults=tuple(
                (name, state)
                for name, default in defaults.items()
                if (state := literal_state(default)) is not None
            ),
        )
        self.functions[qualname] = facts
        class_name = parent if in_class else None
        self.scope = self._new_scope(facts, env, self_name or closure_self, class_name)
        if closure_self is not None:
            self.scope.attribute_values = outer.attribute_values
        if not in_class and outer is not self.module_scope:
            # A closure sees the enclosing function's locals as they are at its definition.
            self.scope.rebound = outer.rebound - set(self.scope.facts.params)
            self.scope.rebound_maybe_none = outer.rebound_maybe_none - set(self.scope.facts.params)
            self.scope.maybe_none = set(outer.maybe_none)
        self.scope.default_device = outer.default_device
        self.scope.module_params = frozenset(module_params)
        self.scope.kwargs_name = arguments.kwarg.arg if arguments.kwarg else None
        self.scope.typed_params = typed_params
        self.scope.types = types
        self.scope.maybe_none |= set(facts.params)  # a caller may pass None for any of them
        self.scope.host_code = (
            outer.host_code
            or self.module_scope.host_code
            or (class_name is not None and says_cpu(class_name.rpartition(".")[2]))
            or cpu_version(node.name)
        )
        try:
            self._body(node.body)
            if class_name and node.name == "__init__" and self_name:
                self._remember_attributes(class_name, self_name)
            if not in_class:  # a module function or one nested in a function
                self._remember_result(qualname, self.scope.returns)
            facts.returns = union(annotation_type(node.returns), *self.scope.return_types) or ()
            hosts = self.scope.host_returns
            facts.host_result = bool(hosts) and all(part is not None for part in hosts)
            if facts.host_result:
                sources = frozenset().union(*(part for part in hosts if part is not None))
                facts.result_sources = tuple(sorted(sources))
            facts.part_sources = part_sources(self.scope.part_returns)
            facts.loops = tuple(self.scope.loops)
        finally:
            self.scope = outer

    def _remember_result(self, name: str, returns: list[Value]) -> None:
        """A function (of the module, or nested in a function) whose every ``return`` gives
        device data (``t.to(device)``, a factory on a device) returns device data wherever
        this file calls it (``name`` is its qualified name in the module)."""
        if returns and all(value.place is Place.DEVICE for value in returns):
            tags = frozenset.intersection(*(value.tags for value in returns))
            self.device_results[name] = Value(Place.DEVICE, frozenset(), tags)
        else:
            self.device_results.pop(name, None)
        # What it returns, wherever that lives: ``def all_true(t): return t.sum() == n``
        # returns a boolean tensor, which an ``if`` on its result syncs on.
        kinds = frozenset.intersection(*(v.kinds for v in returns)) if returns else frozenset()
        kinds &= {TENSOR, BOOL, INDEX}
        if kinds and TENSOR in kinds:
            self.result_kinds[name] = kinds
        else:
            self.result_kinds.pop(name, None)

    def _remember_attributes(self, class_name: str, self_name: str) -> None:
        prefix = f"{self_name}."
        attributes = self.class_attributes.setdefault(class_name, {})
        filled = self.filled_attributes.get(class_name, set())
        for key, value in self.scope.env.items():
            if key.startswith(prefix):
                place = Place.UNKNOWN if value.place is Place.PARAM else value.place
                name = key[len(prefix) :]
                if place is Place.HOST and PYSEQ in value.tags and name in filled:
                    place = Place.UNKNOWN  # ``self.norms = {}``, filled per step elsewhere
                attributes[name] = Value(place, frozenset(), value.tags)

    def _decorator_name(self, node: ast.expr) -> str:
        if isinstance(node, ast.Call):
            node = node.func
        qualified = self.qualified_name(node)
        if qualified is not None:
            return qualified
        return ast.unparse(node)

    def _class(self, node: ast.ClassDef) -> None:
        outer = self.scope
        parent = outer.facts.qualname
        qualname = node.name if parent == MODULE_SCOPE else f"{parent}.{node.name}"
        bases = tuple(self.qualified_name(base) or ast.unparse(base) for base in node.bases)
        attribute_types: dict[str, str] = {}
        attribute_values = self.attribute_values.setdefault(qualname, {})
        shown = class_body(node)
        self.filled_attributes[qualname] = shown.filled
        self.method_receivers.update(shown.receivers)
        for statement in node.body:  # ``procs: list[Processor]`` declared in the class body
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                declared = annotation_type(statement.annotation)
                if declared is not None:
                    attribute_values[statement.target.id] = declared
        self.classes[qualname] = ClassFacts(
            qualname,
            node.lineno,
            bases,
            attribute_types,
            shown.init_parameters,
            self.host_fields.get(qualname, frozenset()),
            attribute_values,
            tuple(self._decorator_name(d) for d in node.decorator_list),
        )
        facts = FunctionFacts(qualname, node.lineno, None, (), "class", (), None)
        self.scope = Scope(facts, {}, {}, None, {})
        try:
            # __init__ first: the placements it gives self attributes serve every method.
            body = sorted(
                node.body,
                key=lambda s: not (isinstance(s, ast.FunctionDef) and s.name == "__init__"),
            )
            for statement in body:
                if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
                    attribute_types.update(init_attribute_types(statement, self.qualified_name))
                self._statement(statement)
        finally:
            self.scope = outer
