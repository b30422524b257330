"""Per-file facts: everything the project phase needs from one file.

Facts are plain, picklable data computed independently for each file (so they
can be cached and computed in parallel). They hold no syntax tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from syncguard.values import Value

# The qualname of a module's top-level code, as if it were a function.
MODULE_SCOPE = "<module>"

# What Python's tokenizer counts as a line break. str.splitlines also splits at form feeds
# and other separators, which would shift the lines after them against ``ast``'s numbers.
LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(source: str) -> list[str]:
    """The lines of ``source`` as :class:`Span` numbers them (``lines[span.line - 1]``)."""
    if "\r" not in source:
        return source.split("\n")  # the usual case, and much faster than the pattern
    return LINE_BREAK.split(source)


@dataclass(frozen=True, slots=True)
class Span:
    """A 1-based source range (columns count characters, end exclusive)."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text in ``span`` by ``text``."""

    span: Span
    text: str


@dataclass(frozen=True, slots=True)
class Fix:
    """A rewrite that removes a finding: the LibCST codemod named ``codemod`` (see
    :mod:`syncguard.codemods`) applied to the node at ``span``, given ``arguments``;
    ``applicability`` is ``safe`` or ``unsafe``."""

    applicability: str
    description: str
    codemod: str
    span: Span
    arguments: tuple[str, ...] = ()


# A condition on a parameter under which code runs: (parameter, state), state one of
# "none" (``p is None``), "not-none", "true" (``if p:``) or "false" (``if not p:``).
Requirement = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Site:
    """One place in a function where a rule matched.

    ``value`` is the placement of the data the op works on: ``PARAM`` sites
    sync only when a caller passes device data for one of ``value.params``.
    """

    code: str
    span: Span
    statement: tuple[int, int]  # first and last line of the enclosing statement
    message: str
    suggestion: str
    value: Value
    in_loop: bool
    fix: Fix | None = None
    requires: tuple[Requirement, ...] = ()  # the enclosing ``if``s on parameters


@dataclass(frozen=True, slots=True)
class CallSite:
    """A call that may reach a function of the linted tree.

    ``callee`` is unresolved: ``("name", f)``, ``("dotted", "a.b.f")``,
    ``("self", method)``, ``("attr", self_attribute, method)``, ``("on", receiver,
    method)`` and ``("value", callable)`` (a method of, or a call of, what a type
    expression of :mod:`syncguard.receivers` describes), or ``("method", name)`` (a
    method of an object of unknown class).
    """

    callee: tuple
    span: Span
    statement: tuple[int, int]
    args: tuple[Value, ...]
    kwargs: tuple[tuple[str, Value], ...]
    in_loop: bool
    requires: tuple[Requirement, ...] = ()  # the enclosing ``if``s on parameters
    spread: bool = False  # passes ``*args`` or ``**options``: any parameter may be given
    # Passes on the caller's own ``**kwargs``: a parameter not given here is given exactly
    # when the caller's callers give it.
    forwards_kwargs: bool = False
    # In code that runs once (lazy initialisation): it tells only what is built where.
    once: bool = False
    # The function is passed as an argument (a callback, ``partial(f, ...)``), not called
    # here: the code it is given to calls it, with arguments this call does not show.
    indirect: bool = False
    # A trailing ``*parts`` where ``parts`` holds what a call returned (``parts = f()``;
    # ``g(*parts)``): what it is, each further positional parameter getting its part as
    # if unpacked (``a, b = parts; g(a, b)``). None for any other spread.
    spread_parts: Value | None = None


@dataclass(frozen=True, slots=True)
class Loop:
    """A ``for`` / ``while`` loop of a function: its lines (the calls and sites on them
    are its body's) and what its body shows: ``steps`` (a ``.backward()`` or an optimizer
    step), ``model`` (a call of the object itself or of something named a model)."""

    line: int
    end_line: int
    flags: frozenset[str] = frozenset()

    def holds(self, line: int) -> bool:
        return self.line <= line <= self.end_line


@dataclass(slots=True)
class FunctionFacts:
    """A function or method, with its sync sites and outgoing calls."""

    qualname: str  # within the module, e.g. "Model.forward" or "outer.inner"
    line: int
    class_name: str | None  # qualname of the enclosing class for methods
    params: tuple[str, ...]
    kind: str  # "function", "method", "staticmethod" or "classmethod"
    decorators: tuple[str, ...]  # qualified where imports allow, e.g. "torch.compile"
    marker: str | None  # "hot" / "cold" from a ``# syncguard: hot`` comment on the def line
    sites: list[Site] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)
    # Parameters whose default is a constant: (name, "none" / "false" / "true").
    literal_defaults: tuple[tuple[str, str], ...] = ()
    # What it returns, as a type expression (see :mod:`syncguard.receivers`); () unknown.
    returns: tuple = ()
    loops: tuple[Loop, ...] = ()
    steps: bool = False  # calls ``.backward()`` or steps an optimizer itself
    host_result: bool = False  # every ``return`` gives host data, if ``result_sources`` do
    # Functions of other modules whose results it returns (qualified as imported).
    result_sources: tuple[str, ...] = ()
    # When it returns tuples of one length: per part, those functions (host data when
    # theirs is), or None when the part may be device data.
    part_sources: tuple[tuple[str, ...] | None, ...] = ()


@dataclass(slots=True)
class ClassFacts:
    """A class: its bases (qualified where imports allow), typed attributes, the flags its
    ``__init__`` stores from parameters and the fields it declares as host data."""

    qualname: str
    line: int
    bases: tuple[str, ...]
    attribute_types: dict[str, str]  # self.attr = SomeClass(...) in __init__
    # self.attr = param in __init__, the only assignment of self.attr in the class.
    init_parameters: dict[str, str] = field(default_factory=dict)
    # Fields declared as host data (``lens: np.ndarray``, ``lens: torch.Tensor  # CPU``).
    host_fields: frozenset[str] = frozenset()
    # What ``self.<attribute>`` is given anywhere in the class or declared as (type
    # expressions, see :mod:`syncguard.receivers`).
    attribute_values: dict[str, tuple] = field(default_factory=dict)
    decorators: tuple[str, ...] = ()


@dataclass(slots=True)
class FileFacts:
    """Everything one file contributes to the project phase."""

    module: str
    imports: dict[str, str]  # local name -> qualified target (relative imports resolved)
    functions: dict[str, FunctionFacts]
    classes: dict[str, ClassFacts]
    compiled: list[tuple[str, tuple[str, ...]]]  # (caller, callee ref) for torch.compile(f)
    # Rule-specific facts: rule code -> (qualname of the function, item) from ``ctx.record``.
    records: dict[str, list[tuple[str, object]]] = field(default_factory=dict)
    # What module-level names hold (type expressions: registries of functions, objects).
    globals: dict[str, tuple] = field(default_factory=dict)
    # Function (qualname) -> the module-level name it registers its argument into: a
    # registration decorator (``@register("cuda")``).
    registrars: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a chain: a line inside a function."""

    path: str
    line: int
    function: str  # fully qualified: module.qualname

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.function}"


@dataclass(frozen=True, slots=True)
class FileError:
    """A file that could not be analysed, with a located message."""

    line: int
    column: int
    message: str
