"""Which config applies where: anchored globs, the nearest config per file, project-wide
analysis settings, --config, --show-settings."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from conftest import run_cli
from syncguard.config import ConfigError
from syncguard.engine import lint_files
from syncguard.hierarchy import ConfigTree, Overrides, show_settings
from syncguard.rules import all_rules

ITEM_AND_TOLIST = "import torch\n\n@torch.compile\ndef step(x):\n    return x.item(), x.tolist()\n"
KNOWN = list(all_rules())


def write(root: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return write(
        tmp_path / "repo",
        {
            "pyproject.toml": "[tool.syncguard]\n"
            'per-file-ignores = { "tests/*" = ["SG101"], "src/pkg/legacy.py" = ["SG1"] }\n',
            "src/pkg/__init__.py": "",
            "src/pkg/model.py": ITEM_AND_TOLIST,
            "src/pkg/legacy.py": ITEM_AND_TOLIST,
            "tests/test_model.py": ITEM_AND_TOLIST,
        },
    )


def reported(result_stdout: str, root: Path, cwd: Path) -> list[tuple[str, str]]:
    return sorted(
        (os.path.relpath(cwd / f["path"], root).replace(os.sep, "/"), f["code"])
        for f in json.loads(result_stdout)
    )


EXPECTED = [
    ("src/pkg/model.py", "SG101"),
    ("src/pkg/model.py", "SG102"),
    ("tests/test_model.py", "SG102"),
]


@pytest.mark.parametrize(
    ("where", "paths"),
    [
        (".", ["."]),
        (".", ["./src", "./tests/"]),
        ("tests", ["..", "."]),  # the bug: after `cd tests` "tests/*" matched nothing
        ("tests", ["../src", "test_model.py"]),
        ("src/pkg", ["../../tests/test_model.py", "model.py", "legacy.py"]),
    ],
)
def test_per_file_ignores_mean_the_same_from_any_folder(
    repo: Path, where: str, paths: list[str]
) -> None:
    cwd = repo / where
    result = run_cli("check", *paths, "--output-format", "json", cwd=cwd)
    assert reported(result.stdout, repo, cwd) == EXPECTED, result.stderr


def test_per_file_ignores_with_absolute_paths(repo: Path, tmp_path: Path) -> None:
    absolute = [str(repo / "src"), str(repo / "tests" / "test_model.py")]
    result = run_cli("check", *absolute, "--output-format", "json", cwd=repo)
    assert reported(result.stdout, repo, repo) == EXPECTED


def lint(paths: list[str], tree: ConfigTree | None = None) -> list[tuple[str, str]]:
    tree = tree or ConfigTree(known_codes=KNOWN)
    result = lint_files(paths, settings=tree.settings_for_paths(paths))
    assert result.problems == []
    return sorted((f.path, f.code) for f in result.findings)


def test_each_file_uses_the_selection_of_its_nearest_config(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        repo,
        {
            "tests/pyproject.toml": '[tool.syncguard]\nselect = ["SG102"]\n',
            "src/pkg/sub/pyproject.toml": '[tool.syncguard]\nignore = ["SG102"]\n'
            'per-file-ignores = { "inner.py" = ["SG101"] }\n',
            "src/pkg/sub/inner.py": ITEM_AND_TOLIST,
            "src/pkg/sub/other.py": ITEM_AND_TOLIST,
        },
    )
    monkeypatch.chdir(repo)
    assert lint(["."]) == [
        ("src/pkg/model.py", "SG101"),
        ("src/pkg/model.py", "SG102"),
        ("src/pkg/sub/other.py", "SG101"),  # sub's config: SG102 ignored, no legacy glob
        ("tests/test_model.py", "SG102"),  # tests' config: only SG102, no per-file-ignores
    ]
    monkeypatch.chdir(repo / "tests")
    assert lint(["test_model.py"]) == [("test_model.py", "SG102")]
    assert lint(["../src/pkg/sub"]) == [("../src/pkg/sub/other.py", "SG101")]


def test_command_line_selection_applies_to_every_config(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(repo, {"tests/pyproject.toml": '[tool.syncguard]\nselect = ["SG102"]\n'})
    monkeypatch.chdir(repo)
    tree = ConfigTree(Overrides(select=("SG101",)), KNOWN)
    assert lint(["."], tree) == [("src/pkg/model.py", "SG101"), ("tests/test_model.py", "SG101")]
    tree = ConfigTree(Overrides(ignore=("SG102",)), KNOWN)  # leaves tests/ nothing: fine
    assert lint(["."], tree) == [("src/pkg/model.py", "SG101")]


def test_analysis_settings_come_from_the_config_of_the_common_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    step = "class Runner:\n    def step(self, x):\n        return x.item()\n"
    root = write(
        tmp_path / "mono",
        {
            "pyproject.toml": '[tool.syncguard]\nhot-functions = ["*.Runner.step"]\n',
            "engine/runner.py": step,
            "tools/pyproject.toml": '[tool.syncguard]\nscope = "all"\n',
            "tools/runner.py": step,
        },
    )
    monkeypatch.chdir(root)
    tree = ConfigTree(known_codes=KNOWN)
    settings = tree.settings_for_paths(["engine", "tools"])
    assert settings.source == root / "pyproject.toml"
    result = lint_files(["engine", "tools"], settings=settings)
    assert sorted(f.path for f in result.findings) == ["engine/runner.py", "tools/runner.py"]
    (note,) = result.warnings
    assert note.startswith("tools/pyproject.toml: its scope and hot-functions are not used")
    assert "project-wide" in note
    alone = ConfigTree(known_codes=KNOWN).settings_for_paths(["tools/runner.py"])
    assert alone.source == root / "tools" / "pyproject.toml" and alone.scope == "all"


def test_an_explicit_config_applies_everywhere_anchored_at_the_working_folder(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = (
        write(
            tmp_path / "ci",
            {"lint.toml": '[tool.syncguard]\nper-file-ignores = { "src/*" = ["SG102"] }\n'},
        )
        / "lint.toml"
    )
    write(repo, {"tests/pyproject.toml": '[tool.syncguard]\nselect = ["SG2"]\n'})
    monkeypatch.chdir(repo)
    tree = ConfigTree(known_codes=KNOWN, config_file=config)
    assert lint(["src/pkg/model.py", "tests"], tree) == [
        ("src/pkg/model.py", "SG101"),
        ("tests/test_model.py", "SG101"),
        ("tests/test_model.py", "SG102"),
    ]


def test_a_config_whose_own_selection_leaves_nothing_is_located(repo: Path) -> None:
    write(repo, {"tests/pyproject.toml": '[tool.syncguard]\n\nignore = ["SG"]\n'})
    tree = ConfigTree(Overrides(ignore=("SG2",)), KNOWN)
    root = tree.settings_for_paths([str(repo)])
    with pytest.raises(ConfigError) as raised:
        tree.settings_for(str(repo / "tests"))
    assert str(raised.value).startswith(f"{repo / 'tests' / 'pyproject.toml'}:3:1: `ignore`")
    result = lint_files([str(repo)], settings=root)
    assert [(p.path, p.line) for p in result.problems] == [
        (str(repo / "tests" / "pyproject.toml"), 3)
    ]
    with pytest.raises(ConfigError, match="--select / --extend-select / --ignore leave no rule"):
        ConfigTree(Overrides(ignore=("SG",)), KNOWN).settings_for_paths([str(repo)])


def test_show_settings_names_each_config_and_why(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(repo, {"tests/pyproject.toml": '[tool.syncguard]\nselect = ["SG102"]\n'})
    monkeypatch.chdir(repo / "src")
    tree = ConfigTree(Overrides(extend_select=("SG2",)), KNOWN)
    settings = tree.settings_for_paths(["..", "pkg/model.py"])
    text = show_settings(settings, ["pkg/model.py", "../tests/test_model.py"], KNOWN)
    analysis, src, tests = text.split("\n\n")
    assert analysis.splitlines()[:3] == [
        "# Analysis settings (project-wide)",
        f"#   config: {repo / 'pyproject.toml'}",
        f"#   why: the nearest pyproject.toml with [tool.syncguard] at or above {repo}, "
        "the folder holding every linted path",
    ]
    assert 'scope = "hot"' in analysis and '"*ModelRunner.execute_model"' in analysis
    assert src.splitlines()[0] == "# Settings of 1 file: pkg/model.py"
    assert "per-file-ignores = {" in src and '"tests/*" = ["SG101"]' in src
    assert f"#   globs relative to: {repo}" in src
    assert 'command-line = { "extend-select" = ["SG2"]' in src
    assert "tests/pyproject.toml" in tests and 'select = ["SG102"]' in tests
    codes = [code for code in KNOWN if code == "SG102" or code.startswith("SG2")]
    assert f"reported = {json.dumps(codes)}" in tests


def test_command_line_nested_configs_force_exclude_and_show(repo: Path) -> None:
    write(
        repo,
        {
            "pyproject.toml": '[tool.syncguard]\nexclude = ["legacy.py"]\n',
            "tests/pyproject.toml": '[tool.syncguard]\nselect = ["SG102"]\nscope = "all"\n',
        },
    )
    cwd = repo / "src"
    result = run_cli("check", "..", "--output-format", "json", cwd=cwd)
    assert reported(result.stdout, repo, cwd) == EXPECTED
    assert "/tests/pyproject.toml: its scope is not used" in result.stderr.replace(os.sep, "/")
    named = ["pkg/legacy.py", "pkg/model.py", "--output-format", "json"]
    linted = run_cli("check", *named, cwd=cwd)
    assert {f["path"] for f in json.loads(linted.stdout)} == {"pkg/legacy.py", "pkg/model.py"}
    forced = run_cli("check", *named, "--force-exclude", cwd=cwd)
    assert {f["path"] for f in json.loads(forced.stdout)} == {"pkg/model.py"}
    shown = run_cli("check", "..", "--show-files", cwd=cwd)
    assert shown.returncode == 0
    assert shown.stdout.splitlines() == [
        "../src/pkg/__init__.py",
        "../src/pkg/model.py",
        "../tests/test_model.py",
    ]
    settings = run_cli("check", "pkg", "--show-settings", "--extend-select", "SG2", cwd=cwd)
    assert settings.returncode == 0 and settings.stdout.count("#   config: ") == 2
    assert 'command-line = { "extend-select" = ["SG2"]' in settings.stdout
    extended = run_cli(
        "check", "..", "--extend-ignore", "SG101", "--output-format", "json", cwd=cwd
    )
    assert reported(extended.stdout, repo, cwd) == [EXPECTED[1], EXPECTED[2]]


def test_the_pre_commit_hook_passes_force_exclude() -> None:
    hooks = (Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text()
    assert "entry: syncguard check --force-exclude\n" in hooks
