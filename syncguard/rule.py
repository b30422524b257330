"""The rule API.

A rule is a class in its own module under ``rules/``. It declares its code,
name and one-line message, documents why the op syncs and how to fix it in its
docstring, lists ``VALID`` and ``INVALID`` examples (run by the test suite), and
implements ``visit_<NodeType>(self, node, ctx)`` methods over the stdlib
:mod:`ast` nodes of hot-path candidates. It reports through ``ctx.report``;
whether a report becomes a finding (hot path, placement of parameters, scope,
suppressions) is decided by the engine, and how it is shown by the reporters.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from syncguard.facts import Fix, Span
    from syncguard.values import Value

FAMILIES = {
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
    VALID: ClassVar[list[Valid]] = []
    INVALID: ClassVar[list[Invalid]] = []

    @classmethod
    def family(cls) -> str:
        return FAMILIES.get(cls.code[2:3], "other")

    @classmethod
    def fixable(cls) -> bool:
        return any(example.fixed is not None for example in cls.INVALID)
