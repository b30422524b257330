"""Findings carried over edits that only move lines (syncguard.moves), instead of a
project phase run again: the same findings as a run without the cache."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from syncguard import project as project_module
from syncguard.engine import lint_files
from syncguard.facts import Span, Step
from syncguard.findings import Finding
from syncguard.moves import carry, line_map

MODEL = (
    "import torch\nfrom pkg.util import read, total\n\n\n"
    "class Model(torch.nn.Module):\n"
    "    def forward(self, x):\n"
    "        n = read(x)\n"
    "        if x.sum().item() > n:\n"
    "            return total(x)\n"
    "        return x\n"
)
UTIL = (
    "def read(x):\n    return x.tolist()\n\n\n"
    "def total(x):\n    y = x * 2\n    return y.sum().item()\n"
)


@pytest.fixture
def tree(package_tree: Callable[[dict[str, str]], Path]) -> Path:
    return package_tree({"model": MODEL, "util": UTIL})


def phase_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the project phase's runs from now on."""
    runs: list[int] = []
    findings = project_module.Project.findings

    def counted(self: project_module.Project, scope: str = "hot") -> list[Finding]:
        runs.append(1)
        return findings(self, scope)

    monkeypatch.setattr(project_module.Project, "findings", counted)
    return runs


def same_as_without_cache(cache: Path) -> list[Finding]:
    cached = lint_files(["pkg"], cache_dir=cache).findings
    assert cached == lint_files(["pkg"]).findings
    return cached


def test_inserted_lines_move_the_findings_without_a_project_phase(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tree / "cache"
    before = same_as_without_cache(cache)
    assert {f.path for f in before} == {"pkg/model.py"} and len(before) >= 2
    assert any(step.path == "pkg/util.py" for f in before for step in f.chain)
    runs = phase_runs(monkeypatch)
    util = tree / "pkg" / "util.py"
    util.write_text(
        "# a comment\n\n" + UTIL.replace("    y = x * 2\n", "    # twice\n    y = x * 2\n")
    )
    model = tree / "pkg" / "model.py"
    model.write_text('"""Docs."""\n' + MODEL)
    after = lint_files(["pkg"], cache_dir=cache).findings
    assert runs == []  # carried over
    assert [f.span.line for f in after] == [f.span.line + 1 for f in before]
    moved_steps = {step.line for f in after for step in f.chain if step.path == "pkg/util.py"}
    assert moved_steps and moved_steps.isdisjoint(
        {step.line for f in before for step in f.chain if step.path == "pkg/util.py"}
    )
    assert after == lint_files(["pkg"]).findings  # the project phase, without the cache
    runs.clear()
    assert same_as_without_cache(cache) == after and len(runs) == 1  # the second: no cache


def test_reordered_code_runs_the_project_phase_again(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tree / "cache"
    same_as_without_cache(cache)
    runs = phase_runs(monkeypatch)
    read, total = UTIL.split("\n\n\n")
    (tree / "pkg" / "util.py").write_text(total + "\n\n" + read + "\n")  # order changes
    after = lint_files(["pkg"], cache_dir=cache).findings
    assert runs == [1]
    assert after == lint_files(["pkg"]).findings


def test_a_line_map_keeps_order_and_is_a_function() -> None:
    assert line_map([1, 5, 5, 9], [3, 7, 7, 12]) == {1: 3, 5: 7, 9: 12}
    assert line_map([1, 5], [3, 2]) is None  # the order of lines changed
    assert line_map([5, 5], [7, 8]) is None  # one old line, two new ones
    assert line_map([1, 2], [1]) is None


def test_a_finding_on_a_line_no_fact_had_is_not_carried() -> None:
    step = Step("pkg/a.py", 4, "pkg.a.f")
    finding = Finding(
        "SG101", "`f()` syncs (called at pkg/a.py:4)", "pkg/b.py", Span(2, 1, 2, 9), "error",
        "forward", (step,), "", None, (("pkg/a.py", 4, 4),),
    )  # fmt: skip
    (moved,) = carry([finding], {"pkg/a.py": {4: 6}}) or []
    assert moved.chain[0].line == 6 and moved.suppressible_at == (("pkg/a.py", 6, 6),)
    assert moved.message == "`f()` syncs (called at pkg/a.py:6)" and moved.span == finding.span
    assert carry([finding], {"pkg/a.py": {3: 6}}) is None
    assert carry([finding], {"pkg/b.py": {1: 1}}) is None  # its own line 2 is unknown
