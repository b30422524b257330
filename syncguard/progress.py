"""A one-line progress bar on a terminal, for runs long enough to need one."""

from __future__ import annotations

import os
import time
from typing import TextIO

_DELAY = 1.0  # seconds before the bar appears: quick runs stay silent
_INTERVAL = 0.1  # seconds between redraws


class ProgressBar:
    """Called as ``bar(done, total)`` while files are analysed; ``close()`` erases it.

    Draws nothing during the first second, and at most ten times a second after.
    """

    def __init__(self, stream: TextIO, *, delay: float = _DELAY) -> None:
        self.stream = stream
        self.started = time.monotonic()
        self.delay = delay
        self.drawn_at = 0.0
        self.width = 0  # characters of the line on screen, 0 when nothing is drawn

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.started < self.delay or (now - self.drawn_at < _INTERVAL and done < total):
            return
        self.drawn_at = now
        self._draw(render(done, total, self._columns()))

    def close(self) -> None:
        """Erase the bar, so that what follows starts on a clean line."""
        if self.width:
            self._draw("")

    def _draw(self, line: str) -> None:
        self.stream.write("\r" + line.ljust(self.width) + ("\r" if not line else ""))
        self.stream.flush()
        self.width = len(line)

    def _columns(self) -> int:
        try:
            return os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            return 80


def render(done: int, total: int, columns: int) -> str:
    """``syncguard [#####-----] 1234/3231 files`` fitted into ``columns`` characters."""
    counter = f" {done}/{total} files"
    room = max(columns - len("syncguard [] ") - len(counter), 10)
    filled = room * done // total if total else room
    return f"syncguard [{'#' * filled}{'-' * (room - filled)}]{counter}"
