"""sync_audit as context manager and decorator: modes, nesting, threads, restore, allow-lists,
suppressions, the environment switch, reports. Tensors live on the GPU where there is one
(CUDA detection) and on the CPU elsewhere (simulation): the expectations are the same."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import threading
from typing import Any

import pytest
import torch

from syncguard.runtime import ENV_VAR, SyncError, SyncWarning, sync_audit

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def here() -> int:
    """Line number of the caller's next line."""
    return sys._getframe(1).f_lineno + 1


def scalar() -> torch.Tensor:
    return torch.ones(4, device=DEVICE).sum()


def sync_once() -> float:
    return scalar().item()


def test_raise_mode_stops_at_the_first_sync_with_op_and_line() -> None:
    t = scalar()
    with pytest.raises(SyncError) as raised, sync_audit():
        line = here()
        t.item()
    message = str(raised.value)
    assert ".item()" in message
    assert f"test_audit_api.py:{line}" in message
    assert raised.value.event.line == line


def test_warn_mode_warns_at_the_user_line_and_goes_on() -> None:
    t = scalar()
    with pytest.warns(SyncWarning) as caught, sync_audit("warn") as audit:
        line = here()
        value = t.item()
    assert value == 4.0
    assert audit.count == 1
    (warning,) = [w for w in caught if issubclass(w.category, SyncWarning)]
    assert warning.filename == __file__ and warning.lineno == line


def test_record_mode_only_records() -> None:
    t = scalar()
    with sync_audit("record") as audit:
        first = here()
        t.item()
        t.item()
    assert [event.line for event in audit.events] == [first, first + 1]
    assert audit.count == 2


def test_no_sync_no_event() -> None:
    x = torch.ones(8, device=DEVICE)
    with sync_audit() as audit:
        (x * 2 + 1).sum()
    assert audit.events == []


def test_bare_decorator_raises() -> None:
    @sync_audit
    def step() -> float:
        return sync_once()

    with pytest.raises(SyncError):
        step()
    assert step.audit.count == 1  # type: ignore[attr-defined]


def test_decorator_with_options_accumulates_over_calls() -> None:
    @sync_audit("record")
    def step() -> float:
        return sync_once()

    assert step() == 4.0
    step()
    assert step.__name__ == "step"
    assert step.audit.count == 2  # type: ignore[attr-defined]
    assert {event.function for event in step.audit.events} == {"sync_once"}  # type: ignore[attr-defined]


def test_recursive_decorated_calls_count_each_sync_once() -> None:
    @sync_audit("record")
    def countdown(n: int) -> None:
        sync_once()
        if n:
            countdown(n - 1)

    countdown(2)
    assert countdown.audit.count == 3  # type: ignore[attr-defined]


def test_async_decorator_audits_the_coroutine_body() -> None:
    @sync_audit("record")
    async def step() -> float:
        await asyncio.sleep(0)
        return sync_once()

    assert asyncio.run(step()) == 4.0
    assert step.audit.count == 1  # type: ignore[attr-defined]


def test_nested_audits_compose() -> None:
    with sync_audit("record") as outer:
        sync_once()
        with pytest.raises(SyncError), sync_audit("raise"):
            sync_once()
        with sync_audit("record") as inner:
            sync_once()
    assert outer.count == 3
    assert inner.count == 1


def test_other_threads_are_not_audited() -> None:
    seen: list[int] = []

    def worker() -> None:
        sync_once()
        with sync_audit("record") as own:
            sync_once()
        seen.append(own.count)

    with sync_audit("record") as audit:
        thread = threading.Thread(target=worker)
        thread.start()
        thread.join()
    assert audit.count == 0
    assert seen == [1]


def test_allow_path_line_entries() -> None:
    t = scalar()
    line = here() + 2
    audit = sync_audit(allow=[f"runtime/test_audit_api.py:{line}"])
    with audit:
        t.item()
    assert audit.count == 0
    assert audit.allowed[0].allowed_by == f"allow runtime/test_audit_api.py:{line}"


