"""The lint engine: discover files, analyse each one, run the project phase, filter.

:mod:`syncguard.perfile` is the per-file phase; ``lint_files`` drives a whole
run. The engine knows rules only through the registry in :mod:`syncguard.rules`.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from syncguard.bindings import TreeCallFilter
from syncguard.cache import (
    DIGEST_SIZE,
    Cache,
    CallFilter,
    KnownFile,
    Payload,
    Stamp,
    content_key,
    decode_facts,
    digest_of,
    header_of,
    interface_of,
    lines_in,
    prune_calls,
    shape_of,
    stamp_of,
)
from syncguard.config import Settings
from syncguard.discovery import discover, has_init_file, module_name
from syncguard.facts import FileError, FileFacts
from syncguard.hygiene import reported
from syncguard.moves import LineMap, carry, line_map
from syncguard.perfile import (
    Task,
    analyse_aside,
    analyse_bytes,
    analyse_text,
    analyze_path,
    analyze_source,
    encoded,
    pool_map,
)
from syncguard.project import Finding, FunctionId, HotSettings, Project, SourceFile, root_of
from syncguard.reading import Unreadable, read_bytes
from syncguard.rule import Rule
from syncguard.rules import all_rules

__all__ = ["LintResult", "Problem", "analyze_path", "analyze_source", "build_project", "lint_files"]


@dataclass(frozen=True, slots=True)
class Problem:
    """A path that could not be linted, with a located message."""

    path: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


@dataclass
class LintResult:
    """Findings (sorted, filtered) and problems of one run."""

    findings: list[Finding] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    files: int = 0
    rules: dict[str, type[Rule]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # e.g. a cache that cannot be written


def lint_files(
    paths: Sequence[str],
    *,
    settings: Settings | None = None,
    scope: str | None = None,
    sources: Mapping[str, str] | None = None,
    jobs: int = 1,
    cache_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LintResult:
    """Lint ``paths`` (files or folders) and return the sorted findings and problems.

    ``sources`` maps discovered paths to text linted instead of the file's
    contents (the fixer re-lints its edits before writing anything).
    ``jobs`` > 1 analyses files in that many processes; ``cache_dir`` keeps
    per-file facts and run results there between runs; ``progress(done,
    total)`` is called as files are analysed. None of them changes the result.
    """
    settings = settings or Settings()
    run_scope = scope or settings.scope
    cache = Cache(Path(cache_dir)) if cache_dir is not None else None
    with _gc_paused():
        result, units, rules, hot_settings = _analysed(
            paths, settings, sources or {}, jobs, cache, progress, lazy=True
        )
        linted = [unit for unit in units if not unit.error and not unit.ignored]
        run_key = _run_key(linted, hot_settings, run_scope, digest_of) if cache else None
        findings = cache.findings(run_key) if cache is not None and run_key else None
        if findings is None and cache is not None and _read_indexed(units, rules, cache, result):
            linted = [unit for unit in units if not unit.error and not unit.ignored]
            run_key = _run_key(linted, hot_settings, run_scope, digest_of)
            findings = cache.findings(run_key) if run_key else None
        shape_key = None  # wanted only when the run's findings must be worked out or carried
        if findings is None and run_key is not None:
            shape_key = _run_key(linted, hot_settings, run_scope, shape_of)
        if findings is None and cache is not None and run_key and shape_key:
            findings = _moved_findings(cache, shape_key, linted)
            if findings is not None:  # kept for this state of the files too
                cache.store_findings(run_key, findings, shape_key, _digests(linted))
        if findings is None:
            try:
                project, known, interface_key = _project(linted, rules, cache, hot_settings)
                findings = project.findings(run_scope)
            except Exception:  # a syncguard bug: say on which file, lint the rest
                findings = _isolated(linted, rules, hot_settings, run_scope, result)[1]
            else:
                if cache is not None and interface_key is not None:
                    _keep_known_files(cache, interface_key, known, linted, project)
                if cache is not None and run_key is not None:
                    cache.store_findings(run_key, findings, shape_key or b"", _digests(linted))
        for unit in units:  # let the facts go before the collector resumes
            unit.outcome = unit.targets = unit.roots = unit.positions = None
        if cache is not None:
            cache.drop_known_files()
    result.findings = reported(
        findings,
        settings,
        {unit.path: unit.text for unit in units if unit.text is not None},
        {unit.path: unit.key for unit in units if not unit.error and not unit.ignored},
        Path(cache_dir) if cache_dir is not None else None,
    )
    if cache is not None:
        cache.save(unit.path for unit in units if unit.key is not None)
        result.warnings.extend(cache.warnings)
    return result


def build_project(
    paths: Sequence[str],
    *,
    settings: Settings | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    jobs: int = 1,
    scope: str | None = None,
) -> tuple[Project, LintResult]:
    """The project phase's passes over ``paths``, ready to be asked (what ``--explain``
    and the presets in force read), and the run's problems (in a result without
    findings). Facts come from the cache at ``cache_dir`` when it has them. With
    ``scope``, the project's findings in that scope are worked out here (and kept)."""
    settings = settings or Settings()
    cache = Cache(Path(cache_dir)) if cache_dir is not None else None
    with _gc_paused():
        result, units, rules, hot_settings = _analysed(paths, settings, {}, jobs, cache, None)
        linted = [unit for unit in units if not unit.error and not unit.ignored]
        try:
            project, _, _ = _project(linted, rules, cache, hot_settings)
            if scope is not None:
                project.findings(scope)
        except Exception:  # a syncguard bug: say on which file, ask of the rest
            project = _isolated(linted, rules, hot_settings, scope, result)[0]
    if cache is not None:
        cache.save(unit.path for unit in units if unit.key is not None)
    return project, result


