"""The walk over a file's statements and expressions: scopes, branches, loops, guards and
the rule visitors; what definitions, calls and imports record is left to the analyzer."""

from __future__ import annotations

import ast
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import cast

from syncguard.conditions import (
    atoms_when,
    attribute_named,
    device_check,
    dotted_name,
    not_none_when,
    requirement_of,
)
from syncguard.declarations import (
    is_host_annotation,
)
from syncguard.facts import (
    FunctionFacts,
    Loop,
    Requirement,
)
from syncguard.once import OnceChecks
from syncguard.receivers import Receivers, annotation_type, union
from syncguard.scope import BranchFacts, Scope
from syncguard.torch_api import (
    is_tensor,
)
from syncguard.values import (
    BOOL,
    HOST,
    OPAQUE,
    PYSEQ,
    SCALAR,
    TENSOR,
    UNKNOWN,
    Place,
    Value,
    join,
)

# ``try`` statements: ``except*`` (Python 3.11+) is a node of its own.
_TRY_STATEMENTS: tuple[type[ast.stmt], ...] = tuple(
    getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name)
)
# The fields of each expression node that hold sub-expressions, in ``_fields`` order:
# the walk reads them directly instead of going through ``ast.iter_child_nodes``.
_EXPRESSION_FIELDS: dict[type, tuple[str, ...]] = {
    ast.BoolOp: ("values",), ast.NamedExpr: ("target", "value"), ast.BinOp: ("left", "right"),
    ast.UnaryOp: ("operand",), ast.IfExp: ("test", "body", "orelse"),
    ast.Dict: ("keys", "values"), ast.Set: ("elts",), ast.Await: ("value",),
    ast.Yield: ("value",), ast.YieldFrom: ("value",), ast.Compare: ("left", "comparators"),
    ast.Call: ("func", "args"), ast.FormattedValue: ("value", "format_spec"),
    ast.JoinedStr: ("values",), ast.Constant: (), ast.Attribute: ("value",),
    ast.Subscript: ("value", "slice"), ast.Starred: ("value",), ast.Name: (),
    ast.List: ("elts",), ast.Tuple: ("elts",), ast.Slice: ("lower", "upper", "step"),
}  # fmt: skip
_EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
# List methods adding data, with their number of arguments (the data is the last one).
_SEQUENCE_GROWERS = {"append": 1, "extend": 1, "insert": 2, "add": 1}


def _raises(statements: Sequence[ast.stmt]) -> bool:
    """True for a block that ends by raising an exception (an error path)."""
    return bool(statements) and isinstance(statements[-1], ast.Raise)


def _subexpressions(node: ast.AST) -> list[ast.expr]:
    """The direct sub-expressions of ``node`` in source order, less stored names."""
    kind = type(node)
    fields = _EXPRESSION_FIELDS.get(kind)
    if fields is None:  # a node type this table does not list: ask ast
        children = [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.expr)]
    else:
        children = []
        for name in fields:
            child = getattr(node, name)
            if type(child) is list:
                children.extend(item for item in child if item is not None)  # Dict: None keys
            elif child is not None:
                children.append(child)
        if kind is ast.Call:
            children.extend(keyword.value for keyword in node.keywords)  # type: ignore[attr-defined]
    return [
        child
        for child in children
        if type(child) is not ast.Name or type(child.ctx) is not ast.Store  # type: ignore[attr-defined]
    ]


# Expression nodes with no sub-expression: the walk only dispatches rules on them.
_LEAVES = frozenset({ast.Name, ast.Constant})
# Expression nodes the walk may step into apart (see ``Walker._walked_apart``).
_WALKED_APART = frozenset(
    {ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp, ast.Lambda, ast.BoolOp, ast.IfExp}
)


