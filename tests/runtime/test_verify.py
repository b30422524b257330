"""verify: runtime syncs against static findings, with a stand-in linter (the classification)
and through the command-line entry points."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from syncguard.cli import verify as verify_command
from syncguard.cli import verify_arguments
from syncguard.runtime import verify as verify_module
from syncguard.runtime.verify import (
    VerifyError,
    run_verify,
    static_finding,
    verify,
)

TARGET = """\
import torch
from verify_helpers import outside_sync


def helper(x):
    return x.sum().item()


def step(x, flag=False):
    total = x.sum().item()
    found = (x > 0).nonzero()
    doubled = x * 2
    via_helper = helper(x)
    outside_sync(x)
    accepted = x.max().item()  # syncguard: ignore[SG101]
    if flag:
        x.tolist()
    return total, found, doubled, via_helper


def make_args():
    return (torch.arange(4.0),)


def make_kwargs():
    return {"x": torch.arange(4.0), "flag": False}


def make_nothing():
    return 42


def broken():
    raise ValueError("no tensors today")


not_callable = 3
"""

HELPERS = """\
def outside_sync(x):
    return x.tolist()
"""

LINES = {
    "item": 10,
    "nonzero": 11,
    "doubled": 12,
    "helper_call": 13,
    "tolist": 17,
    "helper_item": 6,
}


@pytest.fixture
def target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "verify_target.py"
    path.write_text(TARGET)
    (tmp_path / "verify_helpers.py").write_text(HELPERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield path
    for name in ("verify_target", "verify_helpers"):
        sys.modules.pop(name, None)


def stand_in_linter(path: Path, lines: dict[str, int]) -> Any:
    """A lint function reporting a finding at each named line of ``path``."""
    calls: list[tuple[list[str], str]] = []

    def lint(paths: Sequence[str], scope: str) -> list[Any]:
        calls.append((list(paths), scope))
        findings = []
        for code, line in lines.items():
            span = SimpleNamespace(line=line, column=1, end_line=line, end_column=2)
            findings.append(SimpleNamespace(path=str(path), span=span, code=code, message=code))
        return findings

    lint.calls = calls  # type: ignore[attr-defined]
    return lint


def test_classification(target: Path) -> None:
    lint = stand_in_linter(
        target,
        {
            "SG101": LINES["item"],  # fires: confirmed
            "SG300": LINES["helper_call"],  # a caller line: confirms the helper's sync
            "SG900": LINES["doubled"],  # runs, never syncs: never fired
            "SG102": LINES["tolist"],  # never runs
        },
    )
    report = verify("verify_target:step", "verify_target:make_args", simulate=True, lint=lint)
    assert lint.calls == [([str(target.resolve())], "all")]
    confirmed = {(event.line, tuple(f.code for f in found)) for event, found in report.confirmed}
    assert confirmed == {(LINES["item"], ("SG101",)), (LINES["helper_item"], ("SG300",))}
    assert [event.line for event in report.missed] == [LINES["nonzero"]]
    assert [event.function for event in report.outside] == ["outside_sync"]
    assert [finding.code for finding in report.never_fired] == ["SG900"]
    assert report.not_executed == 1
    assert report.suppressed == 1
    assert report.exit_code == 1
    assert "simulation (requested)" in report.detection


def test_all_confirmed_is_exit_code_zero(target: Path) -> None:
    lint = stand_in_linter(
        target, {"SG101": LINES["item"], "SG201": LINES["nonzero"], "SG3": LINES["helper_call"]}
    )
    report = verify("verify_target:step", "verify_target:make_kwargs", simulate=True, lint=lint)
    assert report.missed == [] and report.exit_code == 0


def test_render_and_json(target: Path) -> None:
    lint = stand_in_linter(target, {"SG101": LINES["item"], "SG900": LINES["doubled"]})
    report = verify("verify_target:step", "verify_target:make_args", simulate=True, lint=lint)
    text = report.render()
    assert text.startswith("syncguard verify verify_target:step\n")
    assert "runtime syncs: 4; confirmed 1, missed by the linter 2, outside the linted" in text
    assert "missed by the linter (a runtime sync with no static finding):" in text
    assert f"verify_target.py:{LINES['doubled']}  SG900  SG900" in text
    document = json.loads(report.to_json())
    assert document["exit_code"] == 1
    assert [item["line"] for item in document["missed"]] == [LINES["nonzero"], LINES["helper_item"]]
    assert document["confirmed"][0]["findings"][0]["code"] == "SG101"


def test_findings_with_a_plain_line_attribute_are_accepted(tmp_path: Path) -> None:
    finding = static_finding(SimpleNamespace(path=str(tmp_path), line=7, code="SG1", message="m"))
    assert (finding.line, finding.end_line, finding.code) == (7, 7, "SG1")


def test_a_raising_target_is_reported(target: Path) -> None:
    report = verify("verify_target:broken", simulate=True, lint=stand_in_linter(target, {}))
    assert report.error.startswith("ValueError: no tensors today at ")
    assert report.exit_code == 2


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("verify_target", "expected MODULE:CALLABLE"),
        ("no_such_module_xyz:run", "cannot import 'no_such_module_xyz': ModuleNotFoundError"),
        ("verify_target:missing", "has no attribute 'missing'"),
        ("verify_target:not_callable", "is not callable (got int)"),
    ],
)
def test_bad_targets_are_clear_errors(target: Path, spec: str, message: str) -> None:
    with pytest.raises(VerifyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        verify(spec, lint=stand_in_linter(target, {}))


def test_a_bad_args_factory_is_a_clear_error(target: Path) -> None:
    with pytest.raises(VerifyError, match=r"must return a tuple .* got int"):
        verify("verify_target:step", "verify_target:make_nothing", lint=stand_in_linter(target, {}))
    with pytest.raises(VerifyError, match="the args factory raised ValueError"):
        verify("verify_target:step", "verify_target:broken", lint=stand_in_linter(target, {}))


def parse(argv: list[str]) -> argparse.Namespace:
    return verify_arguments(verify_command.make_context("verify", argv).params)


def test_command_line(
    target: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    lint = stand_in_linter(target, {"SG101": LINES["item"]})
    monkeypatch.setattr(verify_module, "lint_with_engine", lint)
    arguments = parse(
        ["verify_target:step", "--args-factory", "verify_target:make_args", "--simulate", "yes"]
    )
    assert run_verify(arguments) == 1
    assert "missed by the linter" in capsys.readouterr().out
    json_arguments = parse(["verify_target:step", "--args-factory", "verify_target:make_args"])
    json_arguments.format = "json"
    json_arguments.simulate = "yes"
    assert run_verify(json_arguments) == 1
    assert json.loads(capsys.readouterr().out)["target"] == "verify_target:step"


def test_command_line_errors_go_to_stderr(target: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_verify(parse(["verify_target:missing"])) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("syncguard verify: error: target 'verify_target:missing'")


ENGINE_TARGET = """\
import torch


def step(x):
    total = x.sum().item()
    hidden = getattr(x.max(), "item")()
    return total + hidden


def make_args():
    return (torch.arange(4.0),)
"""


def test_with_the_syncguard_linter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "verify_engine_target.py").write_text(ENGINE_TARGET)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        report = verify(
            "verify_engine_target:step", "verify_engine_target:make_args", simulate=True
        )
    finally:
        sys.modules.pop("verify_engine_target", None)
    assert [(event.line, [f.code for f in found]) for event, found in report.confirmed] == [
        (5, ["SG101"])
    ]
    assert [event.line for event in report.missed] == [6]  # the linter cannot see through getattr