def _analysed(
    paths: Sequence[str],
    settings: Settings,
    sources: Mapping[str, str],
    jobs: int,
    cache: Cache | None,
    progress: Callable[[int, int], None] | None,
    *,
    lazy: bool = False,
) -> tuple[LintResult, list[_Unit], list[Rule], HotSettings]:
    """Discovery and the per-file phase: a result with the problems so far, every
    file's unit, the rules and the hot-path settings. With ``lazy``, the facts of
    files found unchanged are left unread when the per-file phase analyses nothing
    (see :func:`_read_indexed`)."""
    rule_classes = all_rules()
    result = LintResult(rules=rule_classes)
    given = sources  # paths whose text is given need not exist (stdin)
    files, unlintable = discover([p for p in paths if p not in given], settings)
    files = sorted({*files, *(path for path in paths if path in given)})
    for path, located in unlintable:
        result.problems.append(Problem(path, located.line, located.column, located.message))
    result.warnings.extend(settings.notes())
    result.files = len(files)
    rules = [rule_class() for rule_class in rule_classes.values()]
    hot_settings = HotSettings(
        settings.hot_functions,
        settings.cold_functions,
        settings.compiled_functions,
        settings.host_parameters,
        presets=settings.presets,
    )
    units = _per_file_phase(files, sources, rules, jobs, cache, hot_settings, progress, lazy)
    _add_problems(units, rules, cache, result)
    return result, units, rules, hot_settings


def _add_problems(
    units: Iterable[_Unit], rules: Sequence[Rule], cache: Cache | None, result: LintResult
) -> None:
    for unit in units:
        if unit.error:
            error = _outcome(unit, rules, cache, None)
            if isinstance(error, FileError):
                result.problems.append(Problem(unit.path, error.line, error.column, error.message))


def _read_indexed(
    units: Sequence[_Unit], rules: Sequence[Rule], cache: Cache, result: LintResult | None
) -> bool:
    """Read the facts of the units that the per-file phase took from the cache's index
    alone (enough for a run key). A file whose facts the index names but the shards
    lost (a run stopped between writing them) is analysed again, and its problem, if
    any, joins ``result``; True if there was one."""
    again: list[_Unit] = []
    for unit in units:
        if unit.header is None:
            continue
        header, unit.header = unit.header, None
        assert unit.key is not None  # as the index said
        cached = cache.entry(unit.path, unit.key)
        if cached is not None and header_of(cached[2]) == header:
            unit.ignored, unit.error, unit.payload = cached
            continue
        again.append(unit)
        try:
            data = read_bytes(unit.path)
        except Unreadable as unreadable:
            unit.key, unit.outcome, unit.error = None, unreadable.error, True
            continue
        unit.key = content_key(data, unit.module, unit.is_package)
        unit.ignored, unit.outcome = analyse_bytes(data, unit.module, unit.is_package, rules)
        unit.error = isinstance(unit.outcome, FileError)
        unit.payload = encoded(unit.outcome)
        if unit.payload is not None:
            cache.store(unit.path, unit.key, unit.ignored, unit.error, unit.payload, unit.stamp)
    if result is not None:
        _add_problems(again, rules, cache, result)
    return bool(again)


