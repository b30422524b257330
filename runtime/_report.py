"""Plain-text tables and JSON for audit events."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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


def table(rows: Sequence[SiteSummary], *, with_note: bool = False) -> list[str]:
    """Aligned text lines: count, kind, op, site, function (and why allowed)."""
    header = ["count", "kind", "op", "site", "function"] + (["allowed by"] if with_note else [])
    cells = [
        [str(row.count), row.kind, row.op, row.site, row.function]
        + ([row.note] if with_note else [])
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [header, *cells]) for i in range(len(header))]
    lines = []
    for line in [header, *cells]:
        padded = [line[0].rjust(widths[0])] + [
            cell.ljust(width) for cell, width in zip(line[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(padded).rstrip())
    return lines


def render(
    title: str, events: Sequence[SyncEvent], allowed: Sequence[SyncEvent], detection: str
) -> str:
    """The full report: a headline, the table of syncs, then the allowed ones."""
    rows = summarize(events)
    plural = "" if len(events) == 1 else "s"
    site_plural = "" if len(rows) == 1 else "s"
    lines = [
        f"{title}: {len(events)} sync{plural} at {len(rows)} site{site_plural}"
        f", {len(allowed)} allowed",
        f"detection: {detection}",
    ]
    if rows:
        lines.extend(["", *table(rows)])
    if allowed:
        lines.extend(["", "allowed:", *table(summarize(allowed), with_note=True)])
    return "\n".join(lines)
