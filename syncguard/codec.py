"""How facts are encoded for the cache and for worker processes.

Facts travel as nested tuples of plain values: ``marshal`` loads those far faster
than ``pickle`` loads frozen dataclasses, which matters both for a warm run and for
results coming back from worker processes. Each encoding starts with three
digests: of the file's *interface* (what resolving other files' calls reads of it),
of its facts, and of their shape (the facts without line numbers, see
:mod:`syncguard.moves`).
"""

from __future__ import annotations

import hashlib
import marshal
import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from syncguard.facts import (
    CallSite,
    ClassFacts,
    FileError,
    FileFacts,
    Fix,
    FunctionFacts,
    Loop,
    Site,
    Span,
)
from syncguard.moves import lines_of, split_lines
from syncguard.values import Place, Value

DIGEST_SIZE = 16  # bytes of each of the three digests that start an encoding
_HEADER = 3 * DIGEST_SIZE
# A file's facts, encoded by :func:`encode_facts`.
Payload = bytes
# Decides from a call's callee whether to keep the call (the engine drops calls
# that cannot resolve in the linted tree).
CallFilter = Callable[[tuple], bool]

# The fields the codec below knows; if facts.py gains a field, the codec falls
# back to pickle (correct but slower) until it is taught the new field.
_KNOWN_FIELDS: dict[type, tuple[str, ...]] = {
    FileFacts: (
        "module", "imports", "functions", "classes", "compiled", "records", "globals",
        "registrars",
    ),
    FunctionFacts: (
        "qualname", "line", "class_name", "params", "kind", "decorators", "marker", "sites",
        "calls", "literal_defaults", "returns", "loops", "steps", "host_result",
        "result_sources", "part_sources",
    ),
    ClassFacts: (
        "qualname", "line", "bases", "attribute_types", "init_parameters", "host_fields",
        "attribute_values", "decorators",
    ),
    CallSite: (
        "callee", "span", "statement", "args", "kwargs", "in_loop", "requires", "spread",
        "forwards_kwargs", "once", "indirect", "spread_parts",
    ),
    Loop: ("line", "end_line", "flags"),
    Site: (
        "code", "span", "statement", "message", "suggestion", "value", "in_loop", "fix",
        "requires",
    ),
    Fix: ("applicability", "description", "codemod", "span", "arguments"),
    Span: ("line", "column", "end_line", "end_column"),
    Value: ("place", "params", "tags"),
    FileError: ("line", "column", "message"),
}  # fmt: skip


def codec_is_current() -> bool:
    """True when the compact codec knows every field of the fact classes."""
    return all(tuple(f.name for f in fields(cls)) == names for cls, names in _KNOWN_FIELDS.items())


_COMPACT = codec_is_current()


def _span(span: Span) -> tuple[int, int, int, int]:
    return (span.line, span.column, span.end_line, span.end_column)


def _fix(fix: Fix | None) -> tuple[Any, ...] | None:
    if fix is None:
        return None
    return (fix.applicability, fix.description, fix.codemod, _span(fix.span), fix.arguments)


def encode_facts(outcome: FileFacts | FileError) -> Payload:
    """``outcome`` as bytes: its interface digest, a digest of the rest, a digest of its
    shape (see :mod:`syncguard.moves`), then nested tuples of plain values, marshalled."""
    plain = _plain(outcome)
    body = marshal.dumps(plain)
    digest = hashlib.blake2b(body, digest_size=DIGEST_SIZE).digest()
    stripped = split_lines(plain)[0]
    shape = hashlib.blake2b(marshal.dumps(stripped), digest_size=DIGEST_SIZE).digest()
    return interface_digest(outcome) + digest + shape + body


def interface_digest(outcome: FileFacts | FileError) -> bytes:
    """A hash of what resolving calls reads of a file besides its own calls (see
    :meth:`CallGraph.resolve_call <syncguard.callgraph.CallGraph.resolve_call>`): its
    module, imports, the names of its functions with what they return and how they are
    decorated, its classes with their bases, attributes and decorators, what its
    module-level names hold and the registries its functions fill. The order of
    functions and their lines are left out: moving code inside a file changes no other
    file's calls."""
    if isinstance(outcome, FileError):
        return bytes(DIGEST_SIZE)
    interface = (
        outcome.module,
        sorted(outcome.imports.items()),
        sorted(
            (name, f.returns, f.decorators, f.host_result, f.result_sources, f.part_sources)
            if f.returns or f.decorators or f.host_result
            else (name,)
            for name, f in outcome.functions.items()
        ),
        sorted(
            (name, c.bases, sorted(c.attribute_types.items()), sorted(c.attribute_values.items()),
             c.decorators)
            for name, c in outcome.classes.items()
        ),
        sorted(outcome.globals.items()),
        sorted(outcome.registrars.items()),
    )  # fmt: skip
    return hashlib.blake2b(repr(interface).encode(), digest_size=DIGEST_SIZE).digest()


