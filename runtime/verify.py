"""Static-runtime cross-check: does the linter see the syncs a callable really performs?

``verify(target)`` runs the callable under ``sync_audit(mode="record")`` while recording
which lines of its module execute, lints that module, and classifies:

* **confirmed**: a runtime sync with a static finding at that line (or at a caller's line
  in the linted files, for findings reported at a call site);
* **missed by the linter**: a runtime sync in the linted files with no finding there, which
  is a linter bug (or a sync the rules do not know);
* **never fired**: a static finding on a line that executed without syncing (data-dependent,
  or a false positive);
* syncs outside the linted files are listed apart.

``run_verify`` implements ``syncguard verify MODULE:CALLABLE`` (its options: syncguard.cli):
exit code 0 when every runtime sync in the linted files is confirmed, 1 when the linter
missed one, 2 when the target cannot be loaded or raises.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

from syncguard.runtime._events import SyncEvent
from syncguard.runtime._frames import display_path
from syncguard.runtime._report import summarize, table
from syncguard.runtime.audit import SyncAudit


class VerifyError(Exception):
    """A target or args factory that cannot be loaded, called or linted."""


@dataclass(frozen=True)
class StaticFinding:
    """A linter finding, reduced to what the cross-check needs."""

    path: str
    line: int
    end_line: int
    code: str
    message: str

    @property
    def site(self) -> str:
        return f"{display_path(self.path)}:{self.line}"


Lint = Callable[[Sequence[str], str], Iterable[Any]]


def lint_with_engine(paths: Sequence[str], scope: str) -> list[Any]:
    """The linter's findings for ``paths`` (``syncguard.engine.lint_files``)."""
    from syncguard.engine import lint_files

    return list(lint_files(list(paths), scope=scope).findings)


def static_finding(finding: Any) -> StaticFinding:
    """Normalize a linter finding (``.line`` or ``.span.line``, ``.code``, ``.message``)."""
    span = getattr(finding, "span", finding)
    line = int(getattr(finding, "line", None) or span.line)
    end_line = int(getattr(span, "end_line", None) or line)
    path = os.path.realpath(str(finding.path))
    return StaticFinding(path, line, max(end_line, line), str(finding.code), str(finding.message))


@dataclass
class VerifyReport:
    """The classification of one verify run."""

    target: str
    linted: list[str]
    detection: str
    confirmed: list[tuple[SyncEvent, list[StaticFinding]]] = field(default_factory=list)
    missed: list[SyncEvent] = field(default_factory=list)
    never_fired: list[StaticFinding] = field(default_factory=list)
    outside: list[SyncEvent] = field(default_factory=list)
    not_executed: int = 0
    suppressed: int = 0
    error: str = ""

    @property
    def exit_code(self) -> int:
        """0: all confirmed, 1: the linter missed a sync, 2: the target raised."""
        if self.error:
            return 2
        return 1 if self.missed else 0

    def render(self) -> str:
        """The report as plain text tables."""
        runtime = len(self.confirmed) + len(self.missed) + len(self.outside)
        lines = [
            f"syncguard verify {self.target}",
            f"detection: {self.detection}",
            f"linted: {', '.join(display_path(path) for path in self.linted)}",
            f"runtime syncs: {runtime}; confirmed {len(self.confirmed)}, missed by the linter"
            f" {len(self.missed)}, outside the linted files {len(self.outside)}; static"
            f" findings that never fired on executed lines {len(self.never_fired)}"
            f" (not executed: {self.not_executed}); syncs on suppressed lines {self.suppressed}",
        ]
        if self.error:
            lines += ["", f"the target raised: {self.error}"]
        sections: list[tuple[str, list[SyncEvent]]] = [
            ("confirmed (a static finding at the sync's line or a caller's line):", []),
            ("missed by the linter (a runtime sync with no static finding):", self.missed),
            ("outside the linted files:", self.outside),
        ]
        sections[0][1].extend(event for event, _ in self.confirmed)
        for title, events in sections:
            if events:
                lines += ["", title, *table(summarize(events))]
        if self.never_fired:
            lines += ["", "static findings on executed lines that never synced:"]
            lines += [f"  {f.site}  {f.code}  {f.message}" for f in self.never_fired]
        return "\n".join(lines)

    def to_json(self) -> str:
        """The report as a JSON document."""
        document = {
            "target": self.target,
            "linted": self.linted,
            "detection": self.detection,
            "exit_code": self.exit_code,
            "error": self.error,
            "confirmed": [
                {"event": event.to_dict(), "findings": [vars_of(f) for f in found]}
                for event, found in self.confirmed
            ],
            "missed": [event.to_dict() for event in self.missed],
            "outside": [event.to_dict() for event in self.outside],
            "never_fired": [vars_of(finding) for finding in self.never_fired],
            "not_executed": self.not_executed,
            "suppressed": self.suppressed,
        }
        return json.dumps(document, indent=2)


