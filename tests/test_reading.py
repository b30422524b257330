"""Reading source files: only regular files, never blocking, bounded in size."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from syncguard.engine import lint_files
from syncguard.reading import MAX_FILE_BYTES, Unreadable, read_bytes, read_source

HOT = "import torch\n\n@torch.compile\ndef step(x):\n    return x.item()\n"


def refusal(path: Path, limit: int = MAX_FILE_BYTES) -> str:
    with pytest.raises(Unreadable) as raised:
        read_bytes(str(path), limit)
    error = raised.value.error
    assert (error.line, error.column) == (1, 1)
    return error.message


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "a.py")
    assert refusal(tmp_path / "a.py") == "not a regular file (a FIFO): skipped"


def test_a_link_to_a_device_is_refused(tmp_path: Path) -> None:
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    assert refusal(tmp_path / "zero.py") == "not a regular file (a character device): skipped"


def test_a_socket_is_refused(tmp_path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    where = tmp_path / "s.py"
    try:
        server.bind(str(where))
    except OSError as error:  # pragma: no cover - a file system without sockets
        pytest.skip(f"cannot bind a socket here: {error}")
    try:
        assert refusal(where) == "not a regular file (a socket): skipped"
    finally:
        server.close()


def test_a_link_to_a_regular_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text(HOT)
    (tmp_path / "link.py").symlink_to(tmp_path / "real.py")
    assert read_source(str(tmp_path / "link.py")) == HOT


def test_size_limit_is_checked_before_and_while_reading(tmp_path: Path) -> None:
    big = tmp_path / "big.py"
    with open(big, "wb") as handle:  # sparse: no gigabytes written to disk
        handle.truncate(MAX_FILE_BYTES + 1)
    assert refusal(big).startswith("too large to lint (10.0 MiB, the limit is 10 MiB)")
    (tmp_path / "small.py").write_bytes(b"x = 1\n" * 10)
    assert refusal(tmp_path / "small.py", limit=59).startswith("too large to lint")
    assert read_bytes(str(tmp_path / "small.py"), limit=60) == b"x = 1\n" * 10


def test_cannot_read_is_located(tmp_path: Path) -> None:
    assert refusal(tmp_path / "missing.py").startswith("cannot read: No such file")


def test_hostile_files_in_a_tree_are_located_errors_and_the_rest_is_linted(
    tmp_path: Path,
) -> None:
    (tmp_path / "good.py").write_text(HOT)
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    with open(tmp_path / "huge.py", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES * 3)
    result = lint_files([str(tmp_path)])
    assert [finding.path for finding in result.findings] == [str(tmp_path / "good.py")]
    messages = {Path(problem.path).name: problem.message for problem in result.problems}
    assert messages["fifo.py"] == "not a regular file (a FIFO): skipped"
    assert messages["zero.py"] == "not a regular file (a character device): skipped"
    assert messages["huge.py"].startswith("too large to lint (30.0 MiB")


def test_the_command_line_never_hangs_on_a_fifo(tmp_path: Path) -> None:
    """The bug: ``mkfifo a.py; syncguard check .`` blocked forever in open()."""
    os.mkfifo(tmp_path / "a.py")
    (tmp_path / "b.py").write_text(HOT)
    for args in (["."], ["a.py", "b.py"]):
        result = subprocess.run(
            [sys.executable, "-m", "syncguard", "check", *args, "--no-cache"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2
        assert "a.py:1:1: not a regular file (a FIFO): skipped" in result.stderr
        assert "b.py:5:12: SG101" in result.stdout