def header_of(encoded: Payload) -> bytes:
    """The digests that start facts encoded by :func:`encode_facts`: enough for
    :func:`interface_of`, :func:`digest_of` and :func:`shape_of` (not for decoding)."""
    return encoded[:_HEADER]


def interface_of(encoded: Payload) -> bytes:
    """The interface digest of facts encoded by :func:`encode_facts`."""
    return encoded[:DIGEST_SIZE]


def digest_of(encoded: Payload) -> bytes:
    """A digest of the facts encoded by :func:`encode_facts`: equal digests, equal facts
    (files whose edits change no fact, e.g. a comment, keep it)."""
    return encoded[DIGEST_SIZE : 2 * DIGEST_SIZE]


def shape_of(encoded: Payload) -> bytes:
    """A digest of the facts encoded by :func:`encode_facts` but for their line numbers."""
    return encoded[2 * DIGEST_SIZE : _HEADER]


def lines_in(encoded: Payload) -> list[int]:
    """The line numbers of the facts encoded by :func:`encode_facts`, in a fixed order."""
    return lines_of(memoryview(encoded)[_HEADER:])


def _plain(outcome: FileFacts | FileError) -> tuple[Any, ...]:
    if isinstance(outcome, FileError):
        return ("error", outcome.line, outcome.column, outcome.message)
    if not _COMPACT:
        return ("pickle", pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL))
    values: dict[Value, int] = {}
    arguments: dict[tuple[int, ...], int] = {}  # tuples of value indices, shared by calls
    keywords: dict[tuple[tuple[str, int], ...], int] = {}

    def index(table: dict[Any, int], item: Any) -> int:
        found = table.get(item)
        if found is None:
            found = table[item] = len(table)
        return found

    functions = []
    for function in outcome.functions.values():
        sites = tuple(
            (site.code, _span(site.span), site.statement, site.message, site.suggestion,
             index(values, site.value), site.in_loop, _fix(site.fix), site.requires)
            for site in function.sites
        )  # fmt: skip
        calls = tuple(
            (call.callee, _span(call.span), call.statement,
             index(arguments, tuple(index(values, arg) for arg in call.args)),
             index(keywords, tuple((name, index(values, arg)) for name, arg in call.kwargs)),
             call.in_loop, call.requires, call.spread, call.forwards_kwargs, call.once,
             call.indirect, None if call.spread_parts is None else index(values, call.spread_parts))
            for call in function.calls
        )  # fmt: skip
        loops = tuple(
            (loop.line, loop.end_line, tuple(sorted(loop.flags))) for loop in function.loops
        )
        functions.append(
            (function.qualname, function.line, function.class_name, function.params,
             function.kind, function.decorators, function.marker, sites, calls,
             function.literal_defaults, function.returns, loops, function.steps,
             function.host_result, function.result_sources, function.part_sources)
        )  # fmt: skip
    classes = tuple(
        (
            c.qualname,
            c.line,
            c.bases,
            c.attribute_types,
            c.init_parameters,
            tuple(sorted(c.host_fields)),
            c.attribute_values,
            c.decorators,
        )
        for c in outcome.classes.values()
    )
    table = tuple(
        (int(value.place), tuple(sorted(value.params)), tuple(sorted(value.tags)))
        for value in values
    )
    records = pickle.dumps(outcome.records, pickle.HIGHEST_PROTOCOL) if outcome.records else None
    return (
        "facts", outcome.module, outcome.imports, tuple(functions), classes,
        tuple(outcome.compiled), table, tuple(arguments), tuple(keywords), records,
        outcome.globals, outcome.registrars,
    )  # fmt: skip


def _decode_fix(data: tuple[Any, ...] | None) -> Fix | None:
    if data is None:
        return None
    applicability, description, codemod, span, arguments = data
    return Fix(applicability, description, codemod, Span(*span), tuple(arguments))