def _project(
    linted: Sequence[_Unit],
    rules: Sequence[Rule],
    cache: Cache | None,
    hot_settings: HotSettings,
    tree: set[str] | None = None,
) -> tuple[Project, Mapping[str, KnownFile], bytes | None]:
    """The project phase over the facts of ``linted`` (decoded here), with what the
    cache knew of where calls resolve and the interface key it knew it under.

    Where the calls of unchanged files resolve, and which of their functions are hot
    roots by their class or the settings, come from the cache while no file's
    interface (see :func:`syncguard.codec.interface_digest`) and no setting changed;
    the other files' are worked out here, and kept for the next run. Calls into
    modules outside ``tree`` (default: those of ``linted``) are dropped."""
    keep_call = TreeCallFilter(tree if tree is not None else {unit.module for unit in linted})
    interface_key = _interface_key(linted, _interface, hot_settings) if cache is not None else None
    known = cache.known_files(interface_key) if cache and interface_key else {}
    roots: dict[tuple[str, int], str] = {}  # (folder, package depth) -> import root
    analysed: list[SourceFile] = []
    for unit in linted:
        if unit.targets is not None and unit.targets_key != interface_key:
            unit.outcome = unit.targets = unit.roots = None  # other interfaces then
        if unit.outcome is None and unit.payload is not None:
            with contextlib.suppress(Exception):  # left to _outcome, which re-analyses
                _decode(unit, keep_call, known, interface_key)
        facts = _outcome(unit, rules, cache, keep_call)
        if isinstance(facts, FileFacts):  # else the file became unreadable meanwhile
            where = (os.path.dirname(unit.path), unit.module.count(".") + unit.is_package)
            root = roots.get(where)
            if root is None:
                root = roots[where] = root_of(unit.path, unit.module, unit.is_package)
            analysed.append(SourceFile(unit.path, root, facts, unit.targets, unit.roots))
    rule_classes = {rule.code: type(rule) for rule in rules}
    project = Project(
        analysed,
        hot_settings,
        {code: rule.message for code, rule in rule_classes.items()},
        frozenset(code for code, rule in rule_classes.items() if rule.graph_break),
        rules,
    )
    return project, known, interface_key


def _isolated(
    linted: Sequence[_Unit],
    rules: Sequence[Rule],
    hot_settings: HotSettings,
    scope: str | None,
    result: LintResult,
) -> tuple[Project, list[Finding]]:
    """After the project phase failed: the project (and its findings in ``scope``, if
    given) of the files it works with. A file on which it fails alone gets a located
    internal error in ``result``; the others are linted together again."""
    tree = {unit.module for unit in linted}

    def phase(units: Sequence[_Unit]) -> tuple[Project, list[Finding]] | Exception:
        for unit in units:  # decoded again: the failed run may have left them half-done
            if unit.payload is not None:
                unit.outcome = unit.targets = unit.roots = unit.positions = None
                unit.pruned = False
        try:
            project, _, _ = _project(units, rules, None, hot_settings, tree)
            return project, project.findings(scope) if scope is not None else []
        except Exception as failure:
            return failure

    failing: dict[str, Exception] = {}
    for unit in linted:
        alone = phase([unit])
        if isinstance(alone, Exception):
            failing[unit.path] = alone
    rest = phase([unit for unit in linted if unit.path not in failing])
    if isinstance(rest, Exception):  # not one file's facts alone: say so, unlocated
        failing["."] = rest
        rest = (_project([], rules, None, hot_settings)[0], [])
    for path, found in failing.items():
        message = f"internal error in the project phase: {type(found).__name__}: {found}"
        result.problems.append(Problem(path, 1, 1, f"{message} (please report this)"))
    return rest


def _interface(unit: _Unit) -> bytes | None:
    return interface_of(unit.payload) if unit.payload is not None else None


def _interface_key(
    units: Iterable[_Unit], interface: Callable[[_Unit], bytes | None], settings: HotSettings
) -> bytes | None:
    """A hash of the hot-path settings and of the linted files' paths and interfaces:
    where calls resolve and which functions are declared hot roots depend on nothing
    else besides a file's own facts; None when an interface is unknown."""
    digest = hashlib.blake2b(repr(settings).encode(), digest_size=16)
    for unit in units:
        found = interface(unit) if unit.key is not None else None
        if found is None:
            return None
        digest.update(f"{unit.path}\0{unit.is_package}\0".encode("utf-8", "surrogateescape"))
        digest.update(found)
    return digest.digest()


