"""Tables of audit events: plain text, or rich tables for a terminal.

rich is imported only when a rich table is asked for (never by ``import syncguard.runtime``);
without rich installed the plain text is used.
"""

from __future__ import annotations

import io
import os
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from syncguard.runtime._events import SyncEvent
from syncguard.runtime._frames import display_path


@dataclass(frozen=True)
class SiteSummary:
    """Events of one call site, kind and op."""

    path: str
    line: int
    kind: str
    op: str
    function: str
    count: int
    note: str = ""

    @property
    def site(self) -> str:
        """``path:line`` as shown to the user."""
        return f"{display_path(self.path)}:{self.line}"


def summarize(events: Iterable[SyncEvent]) -> list[SiteSummary]:
    """Group ``events`` by call site, kind and op; most frequent first, then by site."""
    counts: dict[tuple[str, int, str, str], list[SyncEvent]] = {}
    for event in events:
        counts.setdefault((event.path, event.line, event.kind, event.op), []).append(event)
    rows = [
        SiteSummary(path, line, kind, op, group[0].function, len(group), note=group[0].allowed_by)
        for (path, line, kind, op), group in counts.items()
    ]
    rows.sort(key=lambda row: (-row.count, row.path, row.line, row.op))
    return rows


_HEADER = ["count", "kind", "op", "site", "function"]


def _cells(rows: Sequence[SiteSummary], with_note: bool) -> list[list[str]]:
    return [
        [str(row.count), row.kind, row.op, row.site, row.function]
        + ([row.note] if with_note else [])
        for row in rows
    ]


def table(rows: Sequence[SiteSummary], *, with_note: bool = False) -> list[str]:
    """Aligned text lines: count, kind, op, site, function (and why allowed)."""
    header = _HEADER + (["allowed by"] if with_note else [])
    cells = _cells(rows, with_note)
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    lines = []
    for line in [header, *cells]:
        padded = [line[0].rjust(widths[0])] + [
            cell.ljust(width) for cell, width in zip(line[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(padded).rstrip())
    return lines


def headline(title: str, events: Sequence[SyncEvent], allowed: Sequence[SyncEvent]) -> str:
    """``title: N syncs at M sites, K allowed``."""
    sites = len(summarize(events))
    plural = "" if len(events) == 1 else "s"
    site_plural = "" if sites == 1 else "s"
    return (
        f"{title}: {len(events)} sync{plural} at {sites} site{site_plural}, {len(allowed)} allowed"
    )


def render(
    title: str,
    events: Sequence[SyncEvent],
    allowed: Sequence[SyncEvent],
    detection: str,
    *,
    rich: bool | None = False,
) -> str:
    """The full report: a headline, the table of syncs, then the allowed ones.

    ``rich``: True for rich tables (with colours), False for plain text, None for rich
    tables when standard output is a terminal (and ``NO_COLOR`` is unset).
    """
    lines = [headline(title, events, allowed), f"detection: {detection}"]
    sections = [("", summarize(events), False), ("allowed:", summarize(allowed), True)]
    if use_rich(rich, sys.stdout):
        return "\n".join(lines) + "\n" + rich_tables(sections, terminal_width())
    rows, allowed_rows = sections[0][1], sections[1][1]
    if rows:
        lines.extend(["", *table(rows)])
    if allowed_rows:
        lines.extend(["", "allowed:", *table(allowed_rows, with_note=True)])
    return "\n".join(lines)


def use_rich(requested: bool | None, stream: Any) -> bool:
    """Whether to draw rich tables: as requested, or (None) on a colour terminal."""
    if requested is None:
        isatty = getattr(stream, "isatty", None)
        requested = bool(isatty and isatty()) and not os.environ.get("NO_COLOR")
    if not requested:
        return False
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


def terminal_width() -> int:
    return shutil.get_terminal_size((100, 24)).columns


def rich_tables(sections: Sequence[tuple[str, Sequence[SiteSummary], bool]], width: int) -> str:
    """Each non-empty section as a rich table, rendered with ANSI styles into a string."""
    from rich.console import Console
    from rich.table import Table

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=width, highlight=False)
    for title, rows, with_note in sections:
        if not rows:
            continue
        grid = Table(title=title or None, title_justify="left", header_style="bold")
        for name in _HEADER + (["allowed by"] if with_note else []):
            grid.add_column(name, justify="right" if name == "count" else "left")
        for cells in _cells(rows, with_note):
            grid.add_row(*cells)
        console.print(grid)
    return out.getvalue().rstrip("\n")
