"""Changed-files mode and the pre-commit hooks, with the real pre-commit in a git repo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO
from syncguard.cli import main

HELPER_CLEAN = "def total(x):\n    return x.sum()\n"
HELPER_SYNC = "def total(x):\n    return x.sum().item()\n"
MODEL_CALLS = (
    "from torch import nn\n\nfrom pkg.helpers import total\n\n\n"
    "class Model(nn.Module):\n    def forward(self, x):\n        return total(x)\n"
)
MODEL_ALONE = "from torch import nn\n\n\nclass Model(nn.Module):\n    def forward(self, x):\n        return x\n"  # noqa: E501
OLD_FINDING = "import torch\n\n\n@torch.compile\ndef legacy(x):\n    return x.tolist()\n"


def write_project(root: Path, helper: str, model: str) -> None:
    (root / "pkg").mkdir(exist_ok=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "helpers.py").write_text(helper)
    (root / "pkg" / "model.py").write_text(model)
    (root / "pkg" / "legacy.py").write_text(OLD_FINDING)
    (root / "other.py").write_text("def f(x):\n    return x\n")


def check(*args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[tuple[str, int]]]:
    capsys.readouterr()
    code = main(["check", *args, "--output-format", "json"])
    return code, [(f["path"], f["line"]) for f in json.loads(capsys.readouterr().out)]


@pytest.mark.parametrize("marker", ["pyproject.toml", ".git"])
def test_a_named_file_is_linted_with_its_project(tmp_path: Path, monkeypatch, capsys, marker):
    write_project(tmp_path, HELPER_SYNC, MODEL_CALLS)
    if marker == ".git":
        (tmp_path / ".git").mkdir()
    else:
        (tmp_path / marker).write_text("[tool.syncguard]\n")
    monkeypatch.chdir(tmp_path)
    at_caller = ("pkg/model.py", 8)
    # the caller alone; the helper alone (reported at the hot call site, through it)
    assert check("pkg/model.py", capsys=capsys) == (1, [at_caller])
    assert check("pkg/helpers.py", capsys=capsys) == (1, [at_caller])
    # an unrelated file: the old finding of another file is not its business
    assert check("other.py", capsys=capsys) == (0, [])
    assert check("pkg/legacy.py", capsys=capsys) == (1, [("pkg/legacy.py", 6)])
    # --no-project: the file alone, and the helper is nobody's callee
    assert check("pkg/helpers.py", "--no-project", capsys=capsys) == (0, [])
    # from a subfolder, paths as typed from there
    monkeypatch.chdir(tmp_path / "pkg")
    assert check("helpers.py", capsys=capsys) == (1, [("model.py", 8)])


def test_notes_on_unused_sub_configs_are_about_the_named_files_only(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    write_project(tmp_path, HELPER_SYNC, MODEL_CALLS)
    (tmp_path / ".git").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "pyproject.toml").write_text(
        '[tool.syncguard]\nhot-functions = ["tools.*"]\n'
    )
    (tmp_path / "tools" / "gen.py").write_text("def gen(x):\n    return x\n")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    main(["check", "other.py"])  # the sub-project's config is not this file's business
    assert "not used" not in capsys.readouterr().err
    main(["check", "tools/gen.py"])  # its own config makes tools/ its project: it is used
    assert "not used" not in capsys.readouterr().err
    main(["check", "."])  # a whole-tree run says it too
    assert "tools/pyproject.toml: its hot-functions is not used" in capsys.readouterr().err


def test_no_project_without_config_or_checkout(tmp_path: Path, monkeypatch, capsys) -> None:
    write_project(tmp_path, HELPER_SYNC, MODEL_CALLS)
    monkeypatch.chdir(tmp_path)
    assert check("pkg/helpers.py", capsys=capsys) == (0, [])  # no project: the file alone


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, timeout=60)


def pre_commit(root: Path, hook: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(root.parent / "pre-commit-home"), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", hook, "--color", "never"],
        cwd=root, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repo whose pre-commit config runs this checkout's hooks as
    .pre-commit-hooks.yaml defines them (installed here: `language: system`)."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "dev@example.com")
    git(root, "config", "user.name", "dev")
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    for hook in hooks:
        hook["entry"] = hook["entry"].replace("syncguard", f"{sys.executable} -m syncguard", 1)
        hook["language"] = "system"
    config = {"repos": [{"repo": "local", "hooks": hooks}]}
    (root / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    return root


def test_pre_commit_sees_the_helper_of_a_staged_caller_and_the_caller_of_a_staged_helper(
    repo: Path,
) -> None:
    write_project(repo, HELPER_CLEAN, MODEL_CALLS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "clean", "--no-verify")
    # stage only the helper: the sync is reported at the unchanged caller
    (repo / "pkg" / "helpers.py").write_text(HELPER_SYNC)
    git(repo, "add", "pkg/helpers.py")
    run = pre_commit(repo, "syncguard")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "pkg/model.py:8:16: SG101" in run.stdout
    git(repo, "commit", "-qm", "sync in the helper", "--no-verify")
    # stage only a caller of the (unchanged) helper
    (repo / "pkg" / "model.py").write_text(MODEL_ALONE)
    git(repo, "commit", "-qam", "no caller", "--no-verify")
    (repo / "pkg" / "model.py").write_text(MODEL_CALLS)
    git(repo, "add", "pkg/model.py")
    run = pre_commit(repo, "syncguard")
    assert run.returncode == 1 and "pkg/model.py:8:16: SG101" in run.stdout
    git(repo, "commit", "-qm", "caller", "--no-verify")
    # an unrelated staged file passes, though the project has findings
    (repo / "other.py").write_text("def f(x):\n    return x + 1\n")
    git(repo, "add", "other.py")
    run = pre_commit(repo, "syncguard")
    assert run.returncode == 0, run.stdout + run.stderr


def test_fix_hook_rewrites_the_staged_file(repo: Path) -> None:
    (repo / "buffers.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Runner(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        '        self.buf = torch.zeros(16, device="cuda")\n\n'
        "    def forward(self, x):\n        self.buf[0] = 0\n        return self.buf\n"
    )
    git(repo, "add", "-A")
    run = pre_commit(repo, "syncguard-fix")
    assert run.returncode == 1  # the fix hook changed a file: pre-commit fails
    assert "self.buf[0:1] = 0" in (repo / "buffers.py").read_text()
    git(repo, "add", "-A")
    assert pre_commit(repo, "syncguard-fix").returncode == 0


def test_documented_snippets_name_real_hooks_and_the_release_tag() -> None:
    from syncguard._version import __version__

    hook_ids = {
        hook["id"] for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    }
    for doc in (REPO / "docs" / "ci.md", REPO / "README.md"):
        text = doc.read_text()
        assert f"rev: v{__version__}\n" in text, doc
        assert set(re_ids(text)) <= hook_ids and "syncguard" in re_ids(text), doc


def re_ids(text: str) -> list[str]:
    import re

    return re.findall(r"- id: ([\w-]+)", text)