def test_allow_globs_and_function_names() -> None:
    t = scalar()
    with sync_audit(allow=["*/test_audit_*.py:*"]) as by_glob:
        t.item()
    with sync_audit(allow=[f"{__name__}.sync_o*"]) as by_name:
        sync_once()
    with sync_audit(allow=["test_audit_api.py"]) as by_file:
        t.item()
    assert [a.count for a in (by_glob, by_name, by_file)] == [0, 0, 0]
    assert [len(a.allowed) for a in (by_glob, by_name, by_file)] == [1, 1, 1]


def test_allow_matches_callers_too() -> None:
    with sync_audit(allow=[f"{__name__}.test_allow_matches_callers_too"]) as audit:
        sync_once()
    assert audit.count == 0


def test_allow_does_not_cover_other_lines() -> None:
    t = scalar()
    with pytest.raises(SyncError), sync_audit(allow=["test_audit_api.py:1"]):
        t.item()


@pytest.mark.parametrize("entry", ["", "file.py:abc", "  "])
def test_bad_allow_entries_are_clear_errors(entry: str) -> None:
    with pytest.raises(ValueError, match=r"sync_audit\(allow=\.\.\.\)"):
        sync_audit(allow=[entry])


def test_first_only_allows_each_site_once() -> None:
    audit = sync_audit("record", first_only=True)

    @audit
    def step() -> float:
        return sync_once()

    step()  # warm-up: allowed
    step()
    step()
    assert audit.count == 2
    assert [event.allowed_by for event in audit.allowed] == ["first_only"]


SUPPRESSED = """
def run(t):
    t.item()  # noqa: SG101
    t.item()  # syncguard: ignore[SG101] -- warm-up only
    t.item()  # noqa
    return t.item()  # NOQA: SG1


def foreign(t):
    return t.item()  # noqa: E501
"""