def vars_of(finding: StaticFinding) -> dict[str, Any]:
    """A JSON-ready dictionary of a finding."""
    return {
        "path": finding.path,
        "line": finding.line,
        "end_line": finding.end_line,
        "code": finding.code,
        "message": finding.message,
    }


def resolve(spec: str, what: str = "target") -> Callable[..., Any]:
    """The callable named ``MODULE:ATTRIBUTE[.ATTRIBUTE...]``; VerifyError if impossible."""
    module_name, colon, attributes = spec.partition(":")
    if not colon or not module_name or not attributes:
        raise VerifyError(f"{what} {spec!r}: expected MODULE:CALLABLE (e.g. engine.step:run)")
    try:
        value: Any = importlib.import_module(module_name)
    except Exception as error:  # any import-time failure is the user's, reported plainly
        raise VerifyError(
            f"{what} {spec!r}: cannot import {module_name!r}: {type(error).__name__}: {error}"
        ) from None
    for attribute in attributes.split("."):
        if not hasattr(value, attribute):
            raise VerifyError(f"{what} {spec!r}: {value!r} has no attribute {attribute!r}")
        value = getattr(value, attribute)
    if not callable(value):
        raise VerifyError(f"{what} {spec!r} is not callable (got {type(value).__name__})")
    return value  # type: ignore[no-any-return]


def _arguments(args_factory: Callable[[], Any] | None) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if args_factory is None:
        return (), {}
    try:
        produced = args_factory()
    except Exception as error:
        raise VerifyError(f"the args factory raised {type(error).__name__}: {error}") from None
    if produced is None:
        return (), {}
    if isinstance(produced, dict):
        return (), produced
    if isinstance(produced, (tuple, list)):
        return tuple(produced), {}
    raise VerifyError(
        "the args factory must return a tuple (positional arguments), a dict (keyword"
        f" arguments) or None, got {type(produced).__name__}"
    )


def _source_file(func: Callable[..., Any]) -> str:
    unwrapped = inspect.unwrap(func)
    try:
        path = inspect.getsourcefile(unwrapped)
    except TypeError:
        path = None
    if path is None:
        raise VerifyError(f"{func!r} has no Python source file to lint")
    return os.path.realpath(path)


class _LineRecorder:
    """Records which lines of ``files`` execute (first execution of each is enough)."""

    def __init__(self, files: Iterable[str]) -> None:
        self.files = {os.path.realpath(path) for path in files}
        self.lines: set[tuple[str, int]] = set()
        self._known: dict[str, str | None] = {}
        self._tool: int | None = None
        self._previous: Any = None

    def _path(self, filename: str) -> str | None:
        if filename not in self._known:
            real = os.path.realpath(filename) if not filename.startswith("<") else filename
            self._known[filename] = real if real in self.files else None
        return self._known[filename]

    def __enter__(self) -> _LineRecorder:
        monitoring: Any = getattr(sys, "monitoring", None)
        if monitoring is not None:
            for tool in (2, 5, 3):
                if monitoring.get_tool(tool) is None:
                    monitoring.restart_events()  # lines disabled by an earlier run fire again
                    self._tool = tool
                    monitoring.use_tool_id(tool, "syncguard verify")
                    monitoring.register_callback(tool, monitoring.events.LINE, self._on_line)
                    monitoring.set_events(tool, monitoring.events.LINE)
                    return self
        self._previous = sys.gettrace()
        sys.settrace(self._on_call)
        threading.settrace(self._on_call)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._tool is not None:
            monitoring: Any = getattr(sys, "monitoring", None)
            monitoring.set_events(self._tool, 0)
            monitoring.register_callback(self._tool, monitoring.events.LINE, None)
            monitoring.free_tool_id(self._tool)
            return
        sys.settrace(self._previous)
        threading.settrace(self._previous)  # type: ignore[arg-type]

    def _on_line(self, code: CodeType, line: int) -> Any:
        path = self._path(code.co_filename)
        if path is not None:
            self.lines.add((path, line))
        return getattr(sys, "monitoring").DISABLE  # noqa: B009 - absent before Python 3.12

    def _on_call(self, frame: FrameType, event: str, arg: object) -> Any:
        return self._on_frame_line if self._path(frame.f_code.co_filename) else None

    def _on_frame_line(self, frame: FrameType, event: str, arg: object) -> Any:
        if event == "line":
            path = self._path(frame.f_code.co_filename)
            if path is not None:
                self.lines.add((path, frame.f_lineno))
        return self._on_frame_line


