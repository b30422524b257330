"""The rewrites behind ``--fix``, ``--diff`` and editor code actions, as LibCST codemods.

A rule attaches a :class:`~syncguard.facts.Fix` naming a codemod and the span of the node
it rewrites (see :mod:`syncguard.fixes`); nothing here runs while linting, and LibCST is
imported only when a fix is applied or previewed. :func:`apply_fixes` finds, with the
stdlib ``ast``, the smallest run of whole statements around each fix, parses only those
lines with LibCST (positions included), lets each codemod rewrite the node whose position
is the fix's span, and splices the regenerated lines back: everything outside the node,
and inside it what the codemod keeps, stays byte for byte (comments, parentheses, line
continuations, tabs, CRLF). The new statements are parsed again with LibCST and the whole
file with Python's own parser before the result is returned.

Adding a codemod (``--add-noqa``, removing unused suppressions...) is one small class::

    class AddNoqa(Codemod):
        name = "add-noqa"  # what a Fix's ``codemod`` names
        node_type = cst.SimpleStatementLine

        def matches(self, position, span):  # the statement line holding the finding
            return position.start.line <= span.line <= position.end.line

        def rewrite(self, node, arguments):
            ...  # return the new node, or None when it cannot be rewritten

and a ``Fix(applicability, description, "add-noqa", span, arguments)`` for each place.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from typing import ClassVar

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from syncguard.facts import LINE_BREAK, Edit, Fix, Span

CODEMODS: dict[str, Codemod] = {}


class Codemod:
    """One kind of rewrite: a node of ``node_type`` located by a fix's span becomes what
    :meth:`rewrite` returns. Subclasses register themselves under ``name``."""

    name: ClassVar[str]
    node_type: ClassVar[type[cst.CSTNode]]

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        CODEMODS[cls.name] = cls()

    def matches(self, position: CodeRange, span: Span) -> bool:
        """True when the node at ``position`` (file lines, 0-based columns) is the target."""
        return (position.start.line, position.start.column + 1) == (span.line, span.column) and (
            position.end.line,
            position.end.column + 1,
        ) == (span.end_line, span.end_column)

    def rewrite(self, node: cst.CSTNode, arguments: tuple[str, ...]) -> cst.CSTNode | None:
        """The rewritten ``node`` (its children already rewritten), or None if impossible."""
        raise NotImplementedError


# ------------------------------------------------------------------ the codemods

_SPACE = cst.SimpleWhitespace(" ")


def _keyword(name: str, value: str) -> cst.Arg:
    return cst.Arg(
        keyword=cst.Name(name),
        value=cst.parse_expression(value),
        equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")),
    )


def _append(args: Sequence[cst.Arg], new: cst.Arg) -> list[cst.Arg]:
    """``args`` and then ``new``; a trailing comma (and the comment after it) moves to
    ``new``, so the call keeps its layout."""
    if not args:
        return [new]
    last = args[-1]
    trailing = last.comma
    before = last.with_changes(comma=cst.Comma(whitespace_after=_SPACE))
    return [*args[:-1], before, new.with_changes(comma=trailing)]


class ReplaceNode(Codemod):
    """Replace an expression by ``arguments[0]``, keeping the parentheses around it."""

    name = "replace"
    node_type = cst.BaseExpression

    def rewrite(self, node: cst.CSTNode, arguments: tuple[str, ...]) -> cst.CSTNode | None:
        assert isinstance(node, cst.BaseExpression)
        new = cst.parse_expression(arguments[0])
        return new.with_changes(lpar=node.lpar, rpar=node.rpar) if node.lpar else new


class SetKeyword(Codemod):
    """Give a call ``keyword=value`` (arguments: keyword, value): the value of the keyword
    is replaced where it is there, else the keyword is added after the last argument."""

    name = "set-keyword"
    node_type = cst.Call

    def rewrite(self, node: cst.CSTNode, arguments: tuple[str, ...]) -> cst.CSTNode | None:
        assert isinstance(node, cst.Call)
        keyword, value = arguments
        for index, arg in enumerate(node.args):
            if arg.keyword is not None and arg.keyword.value == keyword:
                changed = arg.with_changes(value=cst.parse_expression(value))
                return node.with_changes(
                    args=[*node.args[:index], changed, *node.args[index + 1 :]]
                )
        return node.with_changes(args=_append(node.args, _keyword(keyword, value)))


class CallMethod(Codemod):
    """``receiver.m(...)`` -> ``receiver.method(new arguments)`` (arguments: method, the new
    argument list as code); the receiver, parenthesised or spread over lines, is kept."""

    name = "call-method"
    node_type = cst.Call

    def rewrite(self, node: cst.CSTNode, arguments: tuple[str, ...]) -> cst.CSTNode | None:
        assert isinstance(node, cst.Call)
        method, code = arguments
        if not isinstance(node.func, cst.Attribute):
            return None
        template = cst.parse_expression(f"_({code})")
        assert isinstance(template, cst.Call)
        return node.with_changes(
            func=node.func.with_changes(attr=cst.Name(method)), args=template.args
        )


class PinnedCopy(Codemod):
    """``factory(data, device=d, ...)`` -> ``factory(data, pin_memory=True, ...).to(d,
    non_blocking=True)``: the data is built in pinned memory and copied asynchronously
    (``pin_memory=True`` takes the place of ``device=d``, with its comma and comments)."""

    name = "pinned-copy"
    node_type = cst.Call

    def rewrite(self, node: cst.CSTNode, arguments: tuple[str, ...]) -> cst.CSTNode | None:
        assert isinstance(node, cst.Call)
        index = next(
            (i for i, arg in enumerate(node.args) if arg.keyword and arg.keyword.value == "device"),
            None,
        )
        if index is None:
            return None
        device = node.args[index]
        pinned = device.with_changes(keyword=cst.Name("pin_memory"), value=cst.Name("True"))
        args = [*node.args[:index], pinned, *node.args[index + 1 :]]
        copy = cst.Attribute(
            value=node.with_changes(args=args, lpar=[], rpar=[]), attr=cst.Name("to")
        )
        return cst.Call(
            func=copy,
            args=[
                cst.Arg(device.value, comma=cst.Comma(whitespace_after=_SPACE)),
                _keyword("non_blocking", "True"),
            ],
            lpar=node.lpar,
            rpar=node.rpar,
        )


class OneElementSlice(Codemod):
    """``buf[..., k] = v`` -> ``buf[..., k:k+1] = v`` for a literal ``k`` (``-1`` -> ``-1:``):
    the subscript's last index becomes a slice of one element."""

    name = "one-element-slice"
    node_type = cst.Subscript

    def rewrite(self, node: cst.CSTNode, arguments: tuple[str, ...]) -> cst.CSTNode | None:
        assert isinstance(node, cst.Subscript)
        last = node.slice[-1]
        if not isinstance(last.slice, cst.Index) or last.slice.star is not None:
            return None
        value = last.slice.value
        number = _literal_int(value)
        if number is None:
            return None
        upper = None if number == -1 else _integer(number + 1)
        element = last.with_changes(slice=cst.Slice(lower=value, upper=upper))
        return node.with_changes(slice=[*node.slice[:-1], element])


