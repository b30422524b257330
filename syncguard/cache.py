"""The on-disk cache: per-file facts, and the findings of whole runs.

Layout of a cache folder (``.syncguard_cache/`` beside the config file, or
``--cache-dir``)::

    CACHEDIR.TAG                 tells backup tools to skip the folder
    .gitignore                   "*": the folder never shows up in git status
    facts-<fingerprint>-NN.pack  absolute path -> (content key, flags, facts, stamp), 16 shards
    runs-<fingerprint>.pack      run key -> findings of the project phase
    calls-<fingerprint>-<key>.pack  per file: where its calls resolve and its hot roots,
                                 for files whose interfaces and settings hash to <key>

The fingerprint covers the cache format, the Python version (``ast`` differs
between versions) and the source of syncguard and its rules, so a new version
or an edited rule never reads facts computed by another one. A facts entry is
used only when its content key (hash of the file's bytes, module name, package
flag) matches the file as it is now. To spare reading and hashing every file, a
file's key is also trusted while its stamp (see :func:`stamp_of`) is the one
stored with it. Packs are written atomically (a temporary
file, then ``os.replace``) and carry a checksum: a corrupt, truncated or foreign
pack is ignored and rebuilt.

Facts travel as nested tuples of plain values (see :func:`encode_facts`):
``marshal`` loads those far faster than ``pickle`` loads frozen dataclasses,
which matters both for a warm run and for results coming back from worker
processes. Each encoding starts with a digest of the file's *interface* (what
resolving other files' calls reads of it): while no interface changes, where an
unchanged file's calls resolve is read back instead of worked out again. A digest
of the facts follows: the project phase's results are kept by the digests of
every file's facts, so an edit that changes no fact (a comment) reuses them.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import pickle
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import fields
from functools import cache
from pathlib import Path
from typing import Any

from syncguard._version import __version__
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

CACHE_FOLDER = ".syncguard_cache"
FORMAT = 7
_MAGIC = b"syncguard-cache\n"
_CHECKSUM_SIZE = 16
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by syncguard.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_KEPT_FINGERPRINTS = 3  # packs of older syncguard versions kept (several installs side by side)
_KEPT_RUNS = 4  # results of distinct runs kept (e.g. `check .` and a pre-commit file list)
SHARDS = 16  # facts packs per fingerprint: an edit rewrites one, not all of them
_KEPT_CALL_GRAPHS = 2  # resolved calls of distinct sets of files (a tree, a file list)
DIGEST_SIZE = 16  # bytes of each of the three digests that start an encoding
_HEADER = 3 * DIGEST_SIZE
# A file changed less than this long before it was read gets no stamp: a second write
# within the file system's timestamp granularity could leave size and times alike.
_RACY_NS = 2_000_000_000

# A file's facts, encoded by :func:`encode_facts`.
Payload = bytes
# Where the calls of one file resolve: for each function with calls that do, its
# qualname, the positions of those calls in the encoded facts and their callees.
ResolvedCalls = tuple[tuple[str, tuple[int, ...], tuple[tuple[tuple[str, str], ...], ...]], ...]
# What the project phase worked out for one file that holds while no interface and
# no setting changes: its content key, where its calls resolve, and the functions
# that are hot roots by their class or by the configured globs (qualname -> reason).
KnownFile = tuple[bytes, ResolvedCalls, dict[str, str]]
# What identifies a file's content without reading it: size, mtime, ctime, inode, and
# the module name and package flag of its content key (see :func:`stamp_of`).
Stamp = tuple[int, int, int, int, str, bool]
# Decides from a call's callee whether to keep the call (the engine drops calls
# that cannot resolve in the linted tree).
CallFilter = Callable[[tuple], bool]


# ---------------------------------------------------------------- fingerprint


@cache
def fingerprint() -> str:
    """A hash of everything besides a file's content that decides its facts."""
    from syncguard import rules

    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{FORMAT}|{__version__}|{sys.version_info[:2]}".encode())
    folders = [Path(__file__).parent, *map(Path, rules.__path__)]
    for folder in folders:
        for path in sorted(folder.glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def stamp_of(path: str, module: str, is_package: bool, now_ns: int) -> Stamp | None:
    """The stamp of the file at ``path``, taken before reading it at ``now_ns``
    (``time.time_ns()``); None if it cannot be trusted: no such file, or changed too
    shortly before (as git does for its index, a later write in the same clock tick
    would go unnoticed). A write changes the ctime, which no program can set back."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    if max(found.st_mtime_ns, found.st_ctime_ns) > now_ns - _RACY_NS:
        return None
    return (found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino, module, is_package)


def content_key(data: bytes, module: str, is_package: bool) -> bytes:
    """The key of a file's facts: its bytes, module name and package flag (SHA-256, which
    CPUs with SHA extensions hash about twice as fast as BLAKE2)."""
    digest = hashlib.sha256(data)
    digest.update(f"\0{module}\0{is_package}".encode())
    return digest.digest()[:16]


# ---------------------------------------------------------------------- codec

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


# ---------------------------------------------------------------------- packs


def _checksum(body: bytes | memoryview) -> bytes:
    """Of a pack's body (SHA-256: hashed in hardware by most CPUs, the fastest here)."""
    return hashlib.sha256(body).digest()[:_CHECKSUM_SIZE]