def _stack_sites(event: SyncEvent) -> list[tuple[str, int]]:
    """(real path, line) of the event's site and each caller in its stack."""
    sites = [(os.path.realpath(event.path), event.line)]
    for entry in event.stack:
        location = entry.rsplit(" in ", 1)[0]
        path, _, line = location.rpartition(":")
        if line.isdigit():
            sites.append((os.path.realpath(path), int(line)))
    return sites


def classify(
    events: Sequence[SyncEvent],
    findings: Sequence[StaticFinding],
    executed: set[tuple[str, int]],
    linted: Sequence[str],
) -> tuple[
    list[tuple[SyncEvent, list[StaticFinding]]],
    list[SyncEvent],
    list[SyncEvent],
    list[StaticFinding],
    int,
]:
    """(confirmed, missed, outside, never fired, findings on lines that never executed)."""
    linted_files = {os.path.realpath(path) for path in linted}
    confirmed: list[tuple[SyncEvent, list[StaticFinding]]] = []
    missed: list[SyncEvent] = []
    outside: list[SyncEvent] = []
    fired: set[StaticFinding] = set()
    for event in events:
        sites = _stack_sites(event)
        matched: list[StaticFinding] = []
        for path, line in sites:  # the sync's own line first, then its callers
            if path in linted_files:
                matched = [f for f in findings if f.path == path and f.line <= line <= f.end_line]
                if matched:
                    break
        if matched:
            confirmed.append((event, matched))
            fired.update(matched)
        elif sites[0][0] in linted_files:
            missed.append(event)
        else:
            outside.append(event)  # synced in code the linter did not look at
    never_fired, not_executed = [], 0
    for finding in findings:
        if finding in fired:
            continue
        ran = any((finding.path, n) in executed for n in range(finding.line, finding.end_line + 1))
        if ran:
            never_fired.append(finding)
        else:
            not_executed += 1
    return confirmed, missed, outside, never_fired, not_executed


def verify(
    target: str | Callable[..., Any],
    args_factory: str | Callable[[], Any] | None = None,
    *,
    paths: Sequence[str] = (),
    scope: str = "all",
    simulate: bool | None = None,
    lint: Lint | None = None,
) -> VerifyReport:
    """Run ``target`` under the audit, lint its module (and ``paths``), classify the syncs.

    ``lint(paths, scope)`` returns findings (default: the syncguard linter); ``simulate`` is
    passed to the audit. A sync on a line with a linter suppression comment is accepted
    (counted apart): the linter drops its finding there too.
    """
    func = resolve(target) if isinstance(target, str) else target
    factory = (
        resolve(args_factory, "args factory") if isinstance(args_factory, str) else args_factory
    )
    name = target if isinstance(target, str) else getattr(func, "__qualname__", repr(func))
    linted = [_source_file(func), *(os.path.realpath(path) for path in paths)]
    args, kwargs = _arguments(factory)
    audit = SyncAudit("record", simulate=simulate)
    error = ""
    with _LineRecorder(linted) as recorder:
        try:
            with audit:
                func(*args, **kwargs)
        except Exception as raised:
            frames = traceback.extract_tb(raised.__traceback__)[-1:]
            where = f" at {display_path(frames[0].filename)}:{frames[0].lineno}" if frames else ""
            error = f"{type(raised).__name__}: {raised}{where}"
    try:
        found = (lint or lint_with_engine)(linted, scope)
        findings = [static_finding(finding) for finding in found]
    except Exception as failure:
        raise VerifyError(f"linting {', '.join(linted)} failed: {failure}") from None
    report = VerifyReport(
        str(name), linted, audit.detection, suppressed=len(audit.allowed), error=error
    )
    (
        report.confirmed,
        report.missed,
        report.outside,
        report.never_fired,
        report.not_executed,
    ) = classify(audit.events, findings, recorder.lines, linted)
    return report


def run_verify(args: argparse.Namespace) -> int:
    """Run ``syncguard verify`` from parsed arguments; returns the exit code."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # MODULE resolves as with ``python -m``
    simulate = {"auto": None, "yes": True, "no": False}[args.simulate]
    try:
        report = verify(
            args.target,
            args.args_factory,
            paths=args.paths,
            scope=args.scope,
            simulate=simulate,
        )
    except VerifyError as error:
        print(f"syncguard verify: error: {error}", file=sys.stderr)
        return 2
    print(report.to_json() if args.format == "json" else report.render())
    return report.exit_code
