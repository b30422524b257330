"""One file's bad facts never stop the project phase for the others: that file gets
a located internal error, the others their findings."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import run_cli
from syncguard.cache import Cache, content_key, decode_facts, encode_facts
from syncguard.discovery import module_name
from syncguard.engine import build_project, lint_files
from syncguard.facts import FileFacts

MODEL = (
    "import torch\nfrom pkg.util import read\n\n\n"
    "class Model(torch.nn.Module):\n    def forward(self, x):\n        return read(x)\n"
)
UTIL = "def read(x):\n    return x.tolist()\n"
OTHER = (
    "import torch\n\n\nclass Head(torch.nn.Module):\n"
    "    def forward(self, x):\n        return x.sum().item()\n"
)


@pytest.fixture
def tree(package_tree: Callable[[dict[str, str]], Path]) -> Path:
    return package_tree({"model": MODEL, "util": UTIL, "other": OTHER})


def spoil_cached_facts(folder: Path, path: str) -> None:
    """Give the classes of ``path``'s cached facts bases no pass expects (as a bug in the
    per-file phase could)."""
    cache = Cache(folder)
    key = content_key(Path(path).read_bytes(), *module_name(path))
    entry = cache.entry(path, key)
    assert entry is not None
    facts = decode_facts(entry[2])
    assert isinstance(facts, FileFacts)
    for found in facts.classes.values():
        found.bases = (5,)  # type: ignore[assignment]
    cache.store(path, key, False, False, encode_facts(facts), None)
    cache.save([path])


def test_bad_facts_of_one_file_give_a_located_error_and_the_others_report(tree: Path) -> None:
    cache = tree / "cache"
    before = lint_files(["pkg"], cache_dir=cache)
    assert {f.path for f in before.findings} == {"pkg/model.py", "pkg/other.py"}
    spoil_cached_facts(cache, "pkg/model.py")
    after = lint_files(["pkg"], cache_dir=cache)
    (problem,) = after.problems
    assert (problem.path, problem.line, problem.column) == ("pkg/model.py", 1, 1)
    assert problem.message.startswith("internal error in the project phase: AttributeError")
    assert after.findings == [f for f in before.findings if f.path == "pkg/other.py"]
    project, result = build_project(["pkg"], cache_dir=cache, scope="hot")  # as --explain
    assert [p.path for p in result.problems] == ["pkg/model.py"]
    assert "pkg/other.py" in project.by_path and "pkg/model.py" not in project.by_path
    run = run_cli("check", "pkg", "--cache-dir", str(cache), "--output-format", "concise", cwd=tree)
    assert run.returncode == 2 and "Traceback" not in run.stdout + run.stderr
    assert "pkg/model.py:1:1" in run.stdout + run.stderr and "pkg/other.py:6" in run.stdout
