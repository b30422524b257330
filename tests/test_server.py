"""`syncguard server`, driven over stdio as an editor drives it: diagnostics with the
project's context on open and save, code actions (a fix, a suppression), hover docs."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

MODEL = """\
import torch
from torch import nn

from pkg.helpers import lengths


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = torch.zeros(4, device="cuda")

    def forward(self, x):
        n = x.sum().item()
        self.buf[0] = 0
        return lengths(x), n
"""
HELPERS = "def lengths(x):\n    return x.tolist()\n"


class Client:
    """A minimal LSP client over the server's stdin and stdout."""

    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "syncguard", "server"],
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.messages: queue.Queue[dict[str, Any]] = queue.Queue()
        self.ids = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        while True:
            length = None
            while True:
                header = stdout.readline()
                if not header:
                    return
                if header in (b"\r\n", b"\n"):
                    break
                name, _, value = header.decode().partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            assert length is not None
            self.messages.put(json.loads(stdout.read(length)))

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        stdin.flush()

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict[str, Any]) -> Any:
        self.ids += 1
        self.send({"id": self.ids, "method": method, "params": params})
        message = self.next(lambda m: m.get("id") == self.ids and "method" not in m)
        assert "error" not in message, message
        return message["result"]

    def next(self, wanted: Any) -> dict[str, Any]:
        while True:
            message = self.messages.get(timeout=120)
            if wanted(message):
                return message
            if "id" in message and "method" in message:  # a request from the server
                self.send({"id": message["id"], "result": None})

    def diagnostics(self, uri: str) -> list[dict[str, Any]]:
        message = self.next(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
            )
        )
        return message["params"]["diagnostics"]


def apply(text: str, edit: dict[str, Any]) -> str:
    lines = text.split("\n")
    start, end = edit["range"]["start"], edit["range"]["end"]
    before = "\n".join([*lines[: start["line"]], lines[start["line"]][: start["character"]]])
    after = lines[end["line"]][end["character"] :]
    rest = "\n".join([after, *lines[end["line"] + 1 :]])
    return before + edit["newText"] + rest


def test_server_reports_fixes_suppresses_and_explains(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "helpers.py").write_text(HELPERS)
    model = tmp_path / "pkg" / "model.py"
    model.write_text(MODEL)
    uri = model.as_uri()
    client = Client(tmp_path)
    try:
        result = client.request(
            "initialize",
            {"processId": os.getpid(), "rootUri": tmp_path.as_uri(), "capabilities": {}},
        )
        assert result["serverInfo"]["name"] == "syncguard"
        client.notify("initialized", {})
        client.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": MODEL}},
        )
        found = {(d["code"], d["range"]["start"]["line"]): d for d in client.diagnostics(uri)}
        assert set(found) == {("SG101", 12), ("SG304", 13), ("SG102", 14)}
        item = found[("SG101", 12)]
        assert item["severity"] == 1 and item["source"] == "syncguard"
        assert item["range"] == {
            "start": {"line": 12, "character": 12},
            "end": {"line": 12, "character": 26},
        }
        # The helper's sync is reported at the call site being edited, with its chain.
        via = found[("SG102", 14)]
        assert (tmp_path / "pkg" / "helpers.py").as_uri() in {
            info["location"]["uri"] for info in via["relatedInformation"]
        }

        scalar = found[("SG304", 13)]
        actions = client.request(
            "textDocument/codeAction",
            {
                "textDocument": {"uri": uri},
                "range": scalar["range"],
                "context": {"diagnostics": [scalar]},
            },
        )
        titles = [action["title"] for action in actions]
        assert titles == [
            "Fix SG304: write through a one-element slice",
            "Suppress SG304 on this line (with a reason)",
        ]
        fixed = apply(MODEL, actions[0]["edit"]["changes"][uri][0])
        assert fixed == MODEL.replace("self.buf[0] = 0", "self.buf[0:1] = 0")
        suppressed = apply(MODEL, actions[1]["edit"]["changes"][uri][0])
        assert "self.buf[0] = 0  # noqa: SG304 -- why this sync is acceptable\n" in suppressed

        hover = client.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 12, "character": 16}},
        )
        text = hover["contents"]["value"]
        assert text.startswith("**SG101**") and "Hot: forward" in text
        assert "## SG101 item-sync" in text and "**Measured cost.**" in text

        # Saved with the fix and the suppression: those findings are gone.
        saved = fixed.replace(
            "        n = x.sum().item()\n", "        n = x.sum().item()  # noqa: SG101\n"
        )
        model.write_text(saved)
        client.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": saved}]},
        )
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        assert [d["code"] for d in client.diagnostics(uri)] == ["SG102"]

        client.request("shutdown", {})
        client.notify("exit", {})
        assert client.process.wait(timeout=60) == 0
    finally:
        if client.process.poll() is None:
            client.process.kill()
            client.process.wait()


def test_server_without_pygls_says_how_to_install_it() -> None:
    probe = (
        "import sys; sys.modules['pygls'] = None\n"
        "from syncguard.cli import main\n"
        "sys.exit(main(['server']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr == (
        "syncguard: error: `syncguard server` needs pygls: pip install 'syncguard[server]'\n"
    )
