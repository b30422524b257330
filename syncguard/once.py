"""Code that does not run on every step: training-only branches, lazy initialisation
(``if self._k is None: self._k = ...``) and early returns once a cache is filled."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from syncguard.bodies import walk
from syncguard.conditions import (
    attribute_named,
)
from syncguard.scope import AnalyzerState

# Methods that fill the object they are called on (a cache set, dict, list or buffer).
_MUTATORS = frozenset(
    {"add", "append", "extend", "insert", "update", "setdefault", "copy_", "fill_", "zero_"}
)


# Statements holding blocks: what they store is not stored on every way through.
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.Match)


def _is_none_test(test: ast.expr) -> bool:
    """``x is None`` alone."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _resets_counter(node: ast.If, tested: set[str]) -> bool:
    """``if self.steps >= self.interval: self.steps = 0; ...``: a counter of steps
    compared with a bound and reset to a number, so the block runs every so many steps
    (a cache check fills its state with what it made, not with a count)."""
    ordered = any(
        isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE))
        for compare in walk(node.test)
        if isinstance(compare, ast.Compare)
        for op in compare.ops
    )
    return ordered and any(
        isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Constant)
        and type(statement.value.value) in (int, float)
        and any(ast.unparse(target) in tested for target in statement.targets)
        for statement in node.body
    )


class OnceChecks(AnalyzerState):
    """Tests of the current scope that say a block runs once, not per step."""

    def _training_test(self, test: ast.expr) -> bool | None:
        """True for ``if self.training`` (also ``self.training and ...``), False for
        ``if not self.training``: code for training mode, which inference never runs."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            return False if self._training_test(test.operand) is True else None
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            return True if any(self._training_test(v) is True for v in test.values) else None
        if (
            isinstance(test, ast.Attribute)
            and test.attr == "training"
            and isinstance(test.value, ast.Name)
            and test.value.id == self.scope.self_name
        ):
            return True
        return None

    def _is_lazy_init(self, node: ast.If) -> bool:
        """``if self._k is None: self._k = ...``, ``if key not in _CACHE: _CACHE[key] = ...``:
        a cache check whose body fills the persistent state it checks (an attribute of
        ``self`` or of another object, a module-level name) runs once, not on every step."""
        tested = self._cache_checked(node.test, bare=False)
        if not tested or _resets_counter(node, tested):
            return False
        # ``if self.buf is None or self.dynamic_shape:`` runs whenever the other part holds
        # too, unless it checks the cache as well (``or buf.shape != shape``).
        if (
            isinstance(node.test, ast.BoolOp)
            and isinstance(node.test.op, ast.Or)
            and not all(self._cache_checked(part, bare=False) for part in node.test.values)
        ):
            return False
        if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not):
            # ``if not self._ready:`` is a once-only block when it sets the flag itself,
            # not when a check inside it may (``if not self.overflow: ... if bad: overflow``).
            unconditional = [s for s in node.body if not isinstance(s, _COMPOUND)]
            return self._fills(unconditional, tested)
        return self._fills(node.body, tested)

    def _returns_when_cached(self, node: ast.If, rest: Sequence[ast.stmt]) -> bool:
        """``if key in self._done: return`` (or ``if self._ready: return``) followed by code
        that fills the state it checks: that code runs once, not on every step."""
        if node.orelse or not rest or not isinstance(node.body[-1], ast.Return):
            return False
        if _is_none_test(node.test):
            # ``if self.pending is None: return``: nothing to do yet. What follows runs
            # whenever the state was handed over, and clearing it is no cache filled.
            return False
        tested = self._cache_checked(node.test, bare=True)
        return bool(tested) and self._fills(rest, tested)

    def _cache_checked(self, test: ast.expr, *, bare: bool) -> set[str]:
        """The persistent state a cache check tests (``x is None``, ``k in self._cache``,
        ``n > self.size[0]``, ``not hasattr(self, "table")``, ``not self._ready`` and, with
        ``bare``, a plain ``self._ready``); empty for other tests."""
        operands: list[ast.expr] = []
        for node in walk(test):
            if isinstance(node, ast.Compare) and not all(isinstance(op, ast.Eq) for op in node.ops):
                operands += [node.left, *node.comparators]  # not ==: mode == "x" is no cache
            elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
                operands.append(node.operand)
            elif isinstance(node, ast.Call):
                operands += attribute_named(node, "hasattr", 0)
        if bare and isinstance(test, (ast.Name, ast.Attribute)):
            operands.append(test)
        for operand in list(operands):
            # hit = _CACHE.get(key); if hit is None: ...: the local stands for the cache.
            source = self.scope.assigned.get(operand.id) if isinstance(operand, ast.Name) else None
            if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute):
                if source.func.attr in ("get", "setdefault"):
                    operands.append(source.func.value)
            elif isinstance(source, ast.Subscript):
                operands.append(source.value)
            elif isinstance(source, ast.Attribute):
                operands.append(source)  # context = self._context; if context is not None: ...
        tested: set[str] = set()
        for operand in operands:
            while isinstance(operand, (ast.Name, ast.Attribute, ast.Subscript)):
                if self._persistent(operand):
                    tested.add(ast.unparse(operand))  # self.cache[0].device, ..., self.cache
                if isinstance(operand, ast.Name):
                    break
                operand = operand.value
        return tested

    def _fills(self, statements: Sequence[ast.stmt], tested: set[str]) -> bool:
        """True when ``statements`` store into (assign, or mutate with ``add``, ``update``,
        ``copy_``...) one of the ``tested`` expressions or an item or attribute of one."""
        for statement in statements:
            for child in walk(statement):
                if isinstance(child, ast.Assign):
                    targets = child.targets
                elif isinstance(child, (ast.AnnAssign, ast.AugAssign)):
                    targets = [child.target]
                elif (
                    isinstance(child, ast.Call)
                    and isinstance(child.func, ast.Attribute)
                    and child.func.attr in _MUTATORS
                ):
                    targets = [child.func.value]
                elif isinstance(child, ast.Call):
                    # setattr(self, "table", t), self.register_buffer("table", t)
                    targets = [
                        *attribute_named(child, "setattr", 0),
                        *attribute_named(child, "register_buffer", None),
                        *attribute_named(child, "register_parameter", None),
                    ]
                else:
                    continue
                for target in targets:
                    stored: ast.expr = target
                    while True:
                        if ast.unparse(stored) in tested:
                            return True
                        if not isinstance(stored, (ast.Attribute, ast.Subscript)):
                            break
                        stored = stored.value
        return False

    def _persistent(self, node: ast.expr) -> bool:
        """True for state that outlives a call: a module-level name, or an attribute or item
        of ``self``, of a module-level name or of a parameter that is a module (``layer``,
        ``x: nn.Module``) -- not of other parameters, such as per-step metadata objects, nor
        of an attribute named metadata (``self.forward_metadata.cache``)."""
        root = node
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            if isinstance(root, ast.Attribute) and root.attr.endswith("metadata"):
                return False  # self.forward_metadata(.cache): replaced with every step
            root = root.value
        if not isinstance(root, ast.Name):
            return False
        if root is not node and (
            root.id == self.scope.self_name or root.id in self.scope.module_params
        ):
            return True
        return self.scope is not self.module_scope and root.id in self.module_scope.env