def _integer(number: int) -> cst.BaseExpression:
    """The literal ``number`` (LibCST's Integer holds no sign: ``-1`` is a unary minus)."""
    if number < 0:
        return cst.UnaryOperation(cst.Minus(), cst.Integer(str(-number)))
    return cst.Integer(str(number))


def _literal_int(node: cst.BaseExpression) -> int | None:
    if isinstance(node, cst.Integer) and not node.lpar:
        return int(node.evaluated_value)
    if (
        isinstance(node, cst.UnaryOperation)
        and isinstance(node.operator, cst.Minus)
        and isinstance(node.expression, cst.Integer)
        and not node.lpar
    ):
        return -int(node.expression.evaluated_value)
    return None


class SetComment(Codemod):
    """Make ``arguments[0]`` the comment at the end of the line ``span`` starts on; ``""``
    removes the comment and the blanks before it (suppression comments: ``--add-noqa``,
    and removing what silences nothing)."""

    name = "set-comment"
    node_type: ClassVar[type[cst.CSTNode]] = cst.TrailingWhitespace

    def matches(self, position: CodeRange, span: Span) -> bool:
        return position.start.line == span.line

    def rewrite(self, node: cst.CSTNode, arguments: tuple[str, ...]) -> cst.CSTNode | None:
        assert isinstance(node, (cst.TrailingWhitespace, cst.EmptyLine))
        if not arguments[0]:
            return node.with_changes(whitespace=cst.SimpleWhitespace(""), comment=None)
        whitespace = node.whitespace
        if isinstance(node, cst.TrailingWhitespace) and node.comment is None:
            whitespace = cst.SimpleWhitespace("  ")  # after code: two blanks, as PEP 8 has it
        return node.with_changes(whitespace=whitespace, comment=cst.Comment(arguments[0]))


