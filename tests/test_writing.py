"""--fix never loses code: atomic writes, modes and owners kept, files changed meanwhile and
symlinks out of the tree left alone, an interrupt or a full disk between or during writes."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

from syncguard.cli import main
from syncguard.fixes import fix_paths, write_fixes

MODEL = """\
import torch
from torch import nn


class Runner(nn.Module):
    def __init__(self):
        super().__init__()
        self.buf = torch.zeros(16, device="cuda")

    def forward(self, x):
        self.buf[0] = 0
        return x + self.buf
"""
FIXED = MODEL.replace("self.buf[0] = 0", "self.buf[0:1] = 0")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(MODEL)
    return tmp_path


def leftovers(folder: Path) -> list[str]:
    """Temporary files a write left behind."""
    return sorted(p.name for p in folder.rglob("*") if p.name.endswith(".syncguard"))


def fix(capsys: pytest.CaptureFixture[str], *paths: str) -> tuple[int, str]:
    code = main(["check", "--fix", "--no-cache", *(paths or (".",))])
    return code, capsys.readouterr().err


def test_fix_keeps_the_mode_and_replaces_the_file(tree: Path, capsys) -> None:
    path = tree / "a.py"
    path.chmod(0o751)
    inode = path.stat().st_ino
    assert fix(capsys)[0] == 0
    assert path.read_text() == FIXED
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert path.stat().st_ino != inode  # a new file moved over the old one, never truncated
    assert leftovers(tree) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")
def test_fix_keeps_the_owner(tree: Path, capsys) -> None:
    path = tree / "a.py"
    os.chown(path, 12345, 23456)
    assert fix(capsys)[0] == 0
    assert (path.stat().st_uid, path.stat().st_gid) == (12345, 23456)


@pytest.mark.parametrize("failing", ["write", "fsync", "replace"], ids=["write", "fsync", "rename"])
def test_a_full_disk_leaves_the_file_as_it_was(tree: Path, monkeypatch, failing: str) -> None:
    run = fix_paths(["."])
    assert sorted(run.fixed) == ["a.py", "b.py", "c.py"]

    def no_space(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    if failing == "write":  # the temporary file fills the disk half-way through
        real_fdopen = os.fdopen

        class Half:
            def __init__(self, handle):
                self.handle = handle

            def __getattr__(self, name):
                return getattr(self.handle, name)

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.handle.close()

            def write(self, data: bytes) -> None:
                self.handle.write(data[: len(data) // 2])
                self.handle.flush()
                no_space()

        monkeypatch.setattr(os, "fdopen", lambda *a, **k: Half(real_fdopen(*a, **k)))
    else:
        monkeypatch.setattr(os, failing, no_space)
    errors = write_fixes(run)
    monkeypatch.undo()
    assert [e.split(":", 1)[0] for e in errors] == ["a.py", "b.py", "c.py"]
    assert all("No space left on device; left as it was" in e for e in errors)
    assert all((tree / name).read_text() == MODEL for name in ("a.py", "b.py", "c.py"))
    assert leftovers(tree) == []


def test_an_interrupt_leaves_each_file_untouched_or_fully_fixed(tree: Path, monkeypatch) -> None:
    run = fix_paths(["."])
    real_replace = os.replace
    calls = []

    def interrupted_second(source: str, target: str) -> None:
        calls.append(target)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", interrupted_second)
    with pytest.raises(KeyboardInterrupt):
        write_fixes(run)
    monkeypatch.undo()
    assert [(tree / n).read_text() == FIXED for n in ("a.py", "b.py", "c.py")] == [
        True, False, False
    ]  # fmt: skip
    assert (tree / "b.py").read_text() == MODEL
    assert leftovers(tree) == []


def test_a_file_changed_since_it_was_read_is_not_written(tree: Path) -> None:
    run = fix_paths(["."])
    edited = MODEL + "# saved by an editor while the linter ran\n"
    (tree / "b.py").write_text(edited)
    errors = write_fixes(run)
    assert errors == ["b.py:1:1: changed since syncguard read it: not written (run --fix again)"]
    assert (tree / "b.py").read_text() == edited
    assert (tree / "a.py").read_text() == FIXED and (tree / "c.py").read_text() == FIXED


def test_fixes_are_made_from_the_text_they_will_replace(tree: Path, monkeypatch) -> None:
    """A file edited between the lint and the read for fixing: its fixes are derived again
    from what was read, so the spans point at the right code."""
    import syncguard.fixes as fixes_module

    real_lint = fixes_module.lint_files
    calls = []

    def lint_then_edit(*args, **kwargs):
        result = real_lint(*args, **kwargs)
        if not calls:  # an edit saved right after the first lint read the file
            (tree / "a.py").write_text("# a new first line\n" + MODEL)
        calls.append(kwargs.get("sources"))
        return result

    monkeypatch.setattr(fixes_module, "lint_files", lint_then_edit)
    run = fix_paths(["a.py"])
    assert run.fixed["a.py"] == "# a new first line\n" + FIXED


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_file_swapped_for_a_fifo_after_the_lint_is_not_read_for_fixing(
    tree: Path, monkeypatch
) -> None:
    """The fixer reads what it rewrites as the lint does (regular files only): a FIFO
    swapped in after the lint would block an open() for ever."""
    import threading

    import syncguard.fixes as fixes_module

    real_lint = fixes_module.lint_files

    def lint_then_swap(*args, **kwargs):
        result = real_lint(*args, **kwargs)
        if not (tree / "b.py").is_fifo():
            (tree / "b.py").unlink()
            os.mkfifo(tree / "b.py")
        return result

    monkeypatch.setattr(fixes_module, "lint_files", lint_then_swap)
    runs = []
    fixing = threading.Thread(target=lambda: runs.append(fix_paths(["."])), daemon=True)
    fixing.start()
    fixing.join(timeout=30)
    if fixing.is_alive():  # blocked opening the FIFO: give it a writer so the thread ends
        os.close(os.open(tree / "b.py", os.O_WRONLY | os.O_NONBLOCK))
        fixing.join(timeout=10)
        pytest.fail("reading b.py for fixing blocked on the FIFO")
    assert sorted(runs[0].fixed) == ["a.py", "c.py"]


def test_symlinks_to_files_outside_the_tree_are_never_written(tmp_path, monkeypatch, capsys):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "model.py").write_text(MODEL)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "linked.py").symlink_to(outside / "model.py")
    (tree / "real.py").write_text(MODEL)
    (tree / "alias.py").symlink_to(tree / "real.py")
    monkeypatch.chdir(tree)
    code, err = fix(capsys)
    assert code == 2
    assert f"linked.py:1:1: a symlink to {os.path.realpath(outside / 'model.py')}" in err
    assert (outside / "model.py").read_text() == MODEL
    assert (tree / "real.py").read_text() == FIXED  # inside the tree: through either name
    assert (tree / "alias.py").is_symlink()
    code, err = fix(capsys, "linked.py")  # named on the command line: still outside
    assert code == 2 and (outside / "model.py").read_text() == MODEL
