"""``syncguard server``: findings in the editor, over the Language Server Protocol (stdio).

On open and on save a document is linted with its project (the workspace folder holding
it, with the cache ``syncguard check`` keeps), so a sync in a helper of another module is
reported at the call site in the document, with the chain as related locations. Code
actions apply a finding's fix (a LibCST codemod, as ``--fix``) or suppress it on its line
with a reason; hovering a finding shows why it is hot and its rule's documentation,
measured cost included. Needs pygls (``pip install 'syncguard[server]'``); editors'
settings are in docs/editors.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from syncguard._version import __version__
from syncguard.facts import Fix, Span, source_lines
from syncguard.project import Finding

_REASON = "why this sync is acceptable"


class SyncguardServer(LanguageServer):
    """The server, with the findings of each document's last lint."""

    def __init__(self) -> None:
        super().__init__(
            "syncguard", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full
        )
        self.findings: dict[str, list[Finding]] = {}  # document uri -> findings in it


def path_of(uri: str) -> str | None:
    """The file a ``file:`` URI names (normalised as discovery names files), else None."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return os.path.normpath(unquote(parsed.path))


def uri_of(path: str) -> str:
    return Path(os.path.abspath(path)).as_uri()


def project_root(server: LanguageServer, path: str) -> str:
    """The workspace folder holding ``path`` (the deepest one), else the file's folder."""
    folders = [path_of(folder.uri) for folder in server.workspace.folders.values()]
    if server.workspace.root_path:
        folders.append(os.path.normpath(server.workspace.root_path))
    holding = [f for f in folders if f and (path + os.sep).startswith(f.rstrip(os.sep) + os.sep)]
    return max(holding, key=len) if holding else os.path.dirname(path)


def lint_document(root: str, path: str, text: str) -> list[Finding]:
    """The findings in the document at ``path`` (holding ``text``), linted with the
    project at ``root`` and its cache."""
    from syncguard.cache import CACHE_FOLDER
    from syncguard.engine import lint_files
    from syncguard.hierarchy import ConfigTree, Overrides
    from syncguard.rules import all_rules

    paths = [root] if (path + os.sep).startswith(root + os.sep) else [root, path]
    settings = ConfigTree(Overrides(), list(all_rules()), None).settings_for_paths(paths)
    base = settings.source.parent if settings.source is not None else Path(root)
    result = lint_files(
        paths, settings=settings, sources={path: text}, cache_dir=base / CACHE_FOLDER
    )
    return [finding for finding in result.findings if os.path.normpath(finding.path) == path]


# ------------------------------------------------------------------ positions


def _character(line: str, column: int) -> int:
    """The UTF-16 offset LSP counts for the 1-based character ``column`` of ``line``."""
    return len(line[: column - 1].encode("utf-16-le")) // 2


def lsp_range(lines: Sequence[str], span: Span) -> types.Range:
    def position(line: int, column: int) -> types.Position:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return types.Position(line=line - 1, character=_character(text, column))

    return types.Range(
        start=position(span.line, span.column), end=position(span.end_line, span.end_column)
    )


def _contains(span: Span, line: int, character: int, lines: Sequence[str]) -> bool:
    found = lsp_range(lines, span)
    start, end = (found.start.line, found.start.character), (found.end.line, found.end.character)
    return start <= (line, character) <= end


# ------------------------------------------------------------------ what the editor shows


def diagnostic(finding: Finding, lines: Sequence[str]) -> types.Diagnostic:
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(
                uri=uri_of(step.path),
                range=types.Range(
                    start=types.Position(line=step.line - 1, character=0),
                    end=types.Position(line=step.line, character=0),
                ),
            ),
            message=f"chain {index}: {step.function}",
        )
        for index, step in enumerate(finding.chain, 1)
    ]
    hot = f" (hot: {finding.hot})" if finding.hot else ""
    return types.Diagnostic(
        range=lsp_range(lines, finding.span),
        message=f"{finding.message}{hot}",
        severity=(
            types.DiagnosticSeverity.Error
            if finding.severity == "error"
            else types.DiagnosticSeverity.Warning
        ),
        code=finding.code,
        source="syncguard",
        related_information=related if len(finding.chain) > 1 else None,
    )


