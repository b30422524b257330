"""``--explain PATH:LINE``: why a line is hot, where its data lives, which callers count;
and the presets in force, with why."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import run_cli
from syncguard.engine import build_project
from syncguard.explain import explain
from syncguard.testing import write_tree

TREE = {
    "engine/__init__.py": "",
    "engine/ops.py": """
        import torch

        def chunk_counts(cu_seqlens, metadata=None):
            lens = cu_seqlens[1:] - cu_seqlens[:-1]
            if metadata is not None:
                return lens.tolist()
            return None
        """,
    "engine/model.py": """
        import transformers
        from torch import nn

        from engine.ops import chunk_counts

        class Attention(nn.Module):
            def forward(self, x, cu_seqlens):
                return x, chunk_counts(cu_seqlens, metadata=object())

        class Loop:
            def run(self, batches, model):
                for batch in batches:
                    loss = model(batch)
                    print(loss.item())
                    chunk_counts(batch)

        def offline_report(cu_seqlens):
            return chunk_counts(cu_seqlens, metadata=1)
        """,
}


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_tree(tmp_path, TREE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_helper_sync_says_its_root_chain_data_and_callers(tree: Path) -> None:
    project, _ = build_project(["engine"])
    text = explain(project, "engine/ops.py", 6).render()
    assert "engine.ops.chunk_counts is hot: called from engine.model.Attention.forward" in text
    assert "step: engine/model.py:8 engine.model.Attention.forward" in text
    assert "`lens` = `cu_seqlens[1:] - cu_seqlens[:-1]` (line 4)" in text
    assert "`cu_seqlens` is a parameter" in text
    # The forward passes a computed metadata: it is kept; the step loop passes none, which
    # skips the branch of the sync; the offline report never runs per step.
    assert "engine.model.Attention.forward (line 8), passes `metadata` = given: considered" in text
    assert (
        "engine.model.Loop.run (line 15), passes `metadata` = none: dropped, the sync runs "
        "only when metadata is not None"
    ) in text
    assert "engine.model.offline_report (line 18): not considered" in text
    assert "SG102 `chunk_counts()` syncs" in text


def test_a_step_loop_says_why_its_body_is_hot(tree: Path) -> None:
    project, _ = build_project(["engine"])
    here = explain(project, "engine/model.py", 14)
    assert here.hot == [
        "a step loop of engine.model.Loop.run (lines 12-15: model): everything its body "
        "calls runs every step"
    ]
    assert [finding.code for finding in here.findings] == ["SG101"]


def test_the_presets_in_force_say_why(tree: Path) -> None:
    project, _ = build_project(["engine"])
    here = explain(project, "engine/model.py", 8)
    assert here.presets == [
        "transformers (transformers 5.24.0): the linted tree imports transformers"
    ]


def test_the_command_line_explains_a_line_and_refuses_a_bad_location(tree: Path) -> None:
    done = run_cli("check", "engine", "--no-cache", "--explain", "engine/ops.py:6", cwd=tree)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("engine/ops.py:6 in engine.ops.chunk_counts")
    absolute = os.path.join(tree, "engine", "ops.py")
    again = run_cli("check", "engine", "--no-cache", "--explain", f"{absolute}:6", cwd=tree)
    assert again.stdout == done.stdout
    bad = run_cli("check", "engine", "--no-cache", "--explain", "engine/ops.py", cwd=tree)
    assert bad.returncode == 2 and "PATH:LINE" in bad.stderr
    elsewhere = run_cli("check", "engine", "--no-cache", "--explain", "nope.py:1", cwd=tree)
    assert elsewhere.returncode == 2 and "not among the linted files" in elsewhere.stderr


def test_show_settings_lists_the_presets_in_force(tree: Path) -> None:
    done = run_cli("check", "engine", "--show-settings", cwd=tree)
    assert done.returncode == 0, done.stderr
    assert "# Presets in force" in done.stdout
    assert "transformers (transformers 5.24.0): the linted tree imports transformers" in done.stdout


def test_a_sync_on_a_parameter_names_the_call_sites_that_report_it(tree: Path) -> None:
    project, _ = build_project(["engine"])
    text = explain(project, "engine/ops.py", 6).render()
    here, _, below = text.partition("reported at the hot call sites that reach it:")
    assert "reported here:\n  nothing" in here
    assert "engine/model.py:8: SG102" in below
    at_the_site = explain(project, "engine/model.py", 8).render()
    assert "reported here:\n  SG102" in at_the_site
    assert "reported at the hot call sites" not in at_the_site