def _decode(
    unit: _Unit,
    keep_call: CallFilter,
    known: Mapping[str, KnownFile],
    interface_key: bytes | None,
) -> None:
    """Decode the cached facts of ``unit``: only the calls that resolve, with their
    callees, when ``known`` has them for its content; else the calls ``keep_call``
    keeps, noting where they were in the encoding."""
    assert unit.payload is not None
    entry = known.get(unit.path)
    if entry is not None and entry[0] == unit.key:
        resolved = entry[1]
        only = {qualname: at for qualname, at, _ in resolved}
        unit.outcome = decode_facts(unit.payload, only_calls=only)
        unit.targets = {qualname: targets for qualname, _, targets in resolved}
        unit.roots = entry[2]
        unit.targets_key = interface_key
    else:
        positions: dict[str, list[int]] = {}
        unit.outcome = decode_facts(unit.payload, keep_call, positions=positions)
        unit.positions = positions
    unit.pruned = True


def _keep_known_files(
    cache: Cache,
    interface_key: bytes,
    known: Mapping[str, KnownFile],
    linted: Sequence[_Unit],
    project: Project,
) -> None:
    """Store what the project phase worked out for every linted file (where its calls
    resolve, its declared hot roots) if it had to for any."""
    entries: dict[str, KnownFile] = {}
    for unit in linted:
        if unit.key is None or unit.path not in project.by_path:
            continue
        if unit.targets is not None:
            entries[unit.path] = known[unit.path]
        elif unit.positions is not None:
            positions = unit.positions
            entries[unit.path] = (
                unit.key,
                tuple(
                    (
                        qualname,
                        tuple(positions[qualname][index] for index, _ in found),
                        tuple(target for _, target in found),
                    )
                    for qualname, found in project.resolved_calls(unit.path).items()
                ),
                project.declared_roots(unit.path),
            )
    if entries.keys() != known.keys() or any(
        unit.positions is not None for unit in linted if unit.path in entries
    ):
        cache.store_known_files(interface_key, entries)


# Analysing fewer bytes than this in worker processes costs more than it saves.
POOL_MIN_BYTES = 256_000


@dataclass(slots=True)
class _Unit:
    """One discovered file on its way through the per-file phase."""

    path: str
    module: str
    is_package: bool
    key: bytes | None = None  # content key, when the file was read and may be cached
    stamp: Stamp | None = None  # the file's stamp before it was read, when trustworthy
    data: bytes | None = None  # bytes still to analyse
    text: str | None = None  # text given by the caller instead of the file's content
    ignored: bool = False  # carries ``# syncguard: ignore-file``
    error: bool = False  # could not be read, decoded or parsed
    outcome: FileFacts | FileError | None = None
    payload: Payload | None = None  # the outcome encoded, decoded only when needed
    pruned: bool = False  # ``outcome`` holds only calls that may resolve in the tree
    # Where the calls of ``outcome`` resolve, by function, when it holds only those (read
    # from the cache), and the interface key of the files they were resolved against.
    targets: dict[str, tuple[tuple[FunctionId, ...], ...]] | None = None
    roots: dict[str, str] | None = None  # read with them: the declared hot roots
    targets_key: bytes | None = None
    # Otherwise, once pruned: where each call kept was among the function's calls.
    positions: dict[str, list[int]] | None = None
    previous: Payload | None = None  # the facts cached before it was analysed again
    header: bytes | None = None  # instead of ``payload`` while unread: its digests