def code_actions(uri: str, text: str, findings: Sequence[Finding]) -> list[types.CodeAction]:
    """For each finding: its fix, when it has one, and a suppression comment (what
    ``--add-noqa`` writes, with a reason to edit)."""
    from syncguard.fixes import fix_edits
    from syncguard.noqa import noqa_fixes

    lines = source_lines(text)

    def action(title: str, fix: Fix, preferred: bool = False) -> types.CodeAction | None:
        edits = [
            types.TextEdit(range=lsp_range(lines, edit.span), new_text=edit.text)
            for edit in fix_edits(text, fix)
        ]
        if not edits:
            return None
        return types.CodeAction(
            title=title,
            kind=types.CodeActionKind.QuickFix,
            is_preferred=preferred,
            edit=types.WorkspaceEdit(changes={uri: edits}),
        )

    actions = []
    for finding in findings:
        if finding.fix is not None:
            unsafe = finding.fix.applicability != "safe"
            title = f"Fix {finding.code}: {finding.fix.description}"
            actions.append(action(title + (" (unsafe)" if unsafe else ""), finding.fix, not unsafe))
        for fixes in noqa_fixes([finding], _REASON).values():
            title = f"Suppress {finding.code} on this line (with a reason)"
            actions.extend(action(title, fix) for fix in fixes)
    return [found for found in actions if found is not None]


def hover_text(finding: Finding) -> str:
    """Markdown: the finding, why it is hot, its chain, then its rule's documentation."""
    from syncguard.ruledoc import rule_markdown
    from syncguard.rules import all_rules

    parts = [f"**{finding.code}** {finding.message}"]
    if finding.hot:
        parts.append(f"Hot: {finding.hot}")
    if len(finding.chain) > 1:
        parts.append("Chain:\n\n" + "\n".join(f"1. `{step}`" for step in finding.chain))
    rule = all_rules().get(finding.code)
    if rule is not None:
        parts.append(rule_markdown(rule))
    return "\n\n".join(parts)


# ------------------------------------------------------------------ the server


def make_server() -> SyncguardServer:
    server = SyncguardServer()

    def publish(uri: str, text: str) -> None:
        path = path_of(uri)
        if path is None or not path.endswith((".py", ".pyi")):
            return
        try:
            found = lint_document(project_root(server, path), path, text)
        except Exception as error:  # never take the editor's server down
            server.window_log_message(
                types.LogMessageParams(type=types.MessageType.Error, message=f"syncguard: {error}")
            )
            return
        server.findings[uri] = found
        lines = source_lines(text)
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=uri, diagnostics=[diagnostic(f, lines) for f in found]
            )
        )

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        publish(params.text_document.uri, params.text_document.text)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        publish(uri, server.workspace.get_text_document(uri).source)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        server.findings.pop(uri, None)
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
    )
    def code_action(params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        text = server.workspace.get_text_document(uri).source
        lines = source_lines(text)
        first, last = params.range.start.line + 1, params.range.end.line + 1
        wanted = {
            (d.code, d.range.start.line, d.range.start.character)
            for d in params.context.diagnostics
        }
        chosen = []
        for finding in server.findings.get(uri, []):
            start = lsp_range(lines, finding.span).start
            if (finding.code, start.line, start.character) in wanted or (
                first <= finding.span.line <= last and not wanted
            ):
                chosen.append(finding)
        return code_actions(uri, text, chosen)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        lines = source_lines(server.workspace.get_text_document(uri).source)
        at = params.position
        for finding in server.findings.get(uri, []):
            if _contains(finding.span, at.line, at.character, lines):
                return types.Hover(
                    contents=types.MarkupContent(
                        kind=types.MarkupKind.Markdown, value=hover_text(finding)
                    ),
                    range=lsp_range(lines, finding.span),
                )
        return None

    return server


def serve() -> int:
    """Run the server on stdin and stdout until the editor says ``exit``."""
    make_server().start_io()
    return 0
