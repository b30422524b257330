"""pytest plugin ``syncguard`` (an entry point, loaded by every pytest run).

* ``@pytest.mark.no_sync`` (options as ``sync_audit``: ``allow``, ``first_only``,
  ``simulate``, ...) fails the test when its body syncs, with the event table;
* the ``sync_audit`` fixture: an audit in record mode for the test to inspect;
* ``--syncguard-audit`` audits every test and prints a table at the end of the session.

Import-cheap and torch-free: the audit (and torch) load only when one of them is used.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import ExitStack
from typing import Any

import pytest

_SESSION_EVENTS = pytest.StashKey[list[tuple[str, Any]]]()
_SESSION_DETECTION = pytest.StashKey[str]()
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
    config.stash[_SESSION_EVENTS] = []
    config.stash[_SESSION_DETECTION] = ""


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
            item.config.stash[_SESSION_DETECTION] = session_audit.detection
            item.config.stash[_SESSION_EVENTS].extend(
                (item.nodeid, event) for event in session_audit.events
            )
    if marker_audit is not None and marker_audit.events:
        pytest.fail(f"no_sync test synced:\n{marker_audit.report()}", pytrace=False)
    return result


@pytest.fixture(name="sync_audit")
def sync_audit_fixture() -> Generator[Any, None, None]:
    """An active ``sync_audit("record")`` for the test's duration, to inspect."""
    from syncguard.runtime.audit import SyncAudit

    with SyncAudit("record") as audit:
        yield audit


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if not config.getoption("syncguard_audit"):
        return
    from syncguard.runtime._report import summarize, table

    recorded = config.stash[_SESSION_EVENTS]
    tests = {nodeid for nodeid, _ in recorded}
    terminalreporter.section("syncguard audit")
    terminalreporter.write_line(
        f"{len(recorded)} host-device sync(s) in {len(tests)} test(s) (record only)"
    )
    if config.stash[_SESSION_DETECTION]:
        terminalreporter.write_line(f"detection: {config.stash[_SESSION_DETECTION]}")
    for line in table(summarize(event for _, event in recorded)) if recorded else []:
        terminalreporter.write_line(line)