class Walker(Receivers, OnceChecks, ABC):
    """Walks statements and expressions, dispatching rule visitors on the way."""

    visitors: dict[type, list[tuple[str, Callable]]]

    @abstractmethod
    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """Record and walk a function definition."""

    @abstractmethod
    def _class(self, node: ast.ClassDef) -> None:
        """Record and walk a class definition."""

    @abstractmethod
    def _call(self, node: ast.Call) -> None:
        """Record a call that may reach a function of the linted tree."""

    @abstractmethod
    def _import(self, node: ast.Import | ast.ImportFrom) -> None:
        """Record the names an import binds."""

    # ------------------------------------------------------------ statements

    def _new_scope(
        self,
        facts: FunctionFacts,
        env: dict[str, Value],
        self_name: str | None,
        class_name: str | None,
    ) -> Scope:
        attributes = self.class_attributes.get(class_name, {}) if class_name else {}
        return Scope(facts, env, {}, self_name, attributes)

    def _body(self, statements: Sequence[ast.stmt]) -> None:
        scope = self.scope
        narrowed = scope.narrowed
        requires = scope.requires
        try:
            for index, statement in enumerate(statements):
                self._statement(statement)
                if isinstance(statement, ast.Assert):
                    # ``assert x.device.type == "cpu"``: below it, x is on the host.
                    guarded = self._host_when(statement.test, True)
                    if guarded:
                        scope.narrowed = {**scope.narrowed, **guarded}
                if not isinstance(statement, ast.If):
                    continue
                if not statement.orelse and isinstance(statement.body[-1], _EXITS):
                    # ``if x.is_cuda: return ...``: below it, x is on the host.
                    guarded = self._host_when(statement.test, False)
                    if guarded:
                        scope.narrowed = {**scope.narrowed, **guarded}
                    # ``if metadata is None: return``: below it, metadata is not None.
                    scope.requires += self._requirements(statement.test, False)
                if self._returns_when_cached(statement, statements[index + 1 :]):
                    # The rest of the block fills the cache the check returned early on.
                    scope.lazy_depth += 1
                    try:
                        for rest in statements[index + 1 :]:
                            self._statement(rest)
                    finally:
                        scope.lazy_depth -= 1
                    return
        finally:
            scope.narrowed = narrowed
            scope.requires = requires

    def _dispatch(self, node: ast.AST) -> None:
        for code, visit in self.visitors.get(type(node), ()):
            self.rule_code = code
            visit(node, self)

    def _statement(self, node: ast.stmt) -> None:
        self.statement = (node.lineno, node.end_lineno or node.lineno)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                self._expression(decorator)
            self._function(node)
            return
        if isinstance(node, ast.ClassDef):
            for expression in [*node.decorator_list, *node.bases]:
                self._expression(expression)
            self._class(node)
            return
        self._dispatch(node)
        scope = self.scope
        if isinstance(node, ast.Assign):
            self._expression(node.value)
            value = self.value(node.value)
            held = self.type_of(node.value)
            for target in node.targets:
                self._target_expressions(target)
                self._bind(target, value, node.value)
                self.bind_type(target, held)
                registry = self.registers_into(target, node.value)
                if registry is not None:
                    self.registrars[scope.facts.qualname.partition(".")[0]] = registry
        elif isinstance(node, ast.AnnAssign):
            held = union(
                annotation_type(node.annotation),
                self.type_of(node.value) if node.value is not None else None,
            )
            self.bind_type(node.target, held)
            if node.value is not None:
                self._expression(node.value)
                value = self.value(node.value)
                if is_host_annotation(node.annotation):
                    value = HOST
                self._bind(node.target, value, node.value)
        elif isinstance(node, ast.AugAssign):
            self._expression(node.value)
            self._target_expressions(node.target)
            if isinstance(node.target, ast.Name):
                scope.assigned.pop(node.target.id, None)
                current = self._name_value(node.target.id)
                in_place = is_tensor(current) or (
                    BOOL in current.tags and isinstance(node.op, (ast.BitOr, ast.BitAnd))
                )
                # An in-place op on a tensor (or a mask) keeps the target where it is.
                if not in_place:
                    self.scope.env[node.target.id] = join(current, self.value(node.value))
        elif isinstance(node, (ast.Expr, ast.Return)):
            if node.value is not None:
                self._expression(node.value)
                if isinstance(node, ast.Return):
                    scope.returns.append(self.value(node.value))
                    scope.host_returns.append(self.host_parts(node.value))
                    scope.part_returns.append(
                        tuple(self.host_parts(part) for part in node.value.elts)
                        if isinstance(node.value, ast.Tuple)
                        else None
                    )
                    scope.return_types.append(self.type_of(node.value))
                elif isinstance(node.value, ast.Call):
                    self._grow_sequence(node.value)
                    self._register_state(node.value)
                    self.grow_container(node.value)
        elif isinstance(node, ast.If):
            self._expression(node.test)
            training = self._training_test(node.test)
            self._branches(
                node.test,
                node.body,
                node.orelse,
                lazy=training is True or self._is_lazy_init(node),
                lazy_else=training is False,
            )
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            self._expression(node.iter)
            self._loop(node, lambda: None)
        elif isinstance(node, ast.While):
            self._loop(node, lambda: self._expression(node.test))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            default_device = scope.default_device
            for item in node.items:
                self._expression(item.context_expr)
                if self.qualified_name_of_call(item.context_expr) == "torch.device":
                    scope.default_device = True
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, self.value(item.context_expr), None)
                    self.bind_type(item.optional_vars, self.type_of(item.context_expr))
            self._body(node.body)
            scope.default_device = default_device
        elif isinstance(node, _TRY_STATEMENTS):
            attempt = cast(ast.Try, node)  # ``try: ... except*`` (TryStar) has the same fields
            self._body(attempt.body)
            for handler in attempt.handlers:
                if handler.type is not None:
                    self._expression(handler.type)
                if handler.name:
                    scope.env[handler.name] = HOST
                scope.lazy_depth += _raises(handler.body)  # a handler that re-raises: errors
                try:
                    self._body(handler.body)
                finally:
                    scope.lazy_depth -= _raises(handler.body)
            self._body(attempt.orelse)
            self._body(attempt.finalbody)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            self._import(node)
        elif isinstance(node, ast.Match):
            self._expression(node.subject)
            for case in node.cases:
                if case.guard is not None:
                    self._expression(case.guard)
                self._body(case.body)
        elif isinstance(node, (ast.Raise, ast.Assert)):
            if isinstance(node, ast.Assert):
                self._expression(node.test)
            # The exception and an assert's message are built only on the error path.
            scope.lazy_depth += 1
            try:
                for error_part in (
                    (node.msg,) if isinstance(node, ast.Assert) else (node.exc, node.cause)
                ):
                    if error_part is not None:
                        self._expression(error_part)
            finally:
                scope.lazy_depth -= 1
        else:  # Delete, Global, Pass, ...
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self._expression(child)
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and self.qualified_name(node.value.func) == "torch.set_default_device"
        ):
            scope.default_device = True

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While, head: Callable[[], None]) -> None:
        """A loop's body, once, in the loop (``head``: the test a while loop evaluates on
        each turn), then its else; what the body binds may or may not have happened."""
        scope = self.scope
        before = dict(scope.env)
        maybe_none = set(scope.maybe_none)
        if not isinstance(node, ast.While):
            self.bind_loop(node.target, node.iter)
            self.bind_element_types(node.target, node.iter)
        scope.loop_depth += 1
        self._open_loop(node, set())
        head()
        self._body(node.body)
        self._close_loop()
        scope.loop_depth -= 1
        self._body(node.orelse)
        self._merge_env(before)
        scope.maybe_none |= maybe_none

    def _open_loop(self, node: ast.For | ast.AsyncFor | ast.While, flags: set[str]) -> None:
        self.scope.open_loops.append([node.lineno, node.end_lineno or node.lineno, flags])

    def _close_loop(self) -> None:
        scope = self.scope
        line, end, flags = scope.open_loops.pop()
        if scope.lazy_depth:
            return  # a loop in code that runs once is no step loop
        scope.loops.append(Loop(line, end, frozenset(flags)))

    def qualified_name_of_call(self, node: ast.expr) -> str | None:
        return self.qualified_name(node.func) if isinstance(node, ast.Call) else None

    def _branches(
        self,
        test: ast.expr,
        body: Sequence[ast.stmt],
        orelse: Sequence[ast.stmt],
        lazy: bool = False,
        lazy_else: bool = False,
    ) -> None:
        """Walk both branches of ``if test``; a ``lazy`` branch does not run per step."""
        scope = self.scope
        before = dict(scope.env)
        # What each outcome of the test proves, decided before either branch rebinds names.
        when_true, when_false = self._branch_facts(test, True), self._branch_facts(test, False)
        # A branch that ends by raising is the error path: it does not run per step.
        self._branch(body, when_true, lazy or _raises(body))
        after_body, none_after_body = scope.env, scope.maybe_none
        scope.env = dict(before)
        self._branch(orelse, when_false, lazy_else or _raises(orelse))
        # A branch that ends in return/raise/continue/break does not reach what follows.
        if body and isinstance(body[-1], _EXITS):
            return
        if orelse and isinstance(orelse[-1], _EXITS):
            scope.env, scope.maybe_none = after_body, none_after_body
            return
        scope.maybe_none |= none_after_body
        self._merge_env(after_body)

    def _branch_facts(self, test: ast.expr, truth: bool) -> BranchFacts:
        """What the scope knows in the branch where ``test`` is ``truth``: tensors a device
        guard puts on the host, requirements on parameters, names that may still be None."""
        scope = self.scope
        return (
            {**scope.narrowed, **self._host_when(test, truth)},
            scope.requires + self._requirements(test, truth),
            scope.maybe_none - not_none_when(test, truth),
        )

    def _branch(self, statements: Sequence[ast.stmt], facts: BranchFacts, lazy: bool) -> None:
        scope = self.scope
        narrowed, requires = scope.narrowed, scope.requires
        scope.narrowed, scope.requires, scope.maybe_none = facts
        scope.lazy_depth += lazy
        try:
            self._body(statements)
        finally:
            scope.lazy_depth -= lazy
            scope.narrowed, scope.requires = narrowed, requires

    def _host_when(self, test: ast.expr, truth: bool) -> dict[str, Value]:
        """Values that ``test`` being ``truth`` proves to be on the host: tensors with
        ``x.is_cuda`` False, ``x.is_cpu`` True, ``x.device.type == "cpu"`` True, and what
        ``isinstance(x, torch.Tensor)`` False says is no tensor (and negations, ``and`` /
        ``or`` combinations); as host values for :attr:`Scope.narrowed`."""
        found: dict[str, Value] = {}
        for atom, holds in atoms_when(test, truth):
            requirement = requirement_of(atom, holds)
            if requirement is not None and requirement[1] == "not-tensor":
                # ``isinstance(x, torch.Tensor)`` false: x is a Python value in this branch
                found[requirement[0]] = Value(Place.HOST, frozenset(), frozenset())
                continue
            if isinstance(atom, ast.Name) and atom.id not in self.scope.facts.params:
                # use_cpu = x.device.type == "cpu"; ... if use_cpu: the flag is the check.
                atom = self.scope.assigned.get(atom.id, atom)
            tensor, on_host_when = device_check(atom)
            key = dotted_name(tensor) if tensor is not None else None
            if tensor is not None and key is not None and on_host_when is holds:
                found[key] = Value(Place.HOST, frozenset(), self.value(tensor).tags | {TENSOR})
        return found

    def _requirements(self, test: ast.expr, truth: bool) -> tuple[Requirement, ...]:
        """What ``test`` being ``truth`` says about this function's parameters:
        ``p is None`` / ``p is not None`` / ``p`` / ``p > 0`` (and ``not``, ``and`` / ``or``),
        and about flags of ``self`` (``self.adaptive``)."""
        found: list[Requirement] = []
        scope = self.scope
        for atom, holds in atoms_when(test, truth):
            if (
                isinstance(atom, ast.Attribute)
                and isinstance(atom.value, ast.Name)
                and atom.value.id == scope.self_name
            ):  # ``self.flag``: the project knows what constructors are given for it
                found.append((f"self.{atom.attr}", "true" if holds else "false"))
                continue
            requirement = requirement_of(atom, holds)
            if requirement is not None:
                name = requirement[0]
                if name in scope.facts.params and (
                    name not in scope.rebound
                    or (requirement[1] == "none" and name not in scope.rebound_maybe_none)
                ):
                    found.append(requirement)
        return tuple(found)

    def _target_expressions(self, target: ast.expr) -> None:
        """Walk the loads inside an assignment target (``x[i] = ...`` reads x and i)."""
        if isinstance(target, (ast.Subscript, ast.Attribute)):
            self._dispatch(target)
            self._expression(target.value)
            if isinstance(target, ast.Subscript):
                self._expression(target.slice)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target_expressions(element)

    # ------------------------------------------------------------ expressions

    def _expression(self, node: ast.expr) -> None:
        """Dispatch rules over ``node`` and its children; record calls."""
        visited = self.visitors  # node types some rule visits: the others skip _dispatch
        stack: list[ast.AST] = [node]
        while stack:
            current = stack.pop()
            kind = type(current)
            if kind in _LEAVES:
                if kind in visited:
                    self._dispatch(current)
                continue
            if kind in _WALKED_APART and self._walked_apart(current):
                continue
            if kind in visited:
                self._dispatch(current)
            if isinstance(current, ast.Call):
                self._call(current)
            elif isinstance(current, ast.NamedExpr):
                self._bind(current.target, self.value(current.value), current.value)
            stack.extend(reversed(_subexpressions(current)))
        return None

    def _walked_apart(self, node: ast.AST) -> bool:
        """Walk a comprehension or a lambda in a scope of its own, or the operands of a
        guarded ``and`` / ``or`` / ``if`` expression; False when ``node`` is none of those."""
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            self._dispatch(node)
            self._comprehension(node)
            return True
        if isinstance(node, ast.Lambda):
            self._lambda(node)
            return True
        return isinstance(node, (ast.BoolOp, ast.IfExp)) and self._guarded_operands(node)

    def _grow_sequence(self, call: ast.Call) -> None:
        """``xs.append(t)``, ``xs.extend(ts)``, ``xs.insert(i, t)`` on a local list, ``t`` a
        tensor or device data: the list now also holds data where ``t`` lives (``xs = []``
        alone is host data, and so is a list of Python numbers of unknown origin)."""
        func = call.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.attr in _SEQUENCE_GROWERS
            and len(call.args) == _SEQUENCE_GROWERS[func.attr]
        ):
            return
        name = func.value.id
        current = self.scope.env.get(name)
        if current is None or PYSEQ not in current.tags:
            return
        added = self.value(call.args[-1])
        if added.place is Place.DEVICE or TENSOR in added.tags:  # not numbers of unknown origin
            self.scope.env[name] = join(current, added).with_tags(PYSEQ)
        elif not added.on_host and not added.tags & {SCALAR, PYSEQ}:
            # Something of unknown kind: the list stays host data, but what ``torch.cat``
            # makes of it is not known to be a fresh host tensor.
            self.scope.env[name] = current.with_tags(OPAQUE)

    def _register_state(self, call: ast.Call) -> None:
        """``self.register_buffer("idx", t)``: ``self.idx`` is module state, which moves
        with the module (``model.to(device)``), even when ``t`` was made on the host."""
        for target in attribute_named(call, "register_buffer", None):
            assert isinstance(target, ast.Attribute)
            if isinstance(target.value, ast.Name) and target.value.id == self.scope.self_name:
                key = f"{target.value.id}.{target.attr}"
                self.scope.env[key] = UNKNOWN.with_tags(TENSOR)
                self.scope.buffers.add(key)

    def _guarded_operands(self, node: ast.BoolOp | ast.IfExp) -> bool:
        """Walk the operands of ``node`` where a device guard before them holds
        (``not x.is_cuda and torch.equal(x, y)``, ``a if x.is_cpu else b``); False, with
        nothing walked, when no operand is guarded."""
        if isinstance(node, ast.BoolOp):
            truth = isinstance(node.op, ast.And)  # what the operands before one must be
            parts = [(operand, self._host_when(operand, truth)) for operand in node.values]
            if not any(guard for _, guard in parts[:-1]):
                return False
            self._dispatch(node)
            known: dict[str, Value] = {}
            for operand, guard in parts:
                self._walk_guarded(operand, known)
                known = {**known, **guard}
            return True
        when_true, when_false = self._host_when(node.test, True), self._host_when(node.test, False)
        if not (when_true or when_false):
            return False
        self._dispatch(node)
        self._expression(node.test)
        self._walk_guarded(node.body, when_true)
        self._walk_guarded(node.orelse, when_false)
        return True

    def _walk_guarded(self, node: ast.expr, guarded: dict[str, Value]) -> None:
        """:meth:`_expression` over ``node`` with the ``guarded`` host values in force
        (values computed for it before, without them, are forgotten)."""
        scope = self.scope
        narrowed = scope.narrowed
        if guarded:
            for child in ast.walk(node):
                scope.memo.pop(id(child), None)
            scope.narrowed = {**narrowed, **guarded}
        try:
            self._expression(node)
        finally:
            scope.narrowed = narrowed

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        scope = self.scope
        for generator in node.generators:
            self._expression(generator.iter)
        with self._comprehension_scope(node.generators):
            scope.loop_depth += 1
            for generator in node.generators:
                for condition in generator.ifs:
                    self._expression(condition)
            if isinstance(node, ast.DictComp):
                self._expression(node.key)
                self._expression(node.value)
            else:
                self._expression(node.elt)
            scope.loop_depth -= 1

    def _lambda(self, node: ast.Lambda) -> None:
        scope = self.scope
        saved_env, saved_memo = scope.env, scope.memo
        scope.env = dict(saved_env)
        scope.memo = {}
        for argument in node.args.args:
            scope.env[argument.arg] = UNKNOWN
        try:
            self._expression(node.body)
        finally:
            scope.env, scope.memo = saved_env, saved_memo