class SetCommentLine(SetComment):
    """:class:`SetComment` for a line that holds only a comment (left blank by ``""``)."""

    name = "set-comment-line"
    node_type = cst.EmptyLine


# ------------------------------------------------------------------ locating statements


def _lines(source: str) -> list[str]:
    """``source``'s lines with their line breaks, numbered as Python numbers them."""
    lines, start = [], 0
    for match in LINE_BREAK.finditer(source):
        lines.append(source[start : match.end()])
        start = match.end()
    if start < len(source) or not lines:
        lines.append(source[start:])
    return lines


def _extent(node: ast.stmt | ast.excepthandler | ast.match_case) -> tuple[int, int]:
    """First and last line of ``node``, a statement's decorators included."""
    if isinstance(node, ast.match_case):  # no position of its own
        return node.pattern.lineno, _extent(node.body[-1])[1]
    decorators = getattr(node, "decorator_list", ())
    return min([node.lineno, *(d.lineno for d in decorators)]), node.end_lineno or node.lineno


def _enclosing(tree: ast.Module, span: Span) -> list[ast.stmt]:
    """The statements around ``span``, innermost first."""
    chain: list[ast.stmt] = []
    node: ast.AST = tree
    while True:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                first, last = _extent(child)
                if first <= span.line and span.end_line <= last:
                    if isinstance(child, ast.stmt):
                        chain.append(child)
                    node = child
                    break
        else:
            return chain[::-1]


def _owns_its_lines(node: ast.stmt, lines: Sequence[str]) -> bool:
    """True when no other statement shares the first or last line of ``node``."""
    first_line, last_line = _extent(node)
    first = lines[first_line - 1].encode("utf-8")
    if first_line == node.lineno:
        before = first[: node.col_offset]
    else:
        before = first[: len(first) - len(first.lstrip())]  # up to the first decorator's @
    last = lines[last_line - 1].encode("utf-8")
    after = last[node.end_col_offset or 0 :].strip()
    return not before.strip() and (not after or after.startswith(b"#"))


def region(tree: ast.Module, lines: Sequence[str], span: Span) -> tuple[int, int]:
    """First and last line of the smallest run of whole statements holding ``span``."""
    for node in _enclosing(tree, span):
        if _owns_its_lines(node, lines):
            return _extent(node)
    return 1, len(lines)


def _regions(
    tree: ast.Module, lines: Sequence[str], fixes: Sequence[Fix]
) -> Iterator[tuple[int, int, list[Fix]]]:
    """Disjoint regions, bottom-up, each with the fixes inside it."""
    spans = sorted(((region(tree, lines, fix.span), fix) for fix in fixes), key=lambda s: s[0])
    merged: list[tuple[int, int, list[Fix]]] = []
    for (first, last), fix in spans:
        if merged and first <= merged[-1][1]:
            start, end, inside = merged[-1]
            merged[-1] = (start, max(end, last), [*inside, fix])
        else:
            merged.append((first, last, [fix]))
    return reversed(merged)


# ------------------------------------------------------------------ applying


