"""Canonical forms of index-building expressions, so equivalent spellings compare equal.

Inference engines derive the same few index arrays from the per-step batch layout:
per-sequence lengths from cumulative offsets, offsets from lengths, the request of
every token, the position of every token within its request, chunk counts, chunk
indices and chunk offsets. Each is spelled in many ways (numpy or torch, a method or
a function, through local variables, with or without ``dtype``/``device``).
:func:`canonical_form` reduces an expression to a term over a handful of operators and
names the data it derives from, so ``np.repeat(np.arange(n), np.diff(q))`` and
``torch.repeat_interleave(torch.arange(len(q) - 1), q[1:] - q[:-1])`` get the same key.

Terms are nested tuples (hashable, picklable). Conventions of the reduction:

* data is keyed by its final name: ``meta.query_start_loc_cpu`` -> ``query_start_loc_cpu``;
  local names are replaced by the expression last assigned to them;
* conversions (``np.asarray``, ``torch.from_numpy``, ``.to(...)``, ``.long()``, pinning
  helpers...) and keyword arguments (``dtype``, ``device``, ``out``...) do not change a term;
* a segment count (``n`` in ``arange(n)``) is not part of the key: ``repeat`` requires it
  to equal the number of lengths, however it is spelled;
* a prefix slice ``x[:n]`` keeps the key of ``x`` (engine buffers are padded; the prefix
  is their live part); offsets are assumed to start at 0.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

Term = tuple  # nested tuples of str and Term

_MAX_DEPTH = 60
# Calls and methods that convert or move data without changing its values.
_CONVERSIONS = frozenset(
    {"numpy.asarray", "numpy.array", "numpy.ascontiguousarray", "torch.as_tensor",
     "torch.tensor", "torch.from_numpy", "torch.asarray"}
)  # fmt: skip
_CONVERSION_METHODS = frozenset(
    {"numpy", "cpu", "cuda", "to", "long", "int", "astype", "type", "contiguous", "clone",
     "copy", "tolist", "pin_memory", "flatten", "ravel", "detach"}
)  # fmt: skip
_ARANGE = frozenset({"numpy.arange", "torch.arange"})
_REPEAT = frozenset({"numpy.repeat", "torch.repeat_interleave"})
_DIFF = frozenset({"numpy.diff", "torch.diff", "numpy.ediff1d"})
_CUMSUM = frozenset({"numpy.cumsum", "torch.cumsum"})
_CONCAT = frozenset({"numpy.concatenate", "torch.cat", "torch.concat", "torch.concatenate"})
_STACK = frozenset({"numpy.stack", "torch.stack"})
_SEARCHSORTED = frozenset({"numpy.searchsorted", "torch.searchsorted"})
_PAD = frozenset({"torch.nn.functional.pad", "numpy.pad"})
_CEIL = frozenset({"torch.ceil", "numpy.ceil"})  # not math.ceil: a Python number, no index
_ZEROS = frozenset({"torch.zeros", "numpy.zeros", "torch.tensor", "numpy.array"})
_CEIL_DIV_NAMES = frozenset({"cdiv", "ceil_div", "ceildiv", "div_up", "div_round_up"})

ARANGE: Term = ("arange",)


class Names(Protocol):
    """How names in the analysed code resolve (implemented by the analysis ``Context``)."""

    def qualified_name(self, node: ast.expr) -> str | None:
        """``numpy.repeat`` for ``np.repeat`` after ``import numpy as np``; None if unknown."""

    def assigned(self, name: str) -> ast.expr | None:
        """The expression last assigned to the local ``name``, if any."""


@dataclass(frozen=True, slots=True)
class Form:
    """An index-building expression in canonical form."""

    kind: str  # e.g. "token-to-request mapping"
    term: Term  # the key: equal terms compute the same values
    sources: tuple[str, ...]  # names of the data it derives from

    def describe(self) -> str:
        """``token-to-request mapping of `query_start_loc_cpu```."""
        if not self.sources:
            return f"the {self.kind}"
        names = ", ".join(f"`{name}`" for name in self.sources)
        return f"the {self.kind} of {names}"


def canonical_form(node: ast.expr, names: Names) -> Form | None:
    """The canonical form of ``node`` when it builds one of the known index arrays."""
    term = canonical_term(node, names)
    kind = kind_of(term)
    if kind is None:
        return None
    return Form(kind, term, tuple(sorted(set(_data_names(term)))))


def canonical_term(node: ast.expr, names: Names) -> Term:
    """The canonical term of any expression (unknown parts keep their structure)."""
    return _Reducer(names).term(node)


def kind_of(term: Term) -> str | None:
    """What an index term computes, or None when it is not an index-building term."""
    head = term[0]
    chunked = len(term) > 1 and isinstance(term[1], tuple) and term[1][0] == "ceil_div"
    if head == "segment_ids":
        return "chunk-to-sequence index" if chunked else "token-to-request mapping"
    if head == "positions":
        return "chunk index within each sequence" if chunked else "position within each request"
    if head == "segment_starts":
        return "request start of every token"
    if head == "offsets":
        return "chunk offsets" if chunked else "cumulative offsets"
    if head == "starts":
        return "start offsets"
    if head == "lengths":
        return "per-sequence lengths"
    if head == "ceil_div" and term[1][0] == "lengths":
        return "chunk counts per sequence"  # of lengths taken from offsets: not of a scalar
    if head == "stack" and len(term) == 3:
        first, second = term[1], term[2]
        if first[0] == "segment_ids" and second == ("positions", first[1]):
            return "chunk indices" if first[1][0] == "ceil_div" else "(request, position) pairs"
    return None


def _data_names(term: Term) -> Iterator[str]:
    if term[0] == "data":
        yield term[1]
        return
    for part in term[1:]:
        if isinstance(part, tuple):
            yield from _data_names(part)


# ---------------------------------------------------------------- constructors
# Each applies the identities that make equivalent spellings meet.


def _lengths(offsets: Term) -> Term:
    if offsets[0] == "offsets":
        return offsets[1]
    return ("lengths", offsets)


def _offsets(lengths: Term) -> Term:
    if lengths[0] == "lengths":
        return lengths[1]  # offsets are assumed to start at 0
    return ("offsets", lengths)


def _starts(lengths: Term) -> Term:
    return _drop_last(_offsets(lengths))


def _drop_last(term: Term) -> Term:
    if term[0] == "offsets":
        return ("starts", term[1])
    return ("drop_last", term)


def _drop_first(term: Term) -> Term:
    if term[0] == "offsets":
        return ("cumsum", term[1])
    return ("drop_first", term)


def _cumsum(term: Term) -> Term:
    if term[0] == "prepend0":
        return _offsets(term[1])
    if term[0] == "lengths":
        return _drop_first(term[1])
    return ("cumsum", term)


def _prepend_zero(term: Term) -> Term:
    if term[0] == "cumsum":
        return _offsets(term[1])
    if term[0] == "drop_first":
        return term[1]
    return ("prepend0", term)


def _inclusive_base(term: Term) -> Term | None:
    """``L`` when ``term`` is the inclusive cumulative sum of ``L``."""
    if term[0] == "cumsum":
        return term[1]
    if term[0] == "drop_first":
        return _lengths(term[1])
    return None


def _repeat(values: Term, counts: Term) -> Term:
    if values == ARANGE:
        return ("segment_ids", counts)
    if values == _starts(counts):
        return ("segment_starts", counts)
    return ("repeat", values, counts)


def _index(base: Term, index: Term) -> Term:
    if index[0] == "segment_ids":
        lengths = index[1]
        if base in (_starts(lengths), _offsets(lengths)):
            return ("segment_starts", lengths)
    return ("index", base, index)


def _subtract(left: Term, right: Term) -> Term:
    if left[0] == "drop_first" and right == _drop_last(left[1]):
        return _lengths(left[1])  # q[1:] - q[:-1]
    if left[0] == "drop_first" and right == left[1]:
        return _lengths(right)  # q[1 : n + 1] - q[:n]
    base = _inclusive_base(left)
    if base is not None and right == base:
        return _starts(base)  # cumsum(L) - L
    if left == ARANGE and right[0] == "segment_starts":
        return ("positions", right[1])
    if right == ("const", "1"):
        if left[0] == "searchsorted":
            return ("segment_ids", _lengths(left[1]))  # searchsorted(offsets, t, right) - 1
        if left[0] == "cumsum" and left[1][0] == "is_zero" and left[1][1][0] == "positions":
            return ("segment_ids", left[1][1][1])  # (positions == 0).cumsum(0) - 1
    return ("op", "Sub", left, right)


# ---------------------------------------------------------------- reduction


class _Reducer:
    def __init__(self, names: Names) -> None:
        self.names = names
        self.expanding: set[str] = set()
        self.depth = 0

    def term(self, node: ast.expr) -> Term:
        if self.depth > _MAX_DEPTH:
            return ("expr", ast.unparse(node))
        self.depth += 1
        try:
            return self._term(node)
        finally:
            self.depth -= 1

    def _term(self, node: ast.expr) -> Term:
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Attribute):
            if self.names.qualified_name(node) is not None:
                return ("ref", self.names.qualified_name(node))
            return ("data", node.attr)
        if isinstance(node, ast.Constant):
            return ("const", repr(node.value))
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.USub):
                return self._negative(node.operand)
            return ("op", type(node.op).__name__, self.term(node.operand))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            right = self.term(node.comparators[0])
            if isinstance(node.ops[0], ast.Eq) and right == ("const", "0"):
                return ("is_zero", self.term(node.left))
            return ("op", type(node.ops[0]).__name__, self.term(node.left), right)
        if isinstance(node, (ast.List, ast.Tuple)):
            return ("seq", *(self.term(element) for element in node.elts))
        return ("expr", ast.unparse(node))

    def _name(self, name: str) -> Term:
        if name in self.expanding:
            return ("data", name)
        value = self.names.assigned(name)
        if value is None:
            qualified = self.names.qualified_name(ast.Name(name, ast.Load()))
            return ("ref", qualified) if qualified else ("data", name)
        self.expanding.add(name)
        try:
            return self.term(value)
        finally:
            self.expanding.discard(name)

    def _is_arange(self, node: ast.Call) -> bool:
        """``arange(n)`` or ``arange(0, n)`` (numpy or torch, any dtype or device)."""
        if self.names.qualified_name(node.func) not in _ARANGE:
            return False
        return len(node.args) == 1 or (len(node.args) == 2 and _is_constant(node.args[0], 0))

    def _call(self, node: ast.Call) -> Term:
        if self._is_arange(node):
            return ARANGE
        func = node.func
        qualified = self.names.qualified_name(func)
        args = node.args
        if qualified is not None:
            return self._function(node, qualified, args)
        if isinstance(func, ast.Attribute):
            return self._method(node, func.attr, func.value, args)
        name = func.id if isinstance(func, ast.Name) else ast.unparse(func)
        return self._helper(node, name)

    def _helper(self, node: ast.Call, name: str) -> Term:
        final = name.rpartition(".")[2]
        if node.args and ("pinned" in final or "h2d" in final):
            return self.term(node.args[0])  # np_to_pinned_tensor(x), async_tensor_h2d(x, dev)
        if final in _CEIL_DIV_NAMES and len(node.args) == 2:
            return ("ceil_div", self.term(node.args[0]), self.term(node.args[1]))
        return ("call", final, *(self.term(arg) for arg in node.args))

    def _function(self, node: ast.Call, qualified: str, args: list[ast.expr]) -> Term:
        if qualified in _CONVERSIONS and len(args) == 1:
            return self.term(args[0])
        if qualified in _REPEAT and len(args) == 2:
            return _repeat(self.term(args[0]), self.term(args[1]))
        if qualified in _DIFF and len(args) == 1 and not _has_keyword(node, "prepend", "append"):
            return _lengths(self.term(args[0]))
        if qualified in _CUMSUM and args:
            return _cumsum(self.term(args[0]))
        if qualified in _CONCAT and len(args) == 1:
            return self._concatenate(args[0])
        if qualified in _STACK and len(args) >= 1 and isinstance(args[0], (ast.List, ast.Tuple)):
            return ("stack", *(self.term(element) for element in args[0].elts))
        if qualified in _SEARCHSORTED and len(args) == 2 and self._sorts_right(node):
            return self._searchsorted(self.term(args[0]), args[1])
        if qualified in _PAD and len(args) == 2 and _pads_one_before(args[1]):
            return _prepend_zero(self.term(args[0]))
        if qualified in _CEIL and len(args) == 1:
            return self._ceil(args[0])
        return self._helper(node, qualified)

    def _method(
        self, node: ast.Call, method: str, receiver: ast.expr, args: list[ast.expr]
    ) -> Term:
        if method in _CONVERSION_METHODS:
            return self.term(receiver)
        if method == "repeat_interleave" and len(args) == 1:
            return _repeat(self.term(receiver), self.term(args[0]))
        if method == "repeat" and len(args) == 1 and self._is_numpy_arange(receiver):
            return _repeat(ARANGE, self.term(args[0]))  # np.arange(n).repeat(L)
        if method == "diff" and not args and not node.keywords:
            return _lengths(self.term(receiver))
        if method == "cumsum":
            return _cumsum(self.term(receiver))
        if method == "eq" and len(args) == 1 and _is_constant(args[0], 0):
            return ("is_zero", self.term(receiver))
        if method in ("ceil", "ceil_") and not args:
            return self._ceil(receiver)
        return ("method", method, self.term(receiver), *(self.term(arg) for arg in args))

    def _is_numpy_arange(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Name) and node.id not in self.expanding:
            value = self.names.assigned(node.id)
            return value is not None and self._is_numpy_arange(value)
        return isinstance(node, ast.Call) and (
            self.names.qualified_name(node.func) == "numpy.arange"
        )

    def _sorts_right(self, node: ast.Call) -> bool:
        for keyword in node.keywords:
            if keyword.arg == "right" and _is_constant(keyword.value, True):
                return True
            if keyword.arg == "side" and _is_constant(keyword.value, "right"):
                return True
        return False

    def _searchsorted(self, boundaries: Term, values: ast.expr) -> Term:
        if self.term(values) != ARANGE:
            return ("call", "searchsorted", boundaries, self.term(values))
        base = _inclusive_base(boundaries)
        if base is not None:
            return ("segment_ids", base)  # searchsorted(offsets[1:], arange, right=True)
        return ("searchsorted", boundaries)

    def _concatenate(self, sequence: ast.expr) -> Term:
        if isinstance(sequence, ast.ListComp) and len(sequence.generators) == 1:
            generator = sequence.generators[0]
            element = sequence.elt
            if (
                isinstance(generator.target, ast.Name)
                and not generator.ifs
                and isinstance(element, ast.Call)
                and self.names.qualified_name(element.func) in _ARANGE
                and len(element.args) == 1
                and isinstance(element.args[0], ast.Name)
                and element.args[0].id == generator.target.id
            ):
                return ("positions", self.term(generator.iter))  # cat([arange(n) for n in L])
        if isinstance(sequence, (ast.List, ast.Tuple)):
            if len(sequence.elts) == 2 and self._is_zero_vector(sequence.elts[0]):
                return _prepend_zero(self.term(sequence.elts[1]))
            return ("cat", *(self.term(element) for element in sequence.elts))
        return ("cat", self.term(sequence))

    def _is_zero_vector(self, node: ast.expr) -> bool:
        if isinstance(node, (ast.List, ast.Tuple)):
            return len(node.elts) == 1 and _is_constant(node.elts[0], 0)
        if isinstance(node, ast.Call):
            qualified = self.names.qualified_name(node.func)
            method = node.func.attr if isinstance(node.func, ast.Attribute) else None
            if qualified in _ZEROS or method in ("new_tensor", "new_zeros"):
                return len(node.args) == 1 and (
                    _is_constant(node.args[0], 1) or self._is_zero_vector(node.args[0])
                )
        return False

    def _subscript(self, node: ast.Subscript) -> Term:
        base = self.term(node.value)
        index = node.slice
        if isinstance(index, ast.Slice) and index.step is None:
            lower, upper = index.lower, index.upper
            if _prefix_slice(index):
                name = _final_name(node.value)
                return ARANGE if name and "arange" in name else base  # self.arange_np[:n]
            if lower is None and upper is not None and _integer(upper) == -1:
                return _drop_last(base)
            if _is_constant(lower, 1) and (upper is None or not _is_negative(upper)):
                return _drop_first(base)
        if isinstance(index, ast.Slice):
            parts = (index.lower, index.upper, index.step)
            bounds = tuple(("none",) if part is None else self.term(part) for part in parts)
            return ("index", base, ("slice", *bounds))
        return _index(base, self.term(index))

    def _binary(self, node: ast.BinOp) -> Term:
        if isinstance(node.op, ast.FloorDiv):
            ceil = self._ceil_division(node.left, node.right)
            if ceil is not None:
                return ceil
        left, right = self.term(node.left), self.term(node.right)
        if isinstance(node.op, ast.Sub):
            return _subtract(left, right)
        return ("op", type(node.op).__name__, left, right)

    def _negative(self, operand: ast.expr) -> Term:
        # -(-L // c) is the ceiling of L / c
        if (
            isinstance(operand, ast.BinOp)
            and isinstance(operand.op, ast.FloorDiv)
            and isinstance(operand.left, ast.UnaryOp)
            and isinstance(operand.left.op, ast.USub)
        ):
            return ("ceil_div", self.term(operand.left.operand), self.term(operand.right))
        return ("op", "USub", self.term(operand))

    def _ceil_division(self, numerator: ast.expr, divisor: ast.expr) -> Term | None:
        """``(L + c - 1) // c`` (or ``(L + 63) // 64``) as a ceiling division."""
        terms: list[ast.expr] = []
        constant = _additive_terms(numerator, terms)
        if constant is None or len(terms) not in (1, 2):
            return None
        if len(terms) == 1:
            divisor_value = _integer(divisor)
            if divisor_value is None or constant != divisor_value - 1:
                return None
            return ("ceil_div", self.term(terms[0]), self.term(divisor))
        divisor_term = self.term(divisor)
        if constant != -1:
            return None
        first, second = (self.term(term) for term in terms)
        if second == divisor_term:
            return ("ceil_div", first, divisor_term)
        if first == divisor_term:
            return ("ceil_div", second, divisor_term)
        return None

    def _ceil(self, node: ast.expr) -> Term:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return ("ceil_div", self.term(node.left), self.term(node.right))
        return ("call", "ceil", self.term(node))


