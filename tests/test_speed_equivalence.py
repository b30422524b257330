"""Worker processes, the cache and the call pruning never change a lint's result."""

from __future__ import annotations

import concurrent.futures
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import FIXTURES
from syncguard import engine, perfile
from syncguard.bindings import TreeCallFilter
from syncguard.callgraph import CallGraph
from syncguard.config import Settings
from syncguard.discovery import discover, module_name
from syncguard.engine import LintResult, lint_files
from syncguard.hotness import Hotness
from syncguard.project import Finding, Project


def generated_tree(root: Path, modules: int = 12) -> Path:
    """A package whose hot ``forward`` reaches syncs through chains of helpers across
    modules, plus files the engine must report or skip (syntax error, binary, ignored)."""
    package = root / "gen"
    (package / "ops").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "ops" / "__init__.py").write_text("from gen.ops.m0 import entry as entry\n")
    for index in range(modules):
        following = f"from gen.ops.m{index + 1} import helper_{index + 1}\n"
        call_next = f"    total = helper_{index + 1}(x, n)\n"
        if index == modules - 1:
            following, call_next = "", "    total = x.sum()\n"
        (package / "ops" / f"m{index}.py").write_text(
            "import torch\n"
            "from torch import nn\n"
            f"{following}\n\n"
            f"def helper_{index}(x, n: int):\n"
            f"{call_next}"
            f"    if {index % 3} == 0:\n"
            "        return total.item()  # a sync hidden in a helper\n"
            f"    values = [v for v in range(n) if x[v].tolist()]\n"
            "    return values\n\n\n"
            f"def entry(x):\n    return helper_{index}(x, 3)\n\n\n"
            f"class Block{index}(nn.Module):\n"
            "    def forward(self, x):\n"
            f"        idx = torch.nonzero(x)  # noqa: SG201\n"
            f"        return helper_{index}(x, 2) + idx.shape[0] + x.max().item()\n"
        )
    (package / "model.py").write_text(
        "import torch\nfrom torch import nn\nfrom gen.ops import entry\n\n\n"
        "class Model(nn.Module):\n"
        "    def forward(self, x):\n"
        "        y = entry(x)\n"
        "        torch.cuda.synchronize()\n"
        "        return y\n"
    )
    (package / "broken.py").write_text("def oops(:\n    pass\n")
    (package / "blob.py").write_bytes(b"\x00\x01binary")
    (package / "skipped.py").write_text(
        "# syncguard: ignore-file\nimport torch\n\n@torch.compile\ndef f(x):\n    return x.item()\n"
    )
    return root


def outcome(result: LintResult) -> tuple[list[object], list[object]]:
    return list(result.findings), list(result.problems)


