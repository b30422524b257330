"""The progress bar: only for people on a terminal, silent for a second, then files,
files/s and time left; no thread of its own; erased when done."""

from __future__ import annotations

import io
import re
import sys
import threading
import time

import pytest

from syncguard.cli import progress_bar
from syncguard.progress import ProgressBar


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True

    def text(self) -> str:
        """What was drawn, less the terminal's control and colour codes."""
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", self.getvalue())


def test_progress_bar_only_for_people_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TERM", raising=False)
    monkeypatch.setattr(sys, "stderr", FakeTerminal())
    for output_format in (None, "full", "concise"):
        assert isinstance(progress_bar(output_format), ProgressBar)
    for output_format in ("json", "sarif", "github"):
        assert progress_bar(output_format) is None
    monkeypatch.setenv("TERM", "dumb")
    assert progress_bar(None) is None
    monkeypatch.delenv("TERM")
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    monkeypatch.setenv("FORCE_COLOR", "1")  # colours in a log, but no bar redrawn there
    assert progress_bar(None) is None and progress_bar("concise") is None


def test_progress_bar_waits_a_second_then_draws_and_erases_itself() -> None:
    stream = FakeTerminal()
    quick = ProgressBar(stream)
    quick(1, 10)
    quick(10, 10)
    quick.close()
    assert stream.getvalue() == ""  # a run shorter than a second shows nothing

    threads = threading.active_count()
    bar = ProgressBar(stream, delay=0)
    bar(3, 10)
    bar(4, 10)  # within a tenth of a second of the last draw: skipped
    time.sleep(0.15)
    bar(6, 10)
    bar(10, 10)  # the last one is always drawn
    assert threading.active_count() == threads  # no refresh thread: the engine may fork
    drawn = stream.text()
    assert "syncguard" in drawn and " 3/10 files" in drawn and "10/10 files" in drawn
    assert "4/10" not in drawn
    assert "files/s" in drawn  # the rate, once there are two samples
    bar.close()
    assert stream.getvalue().endswith("\x1b[2K")  # the line is erased


def test_progress_bar_without_colour_has_no_colour_codes() -> None:
    stream = FakeTerminal()
    bar = ProgressBar(stream, color=False, delay=0)
    bar(5, 10)
    bar.close()
    assert " 5/10 files" in stream.text()
    assert not re.search(r"\x1b\[[0-9;]*m", stream.getvalue().replace("\x1b[0m", ""))
