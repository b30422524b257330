"""What a person reads on a terminal, drawn with rich: coloured code frames with
highlighted source, the ``--statistics`` table and ``syncguard rule`` as Markdown.

Imported only when the output is a terminal (or ``FORCE_COLOR`` asks for colour):
:mod:`syncguard.reporting` writes the same content as plain text everywhere else, without
rich, and decides which of the two a stream gets (:func:`~syncguard.reporting.display`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TextIO

from rich import box
from rich.console import Console
from rich.markdown import Markdown
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from syncguard.project import Finding
from syncguard.reading import lines_or_empty
from syncguard.reporting import frames, hot_note, statistics
from syncguard.rule import Rule

_GUTTER = "blue"
_LEVEL = {"error": "bold red", "warning": "bold yellow"}


def console(stream: TextIO, color: bool) -> Console:
    """A console drawing on ``stream`` (known to be a terminal, or forced to be one)."""
    dumb = os.environ.get("TERM") == "dumb"  # forced colours on a dumb terminal: 8 of them
    return Console(
        file=stream,
        force_terminal=True,
        no_color=not color,
        color_system=("standard" if dumb else "auto") if color else None,
        highlight=False,
        markup=False,
        emoji=False,
        soft_wrap=True,
    )


class _Highlighter:
    """Source lines of each file, highlighted once per file (so multi-line strings are
    coloured as strings), numbered as :class:`~syncguard.facts.Span` numbers them."""

    def __init__(self) -> None:
        self.files: dict[str, list[Text]] = {}

    def line(self, path: str, number: int, plain: str) -> Text:
        if path not in self.files:
            code = "\n".join(lines_or_empty(path))
            syntax = Syntax(code, "python", theme="ansi_dark", background_color="default")
            self.files[path] = list(syntax.highlight(code).split("\n", allow_blank=True))
        lines = self.files[path]
        if not 0 < number <= len(lines) or lines[number - 1].plain.rstrip() != plain:
            return Text(plain)  # the file changed since it was linted: show what was read
        text = lines[number - 1].copy()
        text.rstrip()
        return text


def write_full(findings: Sequence[Finding], rules: Mapping[str, type[Rule]], out: Console) -> None:
    """The full format (see :func:`syncguard.reporting.write_full`), in colour."""
    highlighter = _Highlighter()
    for shown in frames(findings):
        finding, gutter = shown.finding, " " * shown.width
        bar = Text.assemble(gutter, " ", ("|", _GUTTER))
        level = _LEVEL.get(finding.severity, "bold")
        out.print(
            Text.assemble(
                (shown.location, "bold"),
                ": ",
                (finding.code, "bold red"),
                " [",
                (finding.severity, level),
                "] ",
                finding.message,
            )
        )
        out.print(bar)
        for number, plain in shown.rows:
            code = highlighter.line(finding.path, number, plain)
            out.print(
                Text.assemble(
                    (str(number).rjust(shown.width), _GUTTER), " ", ("|", _GUTTER), " ", code
                )
            )
        if shown.caret is not None:
            prefix, count = shown.caret
            out.print(
                Text.assemble(bar, " ", prefix, ("^" * count, level), " ", (finding.code, level))
            )
        out.print(bar)
        note = Text.assemble(gutter, " ", ("=", _GUTTER), " ")
        if finding.hot:
            out.print(Text.assemble(note, ("hot", "bold"), ": ", finding.hot))
        if len(finding.chain) > 1:
            out.print(Text.assemble(note, ("chain", "bold"), ":"))
            for step in finding.chain:
                out.print(
                    Text.assemble(
                        gutter,
                        "     ",
                        (f"{step.path}:{step.line}", "dim"),
                        " ",
                        (step.function, "cyan"),
                    )
                )
        out.print(Text.assemble(note, ("help", "bold cyan"), ": ", finding.suggestion))
        if shown.fix is not None:
            out.print(Text.assemble(note, (shown.fix[0], "bold green"), ": ", shown.fix[1]))
        out.print()


def write_concise(
    findings: Sequence[Finding], rules: Mapping[str, type[Rule]], out: Console
) -> None:
    """The concise format, in colour."""
    for finding in findings:
        location = f"{finding.path}:{finding.span.line}:{finding.span.column}"
        out.print(
            Text.assemble(
                (location, "bold"),
                ": ",
                (finding.code, "bold red"),
                " ",
                finding.message,
                (hot_note(finding), "dim"),
            )
        )


def write_statistics(
    findings: Sequence[Finding], rules: Mapping[str, type[Rule]], out: Console
) -> None:
    """``--statistics`` as a table: findings per rule, most first."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    table.add_column("Findings", justify="right", style="bold")
    table.add_column("Code", style="red")
    table.add_column("Fix", justify="center", style="green")
    table.add_column("Rule")
    for row in statistics(findings, rules):
        table.add_row(str(row["count"]), row["code"], "*" if row["fixable"] else "", row["name"])
    out.print(table)


def write_markdown(text: str, out: Console) -> None:
    """``text`` (Markdown) rendered for the terminal: headings, emphasis, code blocks."""
    out.print(Markdown(text, code_theme="ansi_dark"), soft_wrap=False)