@pytest.fixture
def small_pool_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Send even tiny trees to worker processes, so that the pool path is exercised."""
    monkeypatch.setattr(engine, "POOL_MIN_BYTES", 0)


def run_modes(paths: list[str], cache: Path) -> dict[str, LintResult]:
    return {
        "jobs 2": lint_files(paths, jobs=2),
        "cache cold, jobs 2": lint_files(paths, jobs=2, cache_dir=cache),
        "cache warm": lint_files(paths, cache_dir=cache),
        "cache warm, jobs 2": lint_files(paths, jobs=2, cache_dir=cache),
    }


def test_fixtures_lint_the_same_in_every_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_pool_threshold: None
) -> None:
    monkeypatch.chdir(FIXTURES.parent)
    paths = [FIXTURES.name]
    reference = lint_files(paths, jobs=1)
    assert reference.findings, "the fixtures have findings: the comparison means something"
    for mode, result in run_modes(paths, tmp_path / "cache").items():
        assert outcome(result) == outcome(reference), mode
        assert not result.warnings, mode


def test_generated_tree_lints_the_same_in_every_mode_and_after_an_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_pool_threshold: None
) -> None:
    root = generated_tree(tmp_path / "tree")
    monkeypatch.chdir(root)
    reference = lint_files(["gen"], jobs=1)
    codes = {finding.code for finding in reference.findings}
    assert {"SG101", "SG102", "SG401"} <= codes
    assert "SG201" not in codes  # suppressed by its noqa comment
    assert {Path(problem.path).name for problem in reference.problems} == {
        "broken.py",
        "blob.py",
    }
    assert not any("skipped.py" in finding.path for finding in reference.findings)
    cache = tmp_path / "cache"
    for mode, result in run_modes(["gen"], cache).items():
        assert outcome(result) == outcome(reference), mode

    # Two files changed: their facts are recomputed, every other file's come from the cache.
    last = root / "gen" / "ops" / "m11.py"
    last.write_text(last.read_text().replace("total.item()", "total.tolist()"))
    (root / "gen" / "ops" / "m3.py").write_text((root / "gen" / "ops" / "m3.py").read_text() + "\n")
    changed = lint_files(["gen"], jobs=1)
    assert outcome(changed) != outcome(reference)
    # In workers while this process decodes the cached facts of the others:
    assert outcome(lint_files(["gen"], cache_dir=cache, jobs=2)) == outcome(changed)
    last.write_text(last.read_text() + "\n")
    assert outcome(lint_files(["gen"], cache_dir=cache)) == outcome(changed)
    last.write_text(last.read_text().replace("total.tolist()", "total.item()"))
    assert outcome(lint_files(["gen"], cache_dir=cache)) == outcome(reference)  # here


def test_dropping_calls_that_cannot_resolve_changes_no_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = generated_tree(tmp_path / "tree")
    shutil.copytree(FIXTURES, root / "fixtures")
    monkeypatch.chdir(root)
    pruned = lint_files(["gen", "fixtures"])
    monkeypatch.setattr(TreeCallFilter, "__call__", lambda self, callee: True)
    assert outcome(lint_files(["gen", "fixtures"])) == outcome(pruned)


def test_module_names_asked_per_folder_match_module_name(tmp_path: Path) -> None:
    root = generated_tree(tmp_path / "tree")
    shutil.copytree(FIXTURES, root / "fixtures")
    (root / "loose.py").write_text("x = 1\n")
    files, _ = discover([str(root)])
    assert engine._module_names(files) == [module_name(path) for path in files]
    relative, _ = discover([os.path.relpath(root)])
    assert engine._module_names(relative) == [module_name(path) for path in relative]


def test_sources_given_by_the_caller_bypass_the_cache(tmp_path: Path) -> None:
    root = generated_tree(tmp_path / "tree")
    path = str(root / "gen" / "model.py")
    cache = tmp_path / "cache"
    on_disk = lint_files([path], cache_dir=cache)
    assert [finding.code for finding in on_disk.findings] == ["SG401"]
    edited = {path: Path(path).read_text().replace("torch.cuda.synchronize()", "pass")}
    assert lint_files([path], cache_dir=cache, sources=edited).findings == []
    assert outcome(lint_files([path], cache_dir=cache)) == outcome(on_disk)


def test_progress_reports_every_analysed_file(tmp_path: Path) -> None:
    root = generated_tree(tmp_path / "tree", modules=4)
    calls: list[tuple[int, int]] = []
    lint_files([str(root)], cache_dir=tmp_path / "cache", progress=lambda *c: calls.append(c))
    total = len(discover([str(root)])[0])
    assert calls == [(done, total) for done in range(1, total + 1)]
    calls.clear()
    lint_files([str(root)], cache_dir=tmp_path / "cache", progress=lambda *c: calls.append(c))
    assert calls == []  # everything came from the cache: nothing to analyse


def test_worker_processes_return_the_facts_this_process_computes(tmp_path: Path) -> None:
    root = generated_tree(tmp_path / "tree", modules=3)
    files, _ = discover([str(root)])
    units = []
    for path, (module, is_package) in zip(files, engine._module_names(files), strict=True):
        unit = engine._Unit(path, module, is_package)
        unit.data = Path(path).read_bytes()
        units.append(unit)
    rules = [rule_class() for rule_class in engine.all_rules().values()]
    tasks = [(unit.path, unit.data, unit.module, unit.is_package) for unit in units]
    from_workers = list(perfile.pool_map(2, tasks, lambda: None))
    assert len(from_workers) == len(units)
    for unit, (ignored, failed, payload) in zip(units, from_workers, strict=True):
        assert unit.data is not None and payload is not None
        here_ignored, here = perfile.analyse_bytes(unit.data, unit.module, unit.is_package, rules)
        assert (ignored, failed) == (here_ignored, isinstance(here, engine.FileError))
        assert engine.decode_facts(payload) == here


def test_without_worker_processes_the_lint_runs_in_this_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_pool_threshold: None
) -> None:
    root = generated_tree(tmp_path / "tree", modules=3)
    monkeypatch.chdir(root)
    reference = lint_files(["gen"])

    def no_processes(*args: object, **kwargs: object) -> None:
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", no_processes)
    assert outcome(lint_files(["gen"], jobs=2)) == outcome(reference)


@pytest.mark.parametrize("jobs", [1, 2])
def test_warm_runs_after_edits_find_what_uncached_runs_find(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_pool_threshold: None, jobs: int
) -> None:
    """Where unchanged files' calls resolve comes from the cache while interfaces stay;
    edits to bodies, to interfaces and deleted files all give uncached findings."""
    root = generated_tree(tmp_path / "tree")
    monkeypatch.chdir(root)
    cache = tmp_path / "cache"
    ops = root / "gen" / "ops"
    model = root / "gen" / "model.py"

    def replace(path: Path, old: str, new: str) -> None:
        text = path.read_text()
        assert old in text
        path.write_text(text.replace(old, new))

    def add_late_call() -> None:  # an import of a name the module does not define yet
        replace(
            model,
            "from gen.ops import entry\n",
            "from gen.ops import entry\nfrom gen.ops.m2 import late\n",
        )
        replace(model, "        return y\n", "        return y + late(x)\n")

    def move_lines_and_edit_a_body() -> None:
        replace(ops / "m0.py", "total.item()", "total.tolist()")
        (ops / "m0.py").write_text("# a new first line\n" + (ops / "m0.py").read_text())

    edits = {
        "a body, lines moved": move_lines_and_edit_a_body,
        "a call to a missing function": add_late_call,
        "the function added": lambda: replace(
            ops / "m2.py", "def entry(", "def late(x):\n    return x.item()\n\n\ndef entry("
        ),
        "a method renamed": lambda: replace(ops / "m3.py", "def forward(", "def forward_renamed("),
        "a file deleted": lambda: (ops / "m11.py").unlink(),
    }
    before = outcome(lint_files(["gen"], cache_dir=cache, jobs=jobs))
    for step, (name, edit) in enumerate(edits.items()):
        edit()
        # With jobs 2, a second file changed too: two files are analysed in workers
        # while this process decodes the others (guessing that interfaces stayed).
        if jobs == 2:
            (ops / "m7.py").write_text((ops / "m7.py").read_text() + f"# edit {step}\n")
        uncached = outcome(lint_files(["gen"], jobs=1))
        assert uncached != before, f"{name}: the edit should change the findings"
        assert outcome(lint_files(["gen"], cache_dir=cache, jobs=jobs)) == uncached, name
        before = uncached


def test_after_a_body_edit_only_the_edited_file_is_worked_out_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its calls are resolved and its declared hot roots found; the other files' come
    from the cache."""
    root = generated_tree(tmp_path / "tree")
    monkeypatch.chdir(root)
    cache = tmp_path / "cache"
    lint_files(["gen"], cache_dir=cache)
    edited = root / "gen" / "ops" / "m4.py"
    edited.write_text(edited.read_text().replace("x.max().item()", "x.max().tolist()"))
    passes: dict[str, type] = {"resolve_call": CallGraph, "declared_root_reason": Hotness}
    worked_in: dict[str, set[str]] = {name: set() for name in passes}
    for name, paths in worked_in.items():
        original = getattr(passes[name], name)

        def spy(
            self: object,
            fid: tuple[str, str],
            *rest: object,
            paths: set[str] = paths,
            original: Callable[..., object] = original,
        ) -> object:
            paths.add(fid[0])
            return original(self, fid, *rest)

        monkeypatch.setattr(passes[name], name, spy)
    warm = lint_files(["gen"], cache_dir=cache)
    assert worked_in == {name: {os.path.join("gen", "ops", "m4.py")} for name in worked_in}
    monkeypatch.undo()
    monkeypatch.chdir(root)
    assert outcome(warm) == outcome(lint_files(["gen"]))