@pytest.fixture
def suppressed(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A module whose lines carry linter suppression comments (written at test time)."""
    (tmp_path / "suppressed_module.py").write_text(SUPPRESSED)
    monkeypatch.syspath_prepend(str(tmp_path))
    import suppressed_module

    yield suppressed_module
    del sys.modules["suppressed_module"]


def test_suppression_comments_allow_the_line(suppressed: Any) -> None:
    with sync_audit() as audit:
        suppressed.run(scalar())
    assert audit.count == 0
    reasons = [event.allowed_by for event in audit.allowed]
    assert reasons == [
        "# noqa: SG101",
        "# syncguard: ignore[SG101] -- warm-up only",
        "# noqa",
        "# NOQA: SG1",
    ]


def test_foreign_suppressions_do_not_allow(suppressed: Any) -> None:
    with pytest.raises(SyncError), sync_audit():
        suppressed.foreign(scalar())


def test_suppressions_can_be_ignored(suppressed: Any) -> None:
    with sync_audit("record", respect_suppressions=False) as audit:
        suppressed.run(scalar())
    assert audit.count == 4


def test_env_off_turns_decorated_audits_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "off")

    @sync_audit
    def step() -> float:
        return sync_once()

    assert step() == 4.0
    assert step.audit.count == 0  # type: ignore[attr-defined]


def test_env_mode_overrides_decorated_audits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "Record")

    @sync_audit("raise")
    def step() -> float:
        return sync_once()

    step()
    assert step.audit.count == 1  # type: ignore[attr-defined]
    monkeypatch.setenv(ENV_VAR, "warn")
    with pytest.warns(SyncWarning):
        step()


def test_env_does_not_touch_context_managers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "off")
    with pytest.raises(SyncError), sync_audit():
        sync_once()


def test_bad_env_value_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "loud")

    @sync_audit
    def step() -> None:
        pass

    with pytest.raises(ValueError, match=f"environment variable {ENV_VAR}='loud'"):
        step()


def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="mode must be 'raise', 'warn' or 'record'"):
        sync_audit("loud")
    with pytest.raises(ValueError, match="simulate must be None, True or False"):
        sync_audit(simulate="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="can only decorate a callable"):
        sync_audit("record")(42)  # type: ignore[arg-type]


def test_report_groups_by_site_with_counts(suppressed: Any) -> None:
    with sync_audit("record", allow=["*.never"]) as audit:
        for _ in range(3):
            sync_once()
        suppressed.run(scalar())
    report = audit.report(rich=False)
    lines = report.splitlines()
    assert lines[0] == "syncguard sync audit (record): 3 syncs at 1 site, 4 allowed"
    assert lines[1].startswith("detection: ")
    assert lines[3].split() == ["count", "kind", "op", "site", "function"]
    assert lines[4].split()[:3] == ["3", "scalar-conversion", ".item()"]
    assert "test_audit_api.py:" in lines[4] and lines[4].endswith("sync_once")
    assert lines[6] == "allowed:"
    assert lines[7].split()[-1] == "by"
    assert lines[8].split()[0] == "1" and lines[8].endswith("# noqa: SG101")


def test_to_json_shape() -> None:
    with sync_audit("record") as audit:
        sync_once()
        sync_once()
    document = json.loads(audit.to_json())
    assert set(document) == {"mode", "detection", "count", "sites", "events", "allowed"}
    assert document["count"] == 2 and document["mode"] == "record"
    (site,) = document["sites"]
    assert site["count"] == 2 and site["kind"] == "scalar-conversion"
    event = document["events"][0]
    assert set(event) >= {"kind", "op", "path", "line", "function", "stack", "detail"}
    assert isinstance(event["stack"], list) and event["stack"]


def test_include_torch_frames_attributes_inside_torch() -> None:
    probs = torch.ones(4, device=DEVICE) / 4
    with sync_audit("record") as user_side:
        torch.distributions.Categorical(probs=probs, validate_args=True)
    with sync_audit("record", include_torch_frames=True) as torch_side:
        torch.distributions.Categorical(probs=probs, validate_args=True)
    assert user_side.events[0].path == __file__
    assert "torch" in torch_side.events[0].path.replace("\\", "/").split("/")
    assert torch_side.count == 1


def test_clear_forgets_events() -> None:
    with sync_audit("record", first_only=True) as audit:
        sync_once()
        sync_once()
    audit.clear()
    assert audit.events == [] and audit.allowed == []


def test_only_the_audit_modules_are_skipped_in_attribution() -> None:
    from syncguard.runtime import _frames, reference

    runtime_dir = os.path.dirname(_frames.__file__)
    assert _frames.owner(os.path.join(runtime_dir, "audit.py")) == "syncguard"
    assert _frames.owner(os.path.join(runtime_dir, "_hooks.py")) == "syncguard"
    assert _frames.owner(reference.__file__) == "user"  # its syncs are its own
    assert _frames.owner(torch.__file__) == "foreign"
    assert _frames.owner(__file__) == "user"


def test_report_is_plain_text_off_a_terminal_and_rich_tables_on_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with sync_audit("record") as audit:
        sync_once()
        sync_once()
    plain = audit.report()  # standard output is captured here: not a terminal
    assert plain == audit.report(rich=False)
    assert "│" not in plain and "\x1b[" not in plain
    drawn = audit.report(rich=True)
    assert drawn.splitlines()[:2] == plain.splitlines()[:2]  # headline, detection
    row = next(line for line in drawn.splitlines() if ".item()" in line)
    cells = [cell.strip() for cell in re.sub(r"\x1b\[[0-9;]*m", "", row).split("│")]
    assert cells[1:4] == ["2", "scalar-conversion", ".item()"]
    assert "\x1b[" in drawn  # styled for the terminal


def test_report_without_rich_installed_is_plain(monkeypatch: pytest.MonkeyPatch) -> None:
    with sync_audit("record") as audit:
        sync_once()
    monkeypatch.setitem(sys.modules, "rich", None)  # import rich now raises ImportError
    assert audit.report(rich=True) == audit.report(rich=False)