def _is_constant(node: ast.expr | None, value: object) -> bool:
    return (
        isinstance(node, ast.Constant) and type(node.value) is type(value) and node.value == value
    )


def _final_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


def _is_negative(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
    )


def _prefix_slice(index: ast.expr) -> bool:
    """``[:n]`` or ``[0:n]`` with ``n`` not negative."""
    return (
        isinstance(index, ast.Slice)
        and index.step is None
        and (index.lower is None or _is_constant(index.lower, 0))
        and index.upper is not None
        and not _is_negative(index.upper)
    )


def _integer(node: ast.expr) -> int | None:
    """The value of an integer literal (``-1`` included)."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _integer(node.operand)
        return None if inner is None else -inner
    return None


def _additive_terms(node: ast.expr, terms: list[ast.expr], sign: int = 1) -> int | None:
    """Split ``a + b - 1`` into its non-constant terms and the sum of its constants.

    Returns None when a non-constant term is subtracted (not a ceiling pattern).
    """
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        left = _additive_terms(node.left, terms, sign)
        right_sign = sign if isinstance(node.op, ast.Add) else -sign
        right = _additive_terms(node.right, terms, right_sign)
        return None if left is None or right is None else left + right
    value = _integer(node)
    if value is not None:
        return sign * value
    if sign < 0:
        return None
    terms.append(node)
    return 0


def _has_keyword(node: ast.Call, *names: str) -> bool:
    return any(keyword.arg in names for keyword in node.keywords)


def _pads_one_before(node: ast.expr) -> bool:
    """``(1, 0)``: one element before, none after (the pad value defaults to 0)."""
    return (
        isinstance(node, (ast.Tuple, ast.List))
        and len(node.elts) == 2
        and _is_constant(node.elts[0], 1)
        and _is_constant(node.elts[1], 0)
    )
