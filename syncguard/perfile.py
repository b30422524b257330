"""The per-file phase for one file: its facts from its text, worked out here, in a
forked child or in worker processes (see :func:`syncguard.engine.lint_files`).

``analyze_source`` is pure: same input, same facts.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import marshal
import os
import select
import threading
from collections.abc import Callable, Iterator, Sequence

from syncguard.cache import Payload, digest_of, encode_facts, shape_of
from syncguard.discovery import module_name
from syncguard.facts import FileError, FileFacts
from syncguard.parsing import parse, with_deep_stack
from syncguard.reading import Unreadable, decode, read_source
from syncguard.rule import Rule
from syncguard.rules import all_rules
from syncguard.suppression import ignores_file

# A file to analyse: its path, content, module name and package flag.
Task = tuple[str, bytes, str, bool]


def analyze_source(
    source: str, module: str, is_package: bool, rules: Sequence[Rule]
) -> FileFacts | FileError:
    """The per-file phase for one source text."""
    from syncguard.analysis import FileAnalyzer  # a run whose facts are all cached needs none

    try:
        tree = parse(source)
    except SyntaxError as error:
        return FileError(error.lineno or 1, error.offset or 1, f"syntax error: {error.msg}")
    except (ValueError, MemoryError, RecursionError) as error:
        return FileError(1, 1, f"cannot parse: {error}")
    assert isinstance(tree, ast.Module)

    def analyse() -> FileFacts:
        return FileAnalyzer(tree, source, module, is_package, rules).analyze()

    try:
        try:
            return analyse()
        except RecursionError:  # an expression nested deeper than the default stack allows
            return with_deep_stack(analyse)
    except RecursionError:
        return FileError(1, 1, "too deeply nested to analyse")
    except Exception as error:  # a syncguard bug: say where, and lint the other files
        name = type(error).__name__
        return FileError(
            1, 1, f"internal error while analysing: {name}: {error} (please report this)"
        )


def analyze_path(path: str, rules: Sequence[Rule]) -> tuple[FileFacts | FileError, str | None]:
    """Facts (or a located error) for the file at ``path``, and its source text."""
    try:
        source = read_source(path)
    except Unreadable as unreadable:
        return unreadable.error, None
    module, is_package = module_name(path)
    return analyze_source(source, module, is_package, rules), source


def analyse_text(
    source: str, module: str, is_package: bool, rules: Sequence[Rule]
) -> tuple[bool, FileFacts | FileError]:
    """(ignore-file flag, facts) of ``source`` as ``module``."""
    outcome = analyze_source(source, module, is_package, rules)
    return not isinstance(outcome, FileError) and ignores_file(source), outcome


def analyse_bytes(
    data: bytes, module: str, is_package: bool, rules: Sequence[Rule]
) -> tuple[bool, FileFacts | FileError]:
    """(ignore-file flag, facts) of the file content ``data`` as ``module``."""
    try:
        source = decode(data)
    except Unreadable as unreadable:
        return False, unreadable.error
    return analyse_text(source, module, is_package, rules)


def encoded(outcome: FileFacts | FileError) -> Payload | None:
    """``outcome`` encoded for the cache or a pipe; None when it cannot be (odd records)."""
    try:
        return encode_facts(outcome)
    except Exception:
        return None


def analyse_aside(
    task: Task,
    rules: Sequence[Rule],
    before: Payload | None,
    meanwhile: Callable[[Callable[[], bool]], None],
) -> tuple[bool, bool, Payload] | None:
    """(ignore-file flag, error flag, encoded facts) of the file of ``task``, analysed in a forked
    child while this process runs ``meanwhile(unchanged)``: ``unchanged()`` is true
    once the child is done and its facts are those cached ``before`` or differ from
    them only in line numbers (see :mod:`syncguard.moves`). None when no child
    could do it (no fork here, another thread running, facts it cannot encode)."""
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return None
    read_end, write_end = os.pipe()
    try:
        child = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if child == 0:  # pragma: no cover (runs in the child, which never returns)
        status = 1
        try:
            os.close(read_end)
            ignored, outcome = analyse_bytes(*task[1:], rules)
            payload = encoded(outcome)
            with os.fdopen(write_end, "wb") as stream:
                stream.write(marshal.dumps((ignored, isinstance(outcome, FileError), payload)))
            status = 0
        finally:
            os._exit(status)  # no clean-up of the parent's state in the child
    os.close(write_end)
    result: list[tuple[bool, bool, Payload] | None] = []

    def collect() -> None:
        chunks = []
        with os.fdopen(read_end, "rb") as stream:
            while chunk := stream.read():
                chunks.append(chunk)
        _, status = os.waitpid(child, 0)
        found = None
        with contextlib.suppress(Exception):
            loaded = marshal.loads(b"".join(chunks))
            if status == 0 and isinstance(loaded, tuple) and isinstance(loaded[2], bytes):
                found = (bool(loaded[0]), bool(loaded[1]), loaded[2])
        result.append(found)

    def unchanged() -> bool:
        if not result:
            if not select.select([read_end], [], [], 0)[0]:
                return False  # the child is still at work
            collect()
        found = result[0]
        return (
            found is not None
            and before is not None
            and (digest_of(found[2]) == digest_of(before) or shape_of(found[2]) == shape_of(before))
        )

    try:
        meanwhile(unchanged)
    finally:
        if not result:
            collect()
    return result[0]


_worker_rules: list[Rule] = []


def _start_worker() -> None:
    global _worker_rules
    gc.disable()  # short-lived and acyclic: reference counting frees everything
    _worker_rules = [rule_class() for rule_class in all_rules().values()]


def _analyse_in_worker(task: Task) -> tuple[bool, bool, Payload | None]:
    ignored, outcome = analyse_bytes(*task[1:], _worker_rules)
    return ignored, isinstance(outcome, FileError), encoded(outcome)


def pool_map(
    workers: int, tasks: Sequence[Task], meanwhile: Callable[[], None]
) -> Iterator[tuple[bool, bool, Payload | None]]:
    """Analyse the files of ``tasks`` in ``workers`` processes, results in order; this
    process runs ``meanwhile()`` while they work."""
    import multiprocessing as mp  # a tenth of a second of start-up: only where used
    from concurrent.futures import ProcessPoolExecutor

    # fork is fast and safe while this process runs no other thread; else the default.
    single_threaded = threading.active_count() == 1
    method = "fork" if single_threaded and "fork" in mp.get_all_start_methods() else None
    chunk = max(1, min(8, len(tasks) // (workers * 16)))
    with ProcessPoolExecutor(
        workers, mp_context=mp.get_context(method), initializer=_start_worker
    ) as pool:
        results = pool.map(_analyse_in_worker, tasks, chunksize=chunk)
        meanwhile()
        yield from results
