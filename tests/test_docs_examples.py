"""The console examples of docs/analysis.md are what syncguard prints today."""

from __future__ import annotations

import re
import shlex

import pytest

from conftest import REPO, run_cli

DOC = REPO / "docs" / "analysis.md"
_BLOCK = re.compile(r"```console\n\$ (?P<command>[^\n]+)\n(?P<output>.*?)```", re.DOTALL)


def console_examples() -> list[tuple[str, str]]:
    """(command line, printed text) of each console block of the page."""
    return [(m["command"], m["output"]) for m in _BLOCK.finditer(DOC.read_text())]


def test_the_page_has_its_worked_examples() -> None:
    commands = [command for command, _ in console_examples()]
    assert any("--explain" in command for command in commands)
    assert len(commands) >= 2


@pytest.mark.parametrize(("command", "output"), console_examples())
def test_a_console_example_prints_what_the_page_shows(command: str, output: str) -> None:
    program, *args = shlex.split(command)
    assert program == "syncguard"
    result = run_cli(*args, "--no-cache", "--output-format", "full")
    assert result.stdout == output
