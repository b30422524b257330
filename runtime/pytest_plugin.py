"""pytest plugin ``syncguard`` (an entry point, loaded by every pytest run).

* ``@pytest.mark.no_sync`` (options as ``sync_audit``: ``allow``, ``first_only``,
  ``simulate``, ...) fails the test when its body syncs, with the event table;
* the ``sync_audit`` fixture: an audit in record mode for the test to inspect;
* ``--syncguard-audit`` audits every test and prints a table at the end of the session
  (rich tables on a colour terminal). Each test's events travel on its call-phase report,
  so under pytest-xdist the workers' events reach the controller's table.

Import-cheap and torch-free: the audit (and torch) load only when one of them is used.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import ExitStack
from typing import Any

import pytest

_SESSION_AUDIT = pytest.StashKey[Any]()  # the test's --syncguard-audit SyncAudit
_REPORT_ATTRIBUTE = "syncguard_audit"  # on call-phase reports: {"detection", "events"}
_MARKER_OPTIONS = (
    "allow",
    "first_only",
    "simulate",
    "include_torch_frames",
    "respect_suppressions",
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("syncguard", "syncguard runtime audit")
    group.addoption(
        "--syncguard-audit",
        action="store_true",
        default=False,
        help="audit every test for host-device syncs (record only) and print a summary table",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "no_sync(allow=(), first_only=False, simulate=None): fail the test when its body"
        " performs a host-device sync (syncguard runtime audit)",
    )
    if config.getoption("syncguard_audit", False):
        config.pluginmanager.register(_SessionTable(), "syncguard-session-table")


def _marker_audit(marker: pytest.Mark) -> Any:
    from syncguard.runtime.audit import SyncAudit

    unknown = sorted(set(marker.kwargs) - set(_MARKER_OPTIONS))
    if marker.args or unknown:
        given = ", ".join([repr(arg) for arg in marker.args] + unknown)
        pytest.fail(
            f"@pytest.mark.no_sync takes keyword options {', '.join(_MARKER_OPTIONS)}; got {given}",
            pytrace=False,
        )
    try:
        return SyncAudit("record", **marker.kwargs)
    except (TypeError, ValueError) as error:
        pytest.fail(f"@pytest.mark.no_sync: {error}", pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    marker = item.get_closest_marker("no_sync")
    audit_all = bool(item.config.getoption("syncguard_audit"))
    if marker is None and not audit_all:
        return (yield)
    from syncguard.runtime.audit import SyncAudit

    session_audit = SyncAudit("record") if audit_all else None
    marker_audit = _marker_audit(marker) if marker is not None else None
    try:
        with ExitStack() as stack:
            for audit in (session_audit, marker_audit):
                if audit is not None:
                    stack.enter_context(audit)
            result = yield
    finally:
        if session_audit is not None:
            item.stash[_SESSION_AUDIT] = session_audit
    if marker_audit is not None and marker_audit.events:
        pytest.fail(f"no_sync test synced:\n{marker_audit.report(rich=False)}", pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    audit = item.stash.get(_SESSION_AUDIT, None)
    if audit is not None and call.when == "call":
        del item.stash[_SESSION_AUDIT]
        setattr(
            report,
            _REPORT_ATTRIBUTE,
            {"detection": audit.detection, "events": [e.to_dict() for e in audit.events]},
        )
    return report


@pytest.fixture(name="sync_audit")
def sync_audit_fixture() -> Generator[Any, None, None]:
    """An active ``sync_audit("record")`` for the test's duration, to inspect."""
    from syncguard.runtime.audit import SyncAudit

    with SyncAudit("record") as audit:
        yield audit


class _SessionTable:
    """``--syncguard-audit``: collects the events of every test's report, prints the table.

    Reports come from this process or, under pytest-xdist, from the workers.
    """

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.detection = ""

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        recorded = getattr(report, _REPORT_ATTRIBUTE, None)
        if not isinstance(recorded, dict):
            return
        from syncguard.runtime._events import SyncEvent

        self.detection = str(recorded.get("detection", "")) or self.detection
        for fields in recorded.get("events", ()):
            event = SyncEvent(**{**fields, "stack": tuple(fields.get("stack", ()))})
            self.events.append((report.nodeid, event))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from syncguard.runtime._report import rich_tables, summarize, table

        tests = {nodeid for nodeid, _ in self.events}
        terminalreporter.section("syncguard audit")
        terminalreporter.write_line(
            f"{len(self.events)} host-device sync(s) in {len(tests)} test(s) (record only)"
        )
        if self.detection:
            terminalreporter.write_line(f"detection: {self.detection}")
        rows = summarize(event for _, event in self.events)
        if not rows:
            return
        if getattr(terminalreporter, "hasmarkup", False) and _rich_available():
            width = int(getattr(terminalreporter._tw, "fullwidth", 100))
            terminalreporter.write_line(rich_tables([("", rows, False)], width))
            return
        for line in table(rows):
            terminalreporter.write_line(line)


def _rich_available() -> bool:
    from syncguard.runtime._report import use_rich

    return use_rich(True, None)