def _per_file_phase(
    files: Sequence[str],
    sources: Mapping[str, str],
    rules: Sequence[Rule],
    jobs: int,
    cache: Cache | None,
    hot_settings: HotSettings,
    progress: Callable[[int, int], None] | None,
    lazy: bool = False,
) -> list[_Unit]:
    """Every file with its facts: cached (still encoded), or analysed here or in workers.
    With ``lazy`` and nothing to analyse, the cached facts of files whose stamps say
    they are unchanged are left unread: such a unit has only the ``header`` of its
    facts, from the cache's index."""
    units: list[_Unit] = []
    pending: list[_Unit] = []
    now_ns = time.time_ns()
    for path, (module, is_package) in zip(files, _module_names(files), strict=True):
        unit = _Unit(path, module, is_package)
        units.append(unit)
        if path in sources:
            unit.text = sources[path]
            unit.ignored, unit.outcome = analyse_text(
                unit.text, unit.module, unit.is_package, rules
            )
            unit.error = isinstance(unit.outcome, FileError)
            continue
        if cache is not None:
            unit.stamp = stamp_of(path, module, is_package, now_ns)
            trusted = cache.trusted_key(path, unit.stamp) if unit.stamp is not None else None
            indexed = cache.indexed(path, trusted) if lazy and trusted is not None else None
            if indexed is not None and not indexed[1]:  # errors are read: they are problems
                unit.key = trusted
                unit.ignored, _, unit.header = indexed
                continue
            cached = cache.entry(path, trusted) if trusted is not None else None
            if cached is not None:  # the file is as it was: no need to read it
                unit.key = trusted
                unit.ignored, unit.error, unit.payload = cached
                continue
        try:
            unit.data = read_bytes(path)
        except Unreadable as unreadable:
            unit.outcome = unreadable.error
            unit.error = True
            continue
        if cache is not None:
            unit.key = content_key(unit.data, unit.module, unit.is_package)
            cached = cache.entry(path, unit.key)
            if cached is not None:
                unit.ignored, unit.error, unit.payload = cached
                unit.data = None
                cache.restamp(path, unit.stamp)
                continue
        pending.append(unit)
    if pending and cache is not None:  # facts are decoded while files are analysed
        _read_indexed(units, rules, cache, None)
    done = 0

    def finished(unit: _Unit, ignored: bool, failed: bool) -> None:
        nonlocal done
        unit.data, unit.ignored, unit.error = None, ignored, failed
        if cache is not None and unit.key is not None and unit.payload is not None:
            unit.previous = cache.previous(unit.path)
            cache.store(unit.path, unit.key, ignored, failed, unit.payload, unit.stamp)
        done += 1
        if progress is not None:
            progress(done, len(pending))

    def decode_cached(enough: Callable[[], bool] = lambda: False) -> None:
        """Decode the cached facts while workers analyse the rest (the project phase
        will need them): calls into modules outside every discovered file are dropped.
        Where calls resolve is read from the cache if the files being analysed keep
        the interfaces they had (a guess the project phase checks). Stops early once
        ``enough()``; the project phase decodes the rest if it runs."""
        keep_call = TreeCallFilter({unit.module for unit in units})
        guess = None
        if cache is not None:
            guess = _interface_key(
                [unit for unit in units if not unit.error and not unit.ignored],
                lambda unit: _interface(unit) or cache.interface(unit.path),
                hot_settings,
            )
        known = cache.known_files(guess) if cache is not None and guess else {}
        for unit in units:
            if unit.payload is not None and unit.outcome is None:
                if enough():
                    return
                with contextlib.suppress(Exception):  # left to _outcome, which re-analyses
                    _decode(unit, keep_call, known, guess)

    # Worker processes pay off when they analyse files side by side. One large file is
    # analysed in a forked child instead (a pool costs more than it saves here) while
    # this process decodes the others, until the child's facts turn out unchanged (a
    # comment edited): then the project phase's results are reused and need no facts.
    size = sum(len(unit.data or b"") for unit in pending)
    workers = min(jobs, len(pending)) if jobs > 1 and size >= POOL_MIN_BYTES else 0
    if workers == 1 and cache is not None:
        (unit,) = pending
        aside = analyse_aside(_task(unit), rules, cache.previous(unit.path), decode_cached)
        if aside is not None:
            unit.payload = aside[2]
            finished(unit, aside[0], aside[1])
        workers = 0
    elif workers < 2:
        workers = 0
    if workers:
        from concurrent.futures.process import BrokenProcessPool  # only runs that use a pool

        try:
            for unit, (ignored, failed, payload) in zip(
                pending,
                pool_map(workers, [_task(unit) for unit in pending], decode_cached),
                strict=True,
            ):
                if payload is not None:  # None: facts that only this process can hold
                    unit.payload = payload
                    finished(unit, ignored, failed)
        except (OSError, BrokenProcessPool):
            pass  # no worker processes here (a sandbox, a killed worker): go on in this one
    for unit in pending:
        if unit.data is None:
            continue
        ignored, unit.outcome = analyse_bytes(unit.data, unit.module, unit.is_package, rules)
        if cache is not None:
            unit.payload = encoded(unit.outcome)
        finished(unit, ignored, isinstance(unit.outcome, FileError))
    return units