def _read_pack(path: Path) -> dict[Any, Any]:
    """The dict stored at ``path``; empty when missing, corrupt or foreign."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    header = len(_MAGIC) + _CHECKSUM_SIZE
    if len(data) < header or not data.startswith(_MAGIC):
        return {}
    body = memoryview(data)[header:]
    if _checksum(body) != data[len(_MAGIC) : header]:
        return {}
    try:
        loaded = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _write_pack(path: Path, content: dict[Any, Any]) -> None:
    """Store ``content`` at ``path`` atomically; raises OSError."""
    body = marshal.dumps(content)
    checksum = _checksum(body)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(_MAGIC + checksum)
            stream.write(body)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


class Cache:
    """The facts and run results of one cache folder, for one lint run.

    Nothing here raises on a bad cache: unreadable or corrupt data is a miss,
    and a failed write becomes one message in :attr:`warnings`.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.warnings: list[str] = []
        self._runs_path = folder / f"runs-{fingerprint()}.pack"
        # Per shard: absolute path -> (content key, ignore-file flag, error flag, facts,
        # the file's stamp when it was read or None).
        self._shards: list[dict[str, tuple[bytes, bool, bool, Payload, Stamp | None]]] = [
            {
                path: entry
                for path, entry in _read_pack(self._shard_path(shard)).items()
                if isinstance(path, str) and isinstance(entry, tuple) and len(entry) == 5
            }
            for shard in range(SHARDS)
        ]
        self._dirty: set[int] = set()
        self._runs: dict[bytes, tuple[bytes, bytes, bytes]] | None = None
        self._resolved: dict[bytes, dict[str, KnownFile]] = {}
        self._absolute_paths: dict[str, str] = {}

    def _absolute(self, path: str) -> str:
        """``os.path.abspath(path)``, worked out once per path (asked several times a run)."""
        found = self._absolute_paths.get(path)
        if found is None:
            found = self._absolute_paths[path] = os.path.abspath(path)
        return found

    def _shard_path(self, shard: int) -> Path:
        return self.folder / f"facts-{fingerprint()}-{shard:02d}.pack"

    def entry(self, path: str, key: bytes) -> tuple[bool, bool, Payload] | None:
        """(ignore-file flag, error flag, encoded facts) of the file at ``path`` if cached
        for ``key``."""
        absolute = self._absolute(path)
        entry = self._shards[shard_of(absolute)].get(absolute)
        if entry is None or entry[0] != key or not isinstance(entry[3], bytes):
            return None
        return bool(entry[1]), bool(entry[2]), entry[3]

    def trusted_key(self, path: str, stamp: Stamp) -> bytes | None:
        """The content key stored for the file at ``path`` if it was stored with
        ``stamp`` (the file is then as it was: no need to read it)."""
        absolute = self._absolute(path)
        entry = self._shards[shard_of(absolute)].get(absolute)
        if entry is None or entry[4] != stamp or not isinstance(entry[0], bytes):
            return None
        return entry[0]

    def store(
        self,
        path: str,
        key: bytes,
        ignored: bool,
        error: bool,
        payload: Payload,
        stamp: Stamp | None,
    ) -> None:
        """Remember the encoded facts of the file at ``path``, read when it had ``stamp``."""
        absolute = self._absolute(path)
        shard = shard_of(absolute)
        self._shards[shard][absolute] = (key, ignored, error, payload, stamp)
        self._dirty.add(shard)

    def restamp(self, path: str, stamp: Stamp | None) -> None:
        """Note that the file at ``path``, its facts found by content key, has ``stamp``."""
        absolute = self._absolute(path)
        shard = shard_of(absolute)
        entry = self._shards[shard].get(absolute)
        if entry is not None and entry[4] != stamp:
            self._shards[shard][absolute] = (*entry[:4], stamp)
            self._dirty.add(shard)

    def forget(self, path: str) -> None:
        """Drop the entry of ``path`` (it could not be decoded)."""
        absolute = self._absolute(path)
        shard = shard_of(absolute)
        if self._shards[shard].pop(absolute, None) is not None:
            self._dirty.add(shard)

    def findings(self, run_key: bytes) -> list[Any] | None:
        """The project-phase findings of an identical earlier run, if kept."""
        entry = self._run_entries().get(run_key)
        return _findings_in(entry[0]) if entry is not None else None

    def moved_findings(self, shape_key: bytes) -> tuple[bytes, list[Any]] | None:
        """The facts digests (joined) and the findings of an earlier run over files of the
        same shapes (see :mod:`syncguard.moves`), if kept."""
        for blob, shape, digests in self._run_entries().values():
            findings = _findings_in(blob) if shape == shape_key else None
            if findings is not None:
                return digests, findings
        return None

    def store_findings(
        self, run_key: bytes, findings: list[Any], shape_key: bytes = b"", digests: bytes = b""
    ) -> None:
        """Keep the findings of this run, with the shape key and the facts digests of its
        files (and those of a few recent other runs)."""
        runs = {  # an earlier run of the same shapes is superseded by this one
            key: entry
            for key, entry in self._run_entries().items()
            if key != run_key and not (shape_key and entry[1] == shape_key)
        }
        kept = dict(list(runs.items())[-(_KEPT_RUNS - 1) :]) if _KEPT_RUNS > 1 else {}
        kept[run_key] = (pickle.dumps(findings, pickle.HIGHEST_PROTOCOL), shape_key, digests)
        self._runs = kept
        self._save(self._runs_path, kept)

    def _run_entries(self) -> dict[bytes, tuple[bytes, bytes, bytes]]:
        if self._runs is None:
            self._runs = {
                key: entry
                for key, entry in _read_pack(self._runs_path).items()
                if isinstance(entry, tuple)
                and len(entry) == 3
                and all(isinstance(part, bytes) for part in entry)
            }
        return self._runs

    def previous(self, path: str) -> Payload | None:
        """The encoded facts stored for the file at ``path``, whatever its content was."""
        absolute = self._absolute(path)
        entry = self._shards[shard_of(absolute)].get(absolute)
        return entry[3] if entry is not None and isinstance(entry[3], bytes) else None

    def known_files(self, interface_key: bytes) -> dict[str, KnownFile]:
        """Per file path: what an earlier run over files whose interfaces (and the
        settings) hash to ``interface_key`` stored; empty if none."""
        found = self._resolved.get(interface_key)
        if found is None:
            found = self._resolved[interface_key] = {
                path: entry
                for path, entry in _read_pack(self._calls_path(interface_key)).items()
                if isinstance(path, str)
                and isinstance(entry, tuple)
                and len(entry) == 3
                and isinstance(entry[0], bytes)
                and isinstance(entry[1], tuple)
                and isinstance(entry[2], dict)
            }
        return found

    def store_known_files(self, interface_key: bytes, entries: dict[str, KnownFile]) -> None:
        """Keep what the project phase worked out for a set of files (and for one other
        set)."""
        path = self._calls_path(interface_key)
        self._resolved[interface_key] = entries
        self._save(path, entries)
        graphs = sorted(
            self.folder.glob(f"calls-{fingerprint()}-*.pack"),
            key=lambda found: (found == path, _modified(found)),
            reverse=True,
        )
        for old in graphs[_KEPT_CALL_GRAPHS:]:
            with contextlib.suppress(OSError):
                old.unlink()

    def interface(self, path: str) -> bytes | None:
        """The interface digest of the facts stored for the file at ``path``, whatever
        its content was then (a guess at its interface now); None unless those were
        facts of a linted file."""
        absolute = self._absolute(path)
        entry = self._shards[shard_of(absolute)].get(absolute)
        if entry is None or entry[1] or entry[2] or not isinstance(entry[3], bytes):
            return None
        return interface_of(entry[3])

    def drop_known_files(self) -> None:
        """Let go of what :meth:`known_files` read (large, and no longer needed)."""
        self._resolved.clear()

    def _calls_path(self, interface_key: bytes) -> Path:
        return self.folder / f"calls-{fingerprint()}-{interface_key.hex()}.pack"

    def save(self, linted: Iterable[str]) -> None:
        """Write back the shards that changed; forget files that no longer exist."""
        seen = {self._absolute(path) for path in linted}
        for shard, entries in enumerate(self._shards):
            gone = [path for path in entries if path not in seen and not os.path.exists(path)]
            for path in gone:
                del entries[path]
            if gone:
                self._dirty.add(shard)
        for shard in sorted(self._dirty):
            self._save(self._shard_path(shard), self._shards[shard])
        self._dirty.clear()

    def _save(self, path: Path, content: dict[Any, Any]) -> None:
        if self.warnings:
            return  # already failed once: one warning per run is enough
        try:
            prepare_folder(self.folder)
            _write_pack(path, content)
            _drop_old_packs(self.folder)
        except OSError as error:
            self.warnings.append(
                f"cannot write the cache in {self.folder}: {error.strerror or error} "
                "(linting works without it; --no-cache silences this)"
            )


