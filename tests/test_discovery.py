"""Finding the files to lint: unlistable folders, symbolic links, anchored exclude globs,
force-exclude, hostile paths named on the command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from syncguard.config import Settings, load
from syncguard.discovery import discover
from syncguard.hierarchy import ConfigTree, Overrides

HOT = "import torch\n\n@torch.compile\ndef step(x):\n    return x.item()\n"
# Root without the capabilities that let it read any folder: what a user without rights sees.
UNPRIVILEGED = ["setpriv", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search"]


def names(files: list[str], root: Path) -> list[str]:
    return [os.path.relpath(file, root).replace(os.sep, "/") for file in files]


def unprivileged(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run Python with ``arguments`` where folders without read permission cannot be
    listed (as root: without the capabilities to read any folder)."""
    prefix = UNPRIVILEGED if os.geteuid() == 0 else []
    if prefix and shutil.which("setpriv") is None:
        pytest.skip("setpriv is not installed")
    locked = cwd / "probe_locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        probe = subprocess.run([*prefix, "ls", str(locked)], capture_output=True)
    finally:
        locked.chmod(0o755)
        locked.rmdir()
    if probe.returncode == 0:
        pytest.skip("cannot make a folder unlistable here")
    return subprocess.run(
        [*prefix, sys.executable, *arguments],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_unlistable_folder_is_a_located_error_and_exit_2(tmp_path: Path) -> None:
    """The bug: os.walk without onerror skipped it and the run passed with 0 files."""
    (tmp_path / "ok.py").write_text("x = 1\n")
    locked = tmp_path / "pkg" / "locked"
    locked.mkdir(parents=True)
    (locked / "hidden.py").write_text(HOT)
    locked.chmod(0)
    check = ("-m", "syncguard", "check", "--no-cache")
    walk = "from syncguard.discovery import discover; print(discover(['pkg/locked']))"
    try:
        result = unprivileged(*check, ".", cwd=tmp_path)
        top = unprivileged(*check, "pkg/locked", cwd=tmp_path)
        library = unprivileged("-c", walk, cwd=tmp_path)
    finally:
        locked.chmod(0o755)
    assert result.returncode == 2, result.stderr
    assert "pkg/locked:1:1: cannot list folder: Permission denied" in result.stderr
    assert top.returncode == 2 and "Traceback" not in top.stderr
    assert "pkg/locked" in top.stderr  # a named path: click may refuse it first
    message = "cannot list folder: Permission denied"
    assert (
        library.stdout.strip()
        == f"([], [('pkg/locked', FileError(line=1, column=1, message='{message}'))])"
    )


def test_symlinked_folders_are_not_followed_unless_named(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "elsewhere.py").write_text(HOT)
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "own.py").write_text(HOT)
    (tree / "linked").symlink_to(outside, target_is_directory=True)
    (tree / "loop").symlink_to(tree, target_is_directory=True)
    (tree / "file_link.py").symlink_to(outside / "elsewhere.py")
    files, problems = discover([str(tree)])
    assert names(files, tree) == ["file_link.py", "own.py"] and problems == []
    files, _ = discover([str(tree / "linked")])
    assert names(files, tree) == ["linked/elsewhere.py"]


def test_paths_named_that_are_not_files_or_folders(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.py")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "gone.py")
    files, problems = discover(
        [str(tmp_path / "fifo.py"), str(tmp_path / "dangling.py"), str(tmp_path / "nope.py")]
    )
    assert files == [str(tmp_path / "fifo.py")]  # kept: reading it says what it is
    assert [(Path(path).name, error.message) for path, error in problems] == [
        ("dangling.py", "broken symbolic link"),
        ("nope.py", "no such file or directory"),
    ]


def project(tmp_path: Path, config: str) -> Path:
    root = tmp_path / "proj"
    for relative in ("src/pkg/model.py", "src/pkg/gen/table_pb2.py", "tests/test_model.py",
                     "third_party/lib/vendored.py", "scripts/tool.py"):  # fmt: skip
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HOT)
    (root / "pyproject.toml").write_text("[tool.syncguard]\n" + config)
    return root