def _task(unit: _Unit) -> Task:
    assert unit.data is not None  # still to analyse
    return (unit.path, unit.data, unit.module, unit.is_package)


def _module_names(files: Sequence[str]) -> list[tuple[str, bool]]:
    """:func:`module_name` of each file, asking the file system once per folder."""
    packages: dict[str, str] = {}  # folder -> its package name ("" when not a package)
    names: list[tuple[str, bool]] = []
    has_init = functools.cache(has_init_file)
    for path in files:
        folder, filename = os.path.split(path)
        package = packages.get(folder)
        if package is None:
            module, is_package = module_name(path, has_init)
            package = packages[folder] = module if is_package else module.rpartition(".")[0]
        stem = filename.rsplit(".", 1)[0]
        if stem == "__init__":
            names.append((package, True))
        else:
            names.append((f"{package}.{stem}" if package else stem, False))
    return names


def _outcome(
    unit: _Unit, rules: Sequence[Rule], cache: Cache | None, keep_call: CallFilter | None
) -> FileFacts | FileError:
    """The facts of ``unit``, with only the calls ``keep_call`` keeps."""
    if unit.outcome is not None:
        if keep_call is not None and not unit.pruned and isinstance(unit.outcome, FileFacts):
            unit.positions = {}
            prune_calls(unit.outcome, keep_call, unit.positions)
            unit.pruned = True
        return unit.outcome
    assert unit.payload is not None
    try:
        return decode_facts(unit.payload, keep_call)
    except Exception:  # an entry this version cannot read: analyse the file again
        if cache is not None:
            cache.forget(unit.path)
        outcome, _ = analyze_path(unit.path, rules)
        if keep_call is not None and isinstance(outcome, FileFacts):
            prune_calls(outcome, keep_call)
        return outcome


def _run_key(
    linted: Sequence[_Unit],
    hot_settings: HotSettings,
    scope: str,
    facts_digest: Callable[[Payload], bytes],
) -> bytes | None:
    """What decides the project phase's result: every linted file's path, package flag
    and facts (by ``facts_digest``: :func:`digest_of`, or :func:`shape_of` for the key
    of runs whose findings may be carried over moved lines), the hot-path settings and
    the scope; None when some input is not a file on disk or has no encoded facts."""
    digest = hashlib.blake2b(repr((hot_settings, scope)).encode(), digest_size=16)
    for unit in linted:
        head = unit.payload if unit.payload is not None else unit.header
        if unit.key is None or head is None:
            return None
        digest.update(f"{unit.path}\0{unit.is_package}\0".encode("utf-8", "surrogateescape"))
        digest.update(facts_digest(head))
    return digest.digest()


def _digests(linted: Sequence[_Unit]) -> bytes:
    """The facts digests of ``linted`` joined (each has encoded facts: see :func:`_run_key`)."""
    heads = (unit.payload if unit.payload is not None else unit.header for unit in linted)
    return b"".join(digest_of(head) for head in heads if head is not None)


def _moved_findings(
    cache: Cache, shape_key: bytes, linted: Sequence[_Unit]
) -> list[Finding] | None:
    """The findings of an earlier run over files of the shapes of ``linted``, carried
    over to the lines they moved to (see :mod:`syncguard.moves`); None when there are
    none or their lines cannot be mapped."""
    found = cache.moved_findings(shape_key)
    if found is None or len(found[0]) != DIGEST_SIZE * len(linted):
        return None
    digests, findings = found
    moved: dict[str, LineMap] = {}
    for index, unit in enumerate(linted):
        assert unit.payload is not None  # as the shape key says
        before = digests[index * DIGEST_SIZE : (index + 1) * DIGEST_SIZE]
        if digest_of(unit.payload) == before:
            continue
        old = unit.previous
        if old is None or digest_of(old) != before:
            return None  # the facts the findings were of are gone
        try:
            mapping = line_map(lines_in(old), lines_in(unit.payload))
        except Exception:  # an entry this version cannot read
            return None
        if mapping is None:
            return None
        moved[unit.path] = mapping
    return carry(findings, moved)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: facts are big, acyclic and live until the end,
    and collections scanning them again and again cost a third of a cold run."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