def _findings_in(blob: bytes) -> list[Any] | None:
    try:
        findings = pickle.loads(blob)
    except Exception:
        return None
    return findings if isinstance(findings, list) else None


def shard_of(path: str) -> int:
    """The pack that holds the facts of the file at absolute ``path``."""
    return zlib.crc32(path.encode("utf-8", "surrogateescape")) % SHARDS


def prepare_folder(folder: Path) -> None:
    """Create ``folder`` with its ``CACHEDIR.TAG`` and ``.gitignore``; raises OSError."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("CACHEDIR.TAG", _CACHEDIR_TAG), (".gitignore", "*\n")):
        marker = folder / name
        if not marker.exists():
            marker.write_text(text, encoding="utf-8")


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0  # removed meanwhile by another run


def _drop_old_packs(folder: Path) -> None:
    """Remove the packs of all but the few most recently written fingerprints."""
    written: dict[str, float] = {}
    packs: list[tuple[Path, str]] = []
    for pack in (p for kind in ("facts", "runs", "calls") for p in folder.glob(f"{kind}-*.pack")):
        stamp = pack.stem.split("-")[1]
        try:
            modified = pack.stat().st_mtime
        except OSError:
            continue  # removed meanwhile by another run
        written[stamp] = max(written.get(stamp, 0.0), modified)
        packs.append((pack, stamp))
    recent = sorted(written, key=written.__getitem__, reverse=True)[:_KEPT_FINGERPRINTS]
    for pack, stamp in packs:
        if stamp not in recent:
            with contextlib.suppress(OSError):
                pack.unlink()
