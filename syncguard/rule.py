"""The rule API.

A rule is a class in its own module under ``rules/``. It declares its code,
name and one-line message, documents why the op syncs and how to fix it in its
docstring, lists ``VALID`` and ``INVALID`` examples (run by the test suite), and
implements ``visit_<NodeType>(self, node, ctx)`` methods over the stdlib
:mod:`ast` nodes of hot-path candidates. It reports through ``ctx.report``;
whether a report becomes a finding (hot path, placement of parameters, scope,
suppressions) is decided by the engine, and how it is shown by the reporters.

Project-level rules. Some waste is only visible across files (the same index
mapping rebuilt by three components). Such a rule stores picklable facts while it
visits a file, with ``ctx.record(item)``; each item is kept with the function it
came from. Once every file is analysed, the engine calls the rule's
``check_project(project)`` with a :class:`ProjectView`: the recorded items of that
rule (:class:`Record`: path, function, item) and whether and why each function is
hot (:class:`HotPath`, with its call chain). The rule yields
:class:`ProjectReport` objects; the engine turns them into findings like any
other (hot or not, select/ignore, per-file ignores, suppression comments on the
reported statement or on the extra ``suppressible_at`` statements, reporters).
The default ``check_project`` reports nothing.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from syncguard.facts import Fix, Span, Step
    from syncguard.values import Value

FAMILIES = {
    "0": "suppression hygiene",
    "1": "device-to-host read",
    "2": "data-dependent shape",
    "3": "host-to-device copy",
    "4": "explicit synchronization",
    "5": "redundant per-step work",
}


@dataclass(frozen=True)
class Valid:
    """Code the rule must not report (when linted as one file)."""

    code: str


@dataclass(frozen=True)
class Invalid:
    """Code the rule must report, at ``line`` when given; ``fixed`` is the code after ``--fix``.

    Examples are dedented with :func:`inspect.cleandoc` before linting, so
    ``line`` counts from the first line of code.
    """

    code: str
    line: int | None = None
    fixed: str | None = None


class Context(Protocol):
    """What the analysis offers a rule while it visits one function body."""

    @property
    def function(self) -> str:
        """Qualified name of the function being visited, within its module."""

    @property
    def in_loop(self) -> bool:
        """True inside a ``for``/``while`` body or a comprehension."""

    @property
    def default_device(self) -> bool:
        """True when a default device is in force (factories may create device tensors)."""

    def value(self, node: ast.expr) -> Value:
        """Where the data of ``node`` lives, with its tags."""

    def qualified_name(self, node: ast.expr) -> str | None:
        """``torch.nonzero`` for ``th.nonzero`` after ``import torch as th``; None if unknown."""

    def span(self, node: ast.AST) -> Span:
        """The 1-based character span of ``node``."""

    def source(self, node: ast.AST) -> str:
        """The source text of ``node``."""

    def text(self, node: ast.AST) -> str:
        """The exact text of ``node`` in the file, as written (for fixes)."""

    def assigned(self, name: str) -> ast.expr | None:
        """The expression last assigned to the local ``name`` in this function, if any."""

    def record(self, item: object) -> None:
        """Keep a picklable ``item`` for this rule's ``check_project`` (see the module doc)."""

    def report(
        self,
        node: ast.AST,
        *,
        subject: ast.expr | None,
        suggestion: str,
        message: str | None = None,
        fix: Fix | None = None,
    ) -> None:
        """Report ``node``; ``subject`` is the data whose placement decides whether it syncs.

        A subject on the host is never reported; ``None`` means the op always
        syncs (an explicit synchronize).
        """


@dataclass(frozen=True, slots=True)
class Record:
    """An item a rule recorded with ``ctx.record``, and where."""

    path: str
    function: str  # qualified name within its module, e.g. "Builder.build"
    item: object


@dataclass(frozen=True, slots=True)
class HotPath:
    """Why a function is hot: the reason and the calls from the hot root down to it."""

    reason: str
    chain: tuple[Step, ...]


@dataclass(frozen=True, slots=True)
class ProjectReport:
    """A finding of a project-level check, in ``function`` of the file at ``path``."""

    path: str
    function: str
    span: Span
    statement: tuple[int, int]  # first and last line: a suppression comment there applies
    message: str
    suggestion: str
    # More (first, last) statement lines of the same file where a suppression applies.
    suppressible_at: tuple[tuple[int, int], ...] = ()


class ProjectView(Protocol):
    """What a project-level check sees of the whole linted tree."""

    @property
    def scope(self) -> str:
        """``hot`` (only hot paths are reported) or ``all``."""

    def records(self, code: str) -> Sequence[Record]:
        """The items recorded by rule ``code`` in every file, in path and function order."""

    def hot(self, path: str, function: str) -> HotPath | None:
        """Why the function is hot, or None when it is not."""

    def qualified(self, path: str, function: str) -> str:
        """The function's fully qualified name (``package.module.Class.method``)."""


class Rule:
    """Base class of every rule; see the module docstring."""

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    # Substrings of which at least one must occur in a file for the rule to run on it.
    tokens: ClassVar[tuple[str, ...]] = ()
    # Measured cost, shown by ``syncguard rule``.
    cost: ClassVar[str] = ""
    # Whether the op also breaks a torch.compile graph (said in findings under compile).
    graph_break: ClassVar[bool] = True
    # Whether a match blocks the host; False for redundant-work rules (no "syncs" notes).
    blocks_host: ClassVar[bool] = True
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    def check_project(self, project: ProjectView) -> Iterable[ProjectReport]:
        """Findings that need the whole tree (see the module docstring); none by default."""
        return ()

    @classmethod
    def family(cls) -> str:
        return FAMILIES.get(cls.code[2:3], "other")

    @classmethod
    def fixable(cls) -> bool:
        return any(example.fixed is not None for example in cls.INVALID)