def test_other_hot_path_settings_are_not_served_cached_roots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = generated_tree(tmp_path / "tree")
    monkeypatch.chdir(root)
    cache = tmp_path / "cache"
    lint_files(["gen"], cache_dir=cache)
    (root / "gen" / "ops" / "m5.py").write_text(
        (root / "gen" / "ops" / "m5.py").read_text() + "\n# an edit\n"
    )
    wider = Settings(hot_functions=(*Settings().hot_functions, "gen.ops.*.entry"))
    uncached = lint_files(["gen"], settings=wider)
    assert outcome(uncached) != outcome(lint_files(["gen"]))  # the glob adds hot roots
    assert outcome(lint_files(["gen"], settings=wider, cache_dir=cache)) == outcome(uncached)


def test_an_edit_that_changes_no_fact_reuses_the_project_phase(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A comment changes no fact: the earlier project phase's findings are reused, and
    the suppression comments are still read from the file as it is now."""
    root = generated_tree(tmp_path / "tree")
    monkeypatch.chdir(root)
    cache = tmp_path / "cache"
    first = lint_files(["gen"], cache_dir=cache)
    model = root / "gen" / "model.py"
    assert any(f.code == "SG401" and f.path.endswith("model.py") for f in first.findings)
    model.write_text(
        model.read_text().replace(
            "torch.cuda.synchronize()\n", "torch.cuda.synchronize()  # noqa: SG401\n"
        )
        + "# a comment\n"
    )
    runs: list[str] = []
    findings = Project.findings

    def counted(self: Project, scope: str = "hot") -> list[Finding]:
        runs.append(scope)
        return findings(self, scope)

    monkeypatch.setattr(Project, "findings", counted)
    warm = lint_files(["gen"], cache_dir=cache)
    assert runs == []  # the project phase did not run again
    assert outcome(warm) == outcome(lint_files(["gen"]))
    assert not any(f.code == "SG401" and f.path.endswith("model.py") for f in warm.findings)
    assert runs == ["hot"]  # the uncached run above did run it


def test_one_large_changed_file_is_analysed_in_a_forked_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_pool_threshold: None
) -> None:
    """While this process decodes the others; after an edit that changes facts, one
    that changes none, and where no child can be forked, the findings are those of
    an uncached run."""
    root = generated_tree(tmp_path / "tree")
    monkeypatch.chdir(root)
    cache = tmp_path / "cache"
    lint_files(["gen"], cache_dir=cache, jobs=2)
    forks: list[int] = []
    real_fork = os.fork

    def counted_fork() -> int:
        child = real_fork()
        if child:
            forks.append(child)
        return child

    monkeypatch.setattr(os, "fork", counted_fork)
    edited = root / "gen" / "ops" / "m4.py"
    edited.write_text("# a new first line\n" + edited.read_text().replace("x.max().item()", "x"))
    assert outcome(lint_files(["gen"], cache_dir=cache, jobs=2)) == outcome(lint_files(["gen"]))
    assert len(forks) == 1
    edited.write_text(edited.read_text() + "# a comment\n")
    assert outcome(lint_files(["gen"], cache_dir=cache, jobs=2)) == outcome(lint_files(["gen"]))
    assert len(forks) == 2

    def no_fork() -> int:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(os, "fork", no_fork)
    edited.write_text(edited.read_text().replace("# a comment\n", "y = 1\n"))
    assert outcome(lint_files(["gen"], cache_dir=cache, jobs=2)) == outcome(lint_files(["gen"]))