class _Rewriter(cst.CSTTransformer):
    """Applies each fix's codemod to the node its span names (once per fix and node)."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, fixes: Sequence[Fix], line_offset: int) -> None:
        super().__init__()
        self.pending = list(fixes)
        self.line_offset = line_offset
        self.applied: list[Fix] = []

    def on_leave(  # type: ignore[override]  # returns one node, as the base allows
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> cst.CSTNode:
        position = self.get_metadata(PositionProvider, original_node, None)
        if position is None:
            return updated_node
        at = CodeRange(
            (position.start.line + self.line_offset, position.start.column),
            (position.end.line + self.line_offset, position.end.column),
        )
        for fix in list(self.pending):
            codemod = CODEMODS.get(fix.codemod)
            if codemod is None or not isinstance(updated_node, codemod.node_type):
                continue
            if not codemod.matches(at, fix.span):
                continue
            self.pending.remove(fix)
            rewritten = codemod.rewrite(updated_node, fix.arguments)
            if rewritten is not None:
                self.applied.append(fix)
                return rewritten  # one fix per node: a second one waits for the next pass
        return updated_node


def _rewrite_region(text: str, first_line: int, fixes: Sequence[Fix]) -> tuple[str, list[Fix]]:
    """``text`` (whole statements starting at ``first_line``) with ``fixes`` applied."""
    leading = text[: len(text) - len(text.lstrip(" \t\x0c"))]
    indented = bool(leading.rpartition("\x0c")[2])  # a form feed resets the indentation
    head = ""
    if indented:  # a block's statements parse as the body of an `if`
        newline = LINE_BREAK.search(text)
        head = "if 1:" + (newline.group() if newline else "\n")
    # LibCST drops a final lone "\r" (old Mac line endings), which would join the next
    # line to the last one of the region (into its comment, say): parse it as "\r\n".
    tail = "\n" if text.endswith("\r") else ""
    code = head + text + tail
    try:
        module = cst.parse_module(code)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return text, []
    if module.code != code:  # LibCST would not give these lines back as they are
        return text, []
    rewriter = _Rewriter(fixes, first_line - 1 - (1 if indented else 0))
    try:
        new = MetadataWrapper(module, unsafe_skip_copy=True).visit(rewriter).code
    except cst.CSTValidationError:  # a codemod built a node LibCST refuses: no fix here
        return text, []
    if not rewriter.applied or not new.endswith(tail):
        return text, []
    try:
        cst.parse_module(new)  # the rewritten statements parse again
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return text, []
    return new[len(head) : len(new) - len(tail)], rewriter.applied


def _compiles(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def apply_fixes(source: str, fixes: Sequence[Fix]) -> tuple[str, list[Fix]]:
    """``source`` with as many of ``fixes`` applied as keep it valid Python, and those fixes.

    Fixes whose node cannot be found, whose codemod declines, or that would break the
    file are left out; of two fixes for one node the first given is applied.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source, []
    ordered = list(dict.fromkeys(fixes))
    result, applied = _apply(source, tree, ordered)
    if not applied or _compiles(result):
        return result, applied
    # Some fix breaks the file where its statements alone parse: keep those that do not.
    kept: list[Fix] = []
    result = source
    for fix in applied:
        attempt, done = _apply(source, tree, [*kept, fix])
        if fix in done and _compiles(attempt):
            kept, result = done, attempt
    return result, kept


def _apply(source: str, tree: ast.Module, fixes: Sequence[Fix]) -> tuple[str, list[Fix]]:
    """``source`` with ``fixes`` (in order) applied region by region, not yet compiled."""
    lines = _lines(source)
    applied: list[Fix] = []
    for first, last, inside in _regions(tree, lines, fixes):
        new, done = _rewrite_region("".join(lines[first - 1 : last]), first, inside)
        if done:
            lines[first - 1 : last] = [new]
            applied.extend(done)
    return "".join(lines), sorted(applied, key=list(fixes).index)


def text_edit(source: str, fix: Fix) -> Edit | None:
    """The one text edit ``fix`` makes to ``source`` (what ``--output-format json`` and
    editors show), or None when it cannot be applied."""
    new, done = apply_fixes(source, [fix])
    if not done:
        return None
    old_end, new_end = len(source), len(new)
    limit = min(old_end, new_end)
    start = _common_length(lambda low, high: source[low:high] == new[low:high], limit)

    def same_end(low: int, high: int) -> bool:
        return source[old_end - high : old_end - low] == new[new_end - high : new_end - low]

    end = _common_length(same_end, limit - start)
    return Edit(
        Span(*_position(source, start), *_position(source, len(source) - end)),
        new[start : len(new) - end],
    )


def _common_length(same: Callable[[int, int], bool], limit: int) -> int:
    """The largest ``n <= limit`` with ``same(0, n)``, where ``same(low, high)`` says that
    two texts agree on the characters ``low:high`` (of their starts or of their ends):
    a bisection comparing slices, so a large file costs no Python loop per character."""
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if same(low, middle):
            low = middle
        else:
            high = middle - 1
    return low


def _position(source: str, offset: int) -> tuple[int, int]:
    """1-based line and column of character ``offset``."""
    line, start = 1, 0
    for match in LINE_BREAK.finditer(source, 0, offset):
        line, start = line + 1, match.end()
    return line, offset - start + 1
