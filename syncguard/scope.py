"""The state of the per-file walk: the function being walked (:class:`Scope`) and what the
whole file knows (:class:`AnalyzerState`), with the source positions rules ask for."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from syncguard.facts import ClassFacts, FunctionFacts, Requirement, Span
from syncguard.values import Value


@dataclass
class Scope:
    """The state of the function being walked."""

    facts: FunctionFacts
    env: dict[str, Value]
    imports: dict[str, str]
    self_name: str | None
    attribute_values: dict[str, Value]  # self.attr placements known from __init__
    loop_depth: int = 0
    lazy_depth: int = 0  # inside code that does not run per step (lazy init, training only)
    default_device: bool = False
    memo: dict[int, Value] = field(default_factory=dict)
    # id of a node -> (the node, its qualified name): rules and passes ask again and again.
    qualified: dict[int, tuple[ast.expr, str | None]] = field(default_factory=dict)
    assigned: dict[str, ast.expr] = field(default_factory=dict)  # local name -> last value
    returns: list[Value] = field(default_factory=list)  # placements of the returned values
    host_code: bool = False  # in a module or class whose name says it runs on the CPU
    buffers: set[str] = field(default_factory=set)  # self attributes registered as buffers
    module_params: frozenset[str] = frozenset()  # parameters that are modules (``layer``)
    # Expressions a device guard proves to be on the host here (``if not x.is_cuda:``).
    narrowed: dict[str, Value] = field(default_factory=dict)
    # What the enclosing ``if``s say about parameters here (``if metadata is None:``).
    requires: tuple[Requirement, ...] = ()
    rebound: set[str] = field(default_factory=set)  # local names assigned so far
    # Names some assignment may have set to None: for the others, ``x is None`` after a
    # reassignment still means the parameter ``x`` was passed None.
    rebound_maybe_none: set[str] = field(default_factory=set)
    maybe_none: set[str] = field(default_factory=set)  # names that may hold None here
    kwargs_name: str | None = None  # the ``**kwargs`` parameter
    # Parameters annotated with a class: of this module with host fields, or imported.
    typed_params: dict[str, str] = field(default_factory=dict)
    # Local dicts with known string keys: name -> key -> where that item lives (what a
    # call given ``**inputs`` passes for each of them).
    dict_items: dict[str, dict[str, Value]] = field(default_factory=dict)
    # Containers of any kind (a parameter too) given device data under a string key here
    # (``state["loss"] = out.mean()``): the env holds that item as ``state['loss']``.
    item_owners: set[str] = field(default_factory=set)
    # Local name -> what it holds, for the project phase (see :mod:`syncguard.receivers`).
    types: dict[str, tuple] = field(default_factory=dict)
    # Loops being walked: [first line, last line, flags].
    open_loops: list[list] = field(default_factory=list)
    loops: list = field(default_factory=list)  # the function's loops walked so far
    return_types: list = field(default_factory=list)  # type expressions of its returns
    # Per return: None when it may give device data, else the functions of other modules
    # whose results it gives (host data when those return host data).
    host_returns: list[frozenset[str] | None] = field(default_factory=list)
    # Per return of a tuple (``return a, b``): the same for each part; None for others.
    part_returns: list[tuple[frozenset[str] | None, ...] | None] = field(default_factory=list)


# Device-guarded host values, requirements on parameters and maybe-None names of a branch.
BranchFacts = tuple[dict[str, Value], tuple[Requirement, ...], set[str]]


class AnalyzerState:
    """What every part of the per-file walk shares: the file, its imports and definitions,
    the scope being walked, and the source positions of nodes."""

    lines: list[str]
    module: str
    imports: dict[str, str]
    module_defs: set[str]
    # Class of this module -> its fields declared as host data; classes all of whose
    # declared fields are (records of sizes and flags).
    host_fields: dict[str, frozenset[str]]
    host_records: set[str]
    class_attributes: dict[str, dict[str, Value]]  # self.attr placements from __init__
    classes: dict[str, ClassFacts]  # the classes of the module walked so far
    # Functions (analysed so far, by qualified name) whose every return is device data,
    # and those whose every return is a tensor (its kind tags).
    device_results: dict[str, Value]
    result_kinds: dict[str, frozenset[str]]
    scope: Scope
    module_scope: Scope
    statement: tuple[int, int]  # first and last line of the statement being walked
    rule_code: str  # the rule whose visitor is running

    def span(self, node: ast.AST) -> Span:
        line = node.lineno  # type: ignore[attr-defined]
        end_line = node.end_lineno or line  # type: ignore[attr-defined]
        column = self._column(line, node.col_offset)  # type: ignore[attr-defined]
        end_column = self._column(end_line, node.end_col_offset or 0)  # type: ignore[attr-defined]
        return Span(line, column, end_line, end_column)

    def op_span(self, node: ast.AST) -> Span:
        """Where a finding on ``node`` is shown: a method call spread over lines (a chain
        ending in ``.sum().item()`` on a line of its own) from the line of its method's
        name on, the line a reader looks for the sync on."""
        span = self.span(node)
        func = node.func if isinstance(node, ast.Call) else None
        if not isinstance(func, ast.Attribute) or (func.end_lineno or 0) <= span.line:
            return span
        line = func.end_lineno or span.line
        start = self._column(line, (func.end_col_offset or 0) - len(func.attr)) - 1  # the dot
        return Span(line, max(start, 1), span.end_line, span.end_column)

    def _column(self, line: int, byte_offset: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_offset + 1
        return len(text.encode()[:byte_offset].decode(errors="replace")) + 1

    def source(self, node: ast.AST) -> str:
        return ast.unparse(node)

    def text(self, node: ast.AST) -> str:
        span = self.span(node)
        if span.line == span.end_line:
            return self.lines[span.line - 1][span.column - 1 : span.end_column - 1]
        first = self.lines[span.line - 1][span.column - 1 :]
        middle = self.lines[span.line : span.end_line - 1]
        last = self.lines[span.end_line - 1][: span.end_column - 1]
        return "\n".join([first, *middle, last])

    def qualified_name(self, node: ast.expr) -> str | None:
        """The dotted name ``node`` stands for through this module's imports
        (``F.softmax`` -> ``torch.nn.functional.softmax``); None for other expressions."""
        memo = self.scope.qualified  # emptied by each import the scope sees
        known = memo.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        found = self._qualified(node)
        memo[id(node)] = (node, found)  # holding the node keeps its id from being reused
        return found

    def _qualified(self, node: ast.expr) -> str | None:
        attributes: list[str] = []  # ``a.b.c``: c, b (a loop, not a call per attribute)
        while isinstance(node, ast.Attribute):
            attributes.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.scope.imports.get(node.id) or self.imports.get(node.id)
        if not attributes:
            return base
        return ".".join([base, *reversed(attributes)]) if base else None

    @staticmethod
    def _keyword(node: ast.Call, name: str) -> ast.expr | None:
        for keyword in node.keywords:
            if keyword.arg == name:
                return keyword.value
        return None