def decode_facts(
    encoded: Payload,
    keep_call: CallFilter | None = None,
    *,
    only_calls: Mapping[str, Sequence[int]] | None = None,
    positions: dict[str, list[int]] | None = None,
) -> FileFacts | FileError:
    """The facts ``encoded`` by :func:`encode_facts`, without the calls ``keep_call``
    rejects; raises on bad data.

    ``only_calls`` (qualname -> positions in the encoding) decodes those calls alone
    instead; ``positions``, when given, receives the positions of the calls kept."""
    if len(encoded) < _HEADER:
        raise ValueError("truncated facts")
    payload = marshal.loads(memoryview(encoded)[_HEADER:])
    kind = payload[0]
    if kind == "error":
        return FileError(payload[1], payload[2], payload[3])
    if kind == "pickle":
        facts = pickle.loads(payload[1])
        if not isinstance(facts, FileFacts):
            raise TypeError("not a FileFacts")
        if only_calls is not None:
            for qualname, function in facts.functions.items():
                at = only_calls.get(qualname, ())
                function.calls = [function.calls[index] for index in at]
        elif keep_call is not None or positions is not None:
            prune_calls(facts, keep_call or _keep_every_call, positions)
        return facts
    if kind != "facts":
        raise ValueError(f"unknown payload kind {kind!r}")
    (_, module, imports, encoded_functions, encoded_classes, compiled, table, argument_table,
     keyword_table, records, globals_, registrars) = payload  # fmt: skip
    values = [_VALUES.get(entry) or _value(entry) for entry in table]
    arguments = [tuple([values[i] for i in entry]) for entry in argument_table]
    keywords = [tuple([(name, values[i]) for name, i in entry]) for entry in keyword_table]
    functions: dict[str, FunctionFacts] = {}
    for function in encoded_functions:
        (qualname, line, class_name, params, kind_, decorators, marker, sites, calls,
         literal_defaults, returns, loops, steps, host_result, result_sources, part_sources
         ) = function  # fmt: skip
        if only_calls is not None:
            wanted = only_calls.get(qualname)
            calls = [calls[index] for index in wanted] if wanted else ()
        elif positions is not None:
            kept = [
                index for index, call in enumerate(calls) if keep_call is None or keep_call(call[0])
            ]
            positions[qualname] = kept
            calls = [calls[index] for index in kept]
        elif keep_call is not None:
            calls = [call for call in calls if keep_call(call[0])]
        # (Most functions have neither: spare building comprehensions for them.)
        functions[qualname] = FunctionFacts(
            qualname, line, class_name, params, kind_, decorators, marker,
            [
                Site(code, Span(*span), statement, message, suggestion, values[value],
                     in_loop, _decode_fix(fix), requires)
                for code, span, statement, message, suggestion, value, in_loop, fix, requires
                in sites
            ] if sites else [],
            [
                CallSite(callee, Span(*span), statement, arguments[args], keywords[kwargs],
                         in_loop, requires, spread, forwards, once, indirect,
                         None if parts is None else values[parts])
                for callee, span, statement, args, kwargs, in_loop, requires, spread, forwards,
                once, indirect, parts in calls
            ] if calls else [],
            literal_defaults,
            returns,
            tuple(
                Loop(line_, end, frozenset(flags)) for line_, end, flags in loops
            ) if loops else (),
            steps,
            host_result,
            result_sources,
            part_sources,
        )  # fmt: skip
    classes = {
        qualname: ClassFacts(
            qualname, line, bases, attribute_types, init_parameters, frozenset(host_fields),
            attribute_values, class_decorators,
        )
        for qualname, line, bases, attribute_types, init_parameters, host_fields,
        attribute_values, class_decorators in encoded_classes
    }  # fmt: skip
    return FileFacts(
        module,
        imports,
        functions,
        classes,
        list(compiled),
        pickle.loads(records) if records is not None else {},
        globals_,
        registrars,
    )


def _keep_every_call(callee: tuple) -> bool:
    return True


# Values decoded so far: a few dozen distinct ones serve every file (they are immutable).
_VALUES: dict[tuple[int, tuple[str, ...], tuple[str, ...]], Value] = {}


def _value(entry: tuple[int, tuple[str, ...], tuple[str, ...]]) -> Value:
    place, params, tags = entry
    value = _VALUES[entry] = Value(Place(place), frozenset(params), frozenset(tags))
    return value


def prune_calls(
    facts: FileFacts, keep_call: CallFilter, positions: dict[str, list[int]] | None = None
) -> None:
    """Drop from ``facts`` the calls ``keep_call`` rejects; ``positions``, when given,
    receives the former positions of the calls kept."""
    for qualname, function in facts.functions.items():
        kept = [index for index, call in enumerate(function.calls) if keep_call(call.callee)]
        function.calls = [function.calls[index] for index in kept]
        if positions is not None:
            positions[qualname] = kept
