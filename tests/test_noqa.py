"""--add-noqa: suppressions for current findings, formatting kept, a second run a no-op."""

from __future__ import annotations

from pathlib import Path

from syncguard.cli import main

SOURCE = (
    "import torch\n"
    "\n"
    "\n"
    "@torch.compile\n"
    "def step(x, buf, n):\n"
    "    a = x.item()  # the count\n"
    "    b = x.tolist()  # noqa: E501\n"
    "    c = max(\n"
    "        x.item(),  # inside the call\n"
    "        n,\n"
    "    )\n"
    "    d = x.item() + \\\n"
    "        x.item()\n"
    "    e = x.tolist() + x.item()  # syncguard: ignore[SG101]\n"
    "    return a, b, c, d, e, x.item(), x.tolist()\n"
)
EXPECTED = (
    "import torch\n"
    "\n"
    "\n"
    "@torch.compile\n"
    "def step(x, buf, n):\n"
    "    a = x.item()  # the count  # noqa: SG101 -- legacy, see #12\n"
    "    b = x.tolist()  # noqa: E501, SG102\n"
    "    c = max(\n"
    "        x.item(),  # inside the call  # noqa: SG101 -- legacy, see #12\n"
    "        n,\n"
    "    )\n"
    "    d = x.item() + \\\n"
    "        x.item()  # noqa: SG101 -- legacy, see #12\n"
    "    e = x.tolist() + x.item()  # syncguard: ignore[SG101, SG102]\n"
    "    return a, b, c, d, e, x.item(), x.tolist()  # noqa: SG101, SG102 -- legacy, see #12\n"
)


def test_add_noqa_then_nothing_left(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "m.py").write_text(SOURCE)
    crlf = b"import torch\r\n\r\n@torch.compile\r\ndef f(x):\r\n\treturn x.item()\r\n"
    (tmp_path / "crlf.py").write_bytes(b"\xef\xbb\xbf" + crlf)  # a BOM, CRLF, a tab
    args = ["check", ".", "--no-cache", "--add-noqa", "--reason", "legacy, see #12"]
    assert main(args) == 0
    assert "Added suppression comments to" in capsys.readouterr().out
    assert (tmp_path / "m.py").read_text() == EXPECTED
    assert (
        (tmp_path / "crlf.py")
        .read_bytes()
        .endswith(b"\treturn x.item()  # noqa: SG101 -- legacy, see #12\r\n")
    )
    before = {path.name: path.read_bytes() for path in tmp_path.glob("*.py")}
    assert main(args) == 0  # a second run changes nothing
    assert {path.name: path.read_bytes() for path in tmp_path.glob("*.py")} == before
    assert main(["check", ".", "--no-cache"]) == 0  # and nothing is reported
