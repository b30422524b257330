"""A progress bar on a terminal, for runs long enough to need one: files done, files per
second and the time left, drawn with rich (imported only once the bar appears)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

_DELAY = 1.0  # seconds before the bar appears: quick runs stay silent
_INTERVAL = 0.1  # seconds between redraws


class ProgressBar:
    """Called as ``bar(done, total)`` while files are analysed; ``close()`` erases it.

    Draws nothing during the first second, and at most ten times a second after. It runs
    no thread of its own (the engine forks only while this process has one thread).
    """

    def __init__(self, stream: TextIO, *, color: bool = True, delay: float = _DELAY) -> None:
        self.stream = stream
        self.color = color
        self.started = time.monotonic()
        self.delay = delay
        self.drawn_at = 0.0
        self.bar: tuple[Progress, TaskID] | None = None

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.started < self.delay:
            return
        if self.bar is None:  # drawn as it starts
            self.bar = _start(self.stream, self.color, done, total)
            self.drawn_at = time.monotonic()
            return
        progress, task = self.bar
        progress.update(task, completed=done, total=total)
        if now - self.drawn_at >= _INTERVAL or done >= total:
            self.drawn_at = now
            progress.refresh()

    def close(self) -> None:
        """Erase the bar, so that what follows starts on a clean line."""
        if self.bar is not None:
            self.bar[0].stop()
            self.bar = None


def _start(stream: TextIO, color: bool, done: int, total: int) -> tuple[Progress, TaskID]:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    from syncguard.terminal import console

    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text(f"{speed:,.0f} files/s" if speed else "", style="progress.data.speed")

    progress = Progress(
        TextColumn("syncguard"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        Rate(),
        TimeRemainingColumn(),
        console=console(stream, color),
        auto_refresh=False,  # no refresh thread: redrawn by the calls above
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    )
    task = progress.add_task("lint", total=total, completed=done)
    progress.start()
    return progress, task
