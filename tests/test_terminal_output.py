"""What people and tools read: formats for tools byte-identical to before rich, and rich
(colours, tables, Markdown) only for people on a terminal, as NO_COLOR, FORCE_COLOR and
TERM=dumb ask."""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from syncguard.cli import main
from syncguard.facts import Span
from syncguard.project import Finding, Step
from syncguard.reporting import WRITERS, display, write_statistics
from syncguard.rule import Rule

# Written by the writers of main at bd1a4ba (before rich), on the findings below.
GOLDEN = json.loads((Path(__file__).parent / "data" / "writers_golden.json").read_text())
SOURCE = (
    "class Model:\n    def forward(self, x):\n        return helper(x)\n\n"
    "def helper(x):\n    return x.item()\n"
)
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class ItemSync(Rule):
    """Flags ``.item()``.

    Why it syncs: it copies.

    How to fix: keep it on the device."""

    code = "SG101"
    name = "item-sync"
    message = "`.item()` copies a device value to the host"


def findings(path: str) -> list[Finding]:
    chain = (Step(path, 3, "pkg.model.Model.forward"), Step(path, 6, "pkg.model.helper"))
    return [
        Finding("SG101", "`helper()` syncs: `.item()` copies (called here)", path,
                Span(3, 16, 3, 25), "error", "forward", chain, "pass host data", None),
        Finding("SG101", "`.item()` copies a device value to the host", path,
                Span(6, 12, 6, 20), "warning", None, chain[1:], "keep it; 100% sure", None),
    ]  # fmt: skip


# SARIF has its own golden test (test_golden.py): it gained fields since.
@pytest.mark.parametrize("name", ["full", "concise", "json", "github", "statistics"])
def test_plain_outputs_are_byte_identical_to_before(tmp_path, monkeypatch, name: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("model.py").write_text(SOURCE)
    out = io.StringIO()
    if name == "statistics":
        write_statistics(findings("model.py"), {"SG101": ItemSync}, out)
    else:
        WRITERS[name](findings("model.py"), {"SG101": ItemSync}, out)
    assert out.getvalue() == GOLDEN[name]


TREE = ("check", "fixtures/chunked/before", "--no-cache")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch):
    """``run(terminal, *args, **env)``: stdout of ``syncguard ARGS`` in this process, written
    to a terminal or not, with ``env`` set (and no NO_COLOR / FORCE_COLOR otherwise)."""

    def run(terminal: bool, *args: str, **env: str) -> str:
        with monkeypatch.context() as patch:
            patch.chdir(REPO)
            for name in ("NO_COLOR", "FORCE_COLOR"):
                patch.delenv(name, raising=False)
            for name, value in {"TERM": "xterm-256color", "COLUMNS": "120", **env}.items():
                patch.setenv(name, value)
            out = Terminal() if terminal else io.StringIO()
            patch.setattr(sys, "stdout", out)
            main(list(args))
        return out.getvalue()

    return run


def in_a_terminal(*args: str) -> str:
    """stdout of ``python -m syncguard ARGS`` run in a real pseudo-terminal."""
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    environment.update(TERM="xterm-256color", COLUMNS="120")
    leader, follower = pty.openpty()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "syncguard", *args],
            cwd=REPO, env=environment, stdout=follower, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the run is over
                break
            if not chunk:
                break
            chunks.append(chunk)
        process.wait(timeout=120)
    finally:
        os.close(leader)
    return b"".join(chunks).decode().replace("\r\n", "\n")


def test_a_terminal_gets_colour_and_the_same_text(run) -> None:
    coloured = in_a_terminal(*TREE)  # full, by default, on a terminal
    plain = run(False, *TREE, "--output-format", "full")
    assert "\x1b[" in coloured and "\x1b[" not in plain
    assert ANSI.sub("", coloured) == plain


@pytest.mark.parametrize(
    ("terminal", "env"),
    [(True, {"NO_COLOR": "1"}), (True, {"TERM": "dumb"}), (False, {}), (True, {"X": "1"})],
    ids=["NO_COLOR", "TERM=dumb", "pipe", "--no-color"],
)
def test_no_colour_where_it_is_not_wanted(run, terminal: bool, env: dict[str, str]) -> None:
    flag = ("--no-color",) if "X" in env else ()
    for output_format in ("full", "concise"):
        out = run(terminal, *TREE, "--output-format", output_format, *flag, **env)
        assert "\x1b[" not in out and ": SG101 " in out


def test_force_color_colours_a_pipe_but_never_the_formats_tools_read(run) -> None:
    assert "\x1b[" in run(False, *TREE, "--output-format", "concise", FORCE_COLOR="1")
    for output_format in ("json", "sarif", "github"):
        forced = run(True, *TREE, "--output-format", output_format, FORCE_COLOR="1")
        assert forced == run(False, *TREE, "--output-format", output_format)


def test_statistics_are_a_table_on_a_terminal(run) -> None:
    table = ANSI.sub("", run(True, *TREE, "--output-format", "concise", "--statistics"))
    header = next(line for line in table.splitlines() if "Findings" in line)
    assert header.split() == ["Findings", "Code", "Fix", "Rule"]
    assert re.search(r"^\s*1\s+SG301\s+\*\s+host-data-to-device", table, re.M)
    plain = run(False, *TREE, "--output-format", "concise", "--statistics")
    assert "1  SG301  [*] host-data-to-device" in plain and "Findings" not in plain


def test_rule_is_rendered_markdown_on_a_terminal(run) -> None:
    shown = ANSI.sub("", run(True, "rule", "SG304"))
    assert "SG304 scalar-index-assign" in shown and "What it flags." in shown
    assert "**" not in shown and "```" not in shown  # rendered, not shown as markup
    assert "self.buf[0:1] = 0" in shown
    listing = ANSI.sub("", run(True, "rule", "--all"))
    assert re.search(r"SG304\s.*scalar-index-assign\s.*host-to-device copy\s.*yes", listing)
    assert run(False, "rule", "SG304").startswith("SG304 scalar-index-assign: ")


def test_display_decision(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    assert display(Terminal()) == display(Terminal(), False)
    assert (display(Terminal()).rich, display(Terminal()).color) == (True, True)
    assert (display(io.StringIO()).rich, display(io.StringIO()).color) == (False, False)
    assert display(Terminal(), no_color=True).color is False
    monkeypatch.setenv("NO_COLOR", "")  # empty: not set (no-color.org)
    assert display(Terminal()).color is True
    monkeypatch.setenv("NO_COLOR", "1")
    assert (display(Terminal()).rich, display(Terminal()).color) == (True, False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert (display(io.StringIO()).rich, display(io.StringIO()).color) == (True, False)
    monkeypatch.delenv("NO_COLOR")
    assert display(io.StringIO()).color is True
    monkeypatch.setenv("FORCE_COLOR", "0")
    monkeypatch.setenv("TERM", "dumb")
    assert display(Terminal()).rich is False


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_code_frames_decode_the_file_as_python_does(run, tmp_path: Path, terminal: bool) -> None:
    source = (
        "# -*- coding: latin-1 -*-\nimport torch\n\n\n@torch.compile\ndef step(x):\n"
        "    return x.sum().item()  # r\xe9sum\xe9\n"
    )
    path = tmp_path / "latin1_step.py"
    path.write_bytes(source.encode("latin-1"))
    shown = ANSI.sub("", run(terminal, "check", str(path), "--output-format", "full", "--no-cache"))
    assert "SG101" in shown
    assert "return x.sum().item()  # r\xe9sum\xe9" in shown