@pytest.mark.parametrize(
    ("pattern", "gone"),
    [
        ("third_party", ["third_party/lib/vendored.py"]),
        ("third_party/", ["third_party/lib/vendored.py"]),
        ("./third_party/lib", ["third_party/lib/vendored.py"]),
        ("*_pb2.py", ["src/pkg/gen/table_pb2.py"]),
        ("src/pkg/gen", ["src/pkg/gen/table_pb2.py"]),
        ("src/*/gen/*.py", ["src/pkg/gen/table_pb2.py"]),
        ("**/gen", ["src/pkg/gen/table_pb2.py"]),
        ("lib", ["third_party/lib/vendored.py"]),
        ("pkg/gen", []),  # anchored at the config's folder: there is no proj/pkg
        ("proj", []),  # the config's own folder and those above are not part of the match
    ],
)
def test_exclude_globs_are_anchored_at_the_config_folder(
    tmp_path: Path, pattern: str, gone: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, f"exclude = [{pattern!r}]\n")
    every = sorted(names(discover([str(root)])[0], root))
    expected = sorted(set(every) - set(gone)) if gone else every
    settings = load(root / "pyproject.toml")
    for cwd, paths in (
        (tmp_path, [str(root)]),
        (root, ["."]),
        (root, [str(root)]),
        (root / "src", ["..", "../tests", "../third_party", "../scripts"]),
        (root / "tests", ["../"]),
    ):
        monkeypatch.chdir(cwd)
        files, problems = discover(paths, settings)
        assert problems == []
        assert sorted(names(files, root)) == expected, (cwd, paths)


def test_named_files_are_excluded_only_with_force_exclude(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, 'exclude = ["third_party", "*_pb2.py"]\n')
    monkeypatch.chdir(root / "src")
    named = ["../third_party/lib/vendored.py", "pkg/gen/table_pb2.py", "pkg/model.py"]
    plain = ConfigTree()
    files, _ = discover(named, plain.settings_for_paths(named))
    assert len(files) == 3  # as ruff: a file named on the command line is linted
    forced = ConfigTree(Overrides(force_exclude=True))
    files, _ = discover(named, forced.settings_for_paths(named))
    assert files == ["pkg/model.py"]
    (root / "pyproject.toml").write_text(
        '[tool.syncguard]\nexclude = ["third_party"]\nforce-exclude = true\n'
    )
    files, _ = discover([*named, "../third_party"], ConfigTree().settings_for_paths(named))
    assert files == ["pkg/gen/table_pb2.py", "pkg/model.py"]


def test_each_folder_uses_the_exclude_of_its_nearest_config(tmp_path: Path) -> None:
    root = project(tmp_path, 'exclude = ["scripts"]\n')
    (root / "src" / "pyproject.toml").write_text('[tool.syncguard]\nexclude = ["gen"]\n')
    (root / "tests" / "pyproject.toml").write_text("[tool.ruff]\nline-length = 80\n")
    tree = ConfigTree()
    files, problems = discover([str(root)], tree.settings_for_paths([str(root)]))
    assert problems == []
    assert names(files, root) == [
        "src/pkg/model.py",  # src's config excludes gen, and not scripts
        "tests/test_model.py",  # tests' pyproject has no [tool.syncguard]: the root's applies
        "third_party/lib/vendored.py",
    ]


def test_a_bad_config_below_is_a_located_error_and_its_files_are_not_linted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, "")
    (root / "src" / "pyproject.toml").write_text('[tool.syncguard]\nselect = ["SG1"\n')
    (root / "tests" / "pyproject.toml").write_text("[tool.syncguard]\nscope = 'some'\n")
    monkeypatch.chdir(root)
    files, problems = discover(["."], ConfigTree().settings_for_paths(["."]))
    assert names(files, root) == ["scripts/tool.py", "third_party/lib/vendored.py"]
    assert [(path, error.line, error.column) for path, error in problems] == [
        ("src/pyproject.toml", 2, 16),
        ("tests/pyproject.toml", 2, 1),
    ]
    assert "invalid TOML" in problems[0][1].message
    assert "`scope` must be one of" in problems[1][1].message


def test_default_settings_walk_as_before(tmp_path: Path) -> None:
    root = project(tmp_path, "")
    (root / ".venv" / "lib").mkdir(parents=True)
    (root / ".venv" / "lib" / "x.py").write_text(HOT)
    (root / "env").mkdir()
    (root / "env" / "pyvenv.cfg").write_text("home = /usr\n")
    (root / "env" / "y.py").write_text(HOT)
    files, _ = discover([str(root)], Settings())
    assert len(files) == 5 and not any("venv" in f or "env/" in f for f in files)
