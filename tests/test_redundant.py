"""Redundant per-step work (SG5xx): the fixture pair, the project-level hook, the single-site
rules beyond their embedded examples, and host data staying clean of shape findings."""

from __future__ import annotations

import ast
import shutil
from collections.abc import Iterable
from pathlib import Path

import pytest

from conftest import FIXTURES
from syncguard.config import Settings, load
from syncguard.engine import analyze_source, lint_files
from syncguard.facts import FileFacts
from syncguard.project import Finding, Project, SourceFile
from syncguard.rule import Context, ProjectReport, ProjectView, Rule
from syncguard.testing import lint_snippet, lint_tree

REDUNDANT = FIXTURES / "redundant"
BUILDERS = {
    "engine/attention/flash_sparse.py": "FlashSparseMetadataBuilder.build",
    "engine/attention/triton_sparse.py": "TritonSparseMetadataBuilder.build",
    "engine/attention/indexer.py": "IndexerMetadataBuilder.build",
}


def _lint_fixture(folder: Path, monkeypatch: pytest.MonkeyPatch) -> list[Finding]:
    monkeypatch.chdir(folder)
    result = lint_files(["engine"], settings=load(Path("pyproject.toml")))
    assert not result.problems
    return result.findings


def _codes(findings: Iterable[Finding], prefix: str = "SG5") -> list[tuple[str, str, int]]:
    return [(f.code, f.path, f.span.line) for f in findings if f.code.startswith(prefix)]


# ------------------------------------------------------------------ fixture pair


def test_before_each_builder_gets_sg501_naming_the_other_two(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    findings = [f for f in _lint_fixture(REDUNDANT / "before", monkeypatch) if f.code == "SG501"]
    assert {f.path for f in findings} == set(BUILDERS)
    assert len(findings) == 3
    for finding in findings:
        assert finding.message.startswith("the token-to-request mapping of `query_start_loc_cpu`")
        assert "done 3 times" in finding.message
        for path, function in BUILDERS.items():
            mentioned = f"{path}:" in finding.message and f"({function})" in finding.message
            assert mentioned == (path != finding.path), (path, finding.message)
        assert finding.severity == "error"
        assert finding.hot == "hot-functions: *MetadataBuilder.build"
        assert "StepMetadata.token_to_req_indices" in finding.suggestion
        assert (
            finding.chain[-1].function
            == f"engine.attention.{_module(finding.path)}." + (BUILDERS[finding.path])
        )


def _module(path: str) -> str:
    return Path(path).stem


def test_before_reports_per_step_staging_without_double_reporting_a_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    findings = _lint_fixture(REDUNDANT / "before", monkeypatch)
    staging = _codes(findings, "SG502")
    assert staging == [
        ("SG502", "engine/attention/flash_sparse.py", 34),  # np_to_pinned_tensor helper
        ("SG502", "engine/attention/indexer.py", 31),  # torch.empty(..., pin_memory=True)
    ]
    pinned = {(f.path, f.span.line) for f in findings if f.code == "SG306"}
    assert ("engine/attention/triton_sparse.py", 29) in pinned  # .pin_memory(): SG306's
    assert not pinned & {(path, line) for _, path, line in staging}


def test_after_reports_no_redundant_work(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _codes(_lint_fixture(REDUNDANT / "after", monkeypatch)) == []


def test_after_is_clean_even_when_the_shared_builder_is_hot(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(REDUNDANT / "after")
    settings = load(Path("pyproject.toml"))
    settings = settings.with_overrides(
        hot_functions=(*settings.hot_functions, "*CommonAttentionMetadata.*")
    )
    assert _codes(lint_files(["engine"], settings=settings).findings) == []


# ------------------------------------------------------------ hook behaviour


def _copy_before(tmp_path: Path) -> Path:
    folder = tmp_path / "before"
    shutil.copytree(REDUNDANT / "before", folder)
    return folder


def _append_comment(path: Path, line: int, comment: str) -> None:
    lines = path.read_text().splitlines()
    lines[line - 1] += f"  {comment}"
    path.write_text("\n".join(lines) + "\n")


def test_a_suppressed_sg501_site_hides_only_that_site(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _copy_before(tmp_path)
    _append_comment(folder / "engine/attention/triton_sparse.py", 29, "# noqa: SG501")
    findings = [f for f in _lint_fixture(folder, monkeypatch) if f.code == "SG501"]
    assert {f.path for f in findings} == {
        "engine/attention/flash_sparse.py",
        "engine/attention/indexer.py",
    }


def test_sg501_is_also_suppressible_where_the_mapping_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _copy_before(tmp_path)
    source = folder / "engine/attention/flash_sparse.py"
    build_line = next(
        number
        for number, text in enumerate(source.read_text().splitlines(), 1)
        if "req_id_per_token = np.repeat(" in text
    )
    _append_comment(source, build_line, "# syncguard: ignore[SG501]")
    findings = [f for f in _lint_fixture(folder, monkeypatch) if f.code == "SG501"]
    assert "engine/attention/flash_sparse.py" not in {f.path for f in findings}
    assert len(findings) == 2


def test_select_ignore_and_scope_apply_to_project_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REDUNDANT / "before")
    settings = load(Path("pyproject.toml"))
    ignored = lint_files(["engine"], settings=settings.with_overrides(ignore=("SG501",)))
    assert not [f for f in ignored.findings if f.code == "SG501"]
    per_file = settings.with_overrides(per_file_ignores=(("*indexer.py", ("SG5",)),))
    remaining = lint_files(["engine"], settings=per_file).findings
    assert {f.path for f in remaining if f.code == "SG501"} == {
        "engine/attention/flash_sparse.py",
        "engine/attention/triton_sparse.py",
    }
    # Not hot at all (no builder pattern): nothing by default, warnings in scope "all".
    cold = Settings(hot_functions=())
    assert not [f for f in lint_files(["engine"], settings=cold).findings if f.code == "SG501"]
    everywhere = lint_files(["engine"], settings=cold, scope="all").findings
    warnings = [f for f in everywhere if f.code == "SG501"]
    assert len(warnings) == 3
    assert {f.severity for f in warnings} == {"warning"}
    assert all(f.hot is None for f in warnings)


_TWO_BUILDERS = {
    "engine/__init__.py": "",
    "engine/{first}.py": """
        import numpy as np
        import torch

        class FirstMetadataBuilder:
            def build(self, meta):  # syncguard: hot
                ids = np.repeat(np.arange(meta.num_reqs), np.diff(meta.query_start_loc_cpu))
                self.ids.copy_(torch.from_numpy(ids), non_blocking=True)
    """,
    "engine/{second}.py": """
        import torch

        class SecondMetadataBuilder:
            def build(self, meta):  # syncguard: hot
                qsl = meta.query_start_loc_cpu
                ids = torch.repeat_interleave(torch.arange(meta.num_reqs), qsl[1:] - qsl[:-1])
                self.ids.copy_(ids, non_blocking=True)
    """,
}


def _two_builders(first: str, second: str) -> list[Finding]:
    files = {path.format(first=first, second=second): text for path, text in _TWO_BUILDERS.items()}
    return [f for f in lint_tree(files).findings if f.code == "SG501"]


def test_backends_of_different_platforms_are_not_duplicates() -> None:
    assert len(_two_builders("flash_attn", "triton_attn")) == 2
    assert len(_two_builders("flash_attn", "rocm_aiter_attn")) == 2  # shared code runs on rocm
    assert _two_builders("xpu_attn", "rocm_aiter_attn") == []


_SEARCHSORTED_BUILDERS = """
    import torch

    class FirstMetadataBuilder:
        def build(self, meta):  # syncguard: hot
            qsl = meta.OFFSETS
            tokens = torch.arange(8, DEVICE)
            ids = torch.searchsorted(qsl[1:], tokens, right=True)
            self.ids.copy_(ids)

    class SecondMetadataBuilder:
        def build(self, meta):  # syncguard: hot
            qsl = meta.OFFSETS
            tokens = torch.arange(8, DEVICE)
            ids = torch.searchsorted(qsl[1:], tokens, right=True)
            self.ids.copy_(ids)
"""


@pytest.mark.parametrize(
    ("offsets", "device", "reported"),
    [
        ("query_start_loc_cpu", "device='cpu'", 2),  # host work, copied up twice
        ("query_start_loc", "device='cuda'", 0),  # device work: no host-to-device copy
    ],
)
def test_only_host_built_mappings_count(offsets: str, device: str, reported: int) -> None:
    source = _SEARCHSORTED_BUILDERS.replace("OFFSETS", offsets).replace("DEVICE", device)
    findings = lint_tree({"a.py": source}).findings
    assert len([f for f in findings if f.code == "SG501"]) == reported


def test_records_carry_the_function_they_come_from() -> None:
    source = inspect_source(_TWO_BUILDERS["engine/{first}.py"])
    facts = analyze_source(source, "engine.first", False, [_rule("SG501")])
    assert isinstance(facts, FileFacts)
    [(function, item)] = facts.records["SG501"]
    assert function == "FirstMetadataBuilder.build"
    assert getattr(item, "description", "") == (
        "the token-to-request mapping of `query_start_loc_cpu`"
    )


def inspect_source(text: str) -> str:
    import inspect

    return inspect.cleandoc(text) + "\n"


def _rule(code: str) -> Rule:
    from syncguard.rules import all_rules

    return all_rules()[code]()


class _CountCalls(Rule):
    """A third-party project rule: a function calling `expensive()` in two hot places."""

    code = "SG599"
    name = "count-calls"
    message = "expensive() is called in several hot functions"
    blocks_host = False

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "expensive":
            span = ctx.span(node)
            ctx.record((span.line, span.column, span.end_line, span.end_column))

    def check_project(self, project: ProjectView) -> Iterable[ProjectReport]:
        from syncguard.facts import Span

        hot = [r for r in project.records(self.code) if project.hot(r.path, r.function)]
        for record in project.records(self.code):
            assert isinstance(record.item, tuple)
            span = Span(*record.item)
            yield ProjectReport(
                record.path,
                record.function,
                span,
                (span.line, span.end_line),
                f"{len(hot)} hot calls; {project.qualified(record.path, record.function)}",
                "call it once",
            )


def test_the_engine_turns_any_rule_reports_into_findings() -> None:
    source = inspect_source(
        """
        from torch import nn

        def expensive():
            return 1

        def helper():
            return expensive()

        class Model(nn.Module):
            def forward(self, x):
                return x * expensive() + helper()

        def offline():
            return expensive()
        """
    )
    rule = _CountCalls()
    facts = analyze_source(source, "model", False, [rule])
    assert isinstance(facts, FileFacts)
    project = Project([SourceFile("model.py", ".", facts)], rules=[rule])
    hot = sorted((f.span.line, f.severity, f.message) for f in project.findings("hot"))
    assert hot == [
        (7, "error", "2 hot calls; model.helper"),
        (11, "error", "2 hot calls; model.Model.forward"),
    ]
    helper = next(f for f in project.findings("hot") if f.span.line == 7)
    assert [step.function for step in helper.chain] == ["model.Model.forward", "model.helper"]
    everywhere = project.findings("all")
    assert ("warning", 14) in {(f.severity, f.span.line) for f in everywhere}


# ------------------------------------------------------------ single-site rules


def _lines(code: str, rule: str) -> list[int]:
    result = lint_snippet(code, select=(rule,))
    assert not result.problems
    return [f.span.line for f in result.findings if f.code == rule]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (  # a pinned helper reached through a local name and a slice
            """
            import numpy as np
            from engine.utils import make_pinned_buffer

            class Builder:
                def build(self, lens_np):  # syncguard: hot
                    stage = make_pinned_buffer(len(lens_np))
                    stage[: len(lens_np)] = np.cumsum(lens_np)
                    view = stage[: len(lens_np)]
                    self.offsets[: len(lens_np)].copy_(view, non_blocking=True)
            """,
            [9],
        ),
        (  # pinned through a platform flag still allocates per call
            """
            import torch

            def step(values_np, device, pin):  # syncguard: hot
                stage = torch.zeros(len(values_np), pin_memory=pin)
                stage.numpy()[:] = values_np
                return stage.cuda()
            """,
            [6],
        ),
        (  # pin_memory=False is no pinned stage; a persistent stage is the fix
            """
            import torch

            class Builder:
                def __init__(self):
                    self.stage = torch.empty(4096, dtype=torch.int32, pin_memory=True)

                def build(self, ids_np, device):  # syncguard: hot
                    plain = torch.empty(len(ids_np), pin_memory=False)
                    self.stage[: len(ids_np)].copy_(plain)
                    return self.stage[: len(ids_np)].to(device, non_blocking=True)
            """,
            [],
        ),
        (  # per-step staging in a loop: no "syncs once per iteration" wording
            """
            import torch

            def step(chunks_np, device):  # syncguard: hot
                out = []
                for chunk in chunks_np:
                    stage = torch.empty(len(chunk), pin_memory=True)
                    stage.numpy()[:] = chunk
                    out.append(stage.to(device, non_blocking=True))
                return out
            """,
            [8],
        ),
        (  # the pinned helper in cold code (__init__) is set-up, not per step
            """
            from engine.utils import np_to_pinned_tensor

            class Builder:
                def __init__(self, table_np, device):
                    self.table = np_to_pinned_tensor(table_np).to(device, non_blocking=True)
            """,
            [],
        ),
    ],
)
def test_per_step_staging(code: str, expected: list[int]) -> None:
    assert _lines(code, "SG502") == expected


def test_per_step_staging_message_says_no_sync() -> None:
    result = lint_snippet(
        """
        import torch

        def step(chunks_np, device):  # syncguard: hot
            for chunk in chunks_np:
                stage = torch.empty(len(chunk), pin_memory=True)
                stage.numpy()[:] = chunk
                yield stage.to(device, non_blocking=True)
        """,
        select=("SG502",),
    )
    [finding] = result.findings
    assert "syncs" not in finding.message
    assert "persistent pinned stage" in finding.suggestion


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (  # invariant in the inner loop only: reported once, for the inner loop
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, tables_cpu):
                    for group, table_cpu in enumerate(tables_cpu):
                        for layer in self.layers:
                            table = table_cpu.to(x.device, non_blocking=True)
                            x = layer(x, table)
                    return x
            """,
            [8],
        ),
        (  # written through `out=`: it changes every iteration
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, lens_cpu, scratch_cpu):
                    for layer in self.layers:
                        torch.cumsum(lens_cpu, 0, out=scratch_cpu)
                        x = layer(x, scratch_cpu.to(x.device))
                    return x
            """,
            [],
        ),
        (  # an in-place update of the source in the loop
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, counts_cpu):
                    for layer in self.layers:
                        counts_cpu.add_(1)
                        x = layer(x, counts_cpu.to(x.device))
                    return x
            """,
            [],
        ),
        (  # device data is no host-to-device copy
            """
            import torch
            from torch import nn

            class Model(nn.Module):
                def forward(self, x, mask):
                    for layer in self.layers:
                        x = layer(x, mask.to(x.device))
                    return x
            """,
            [],
        ),
        (  # a scalar ceiling is no index build
            """
            import math
            from torch import nn

            class Model(nn.Module):
                def forward(self, x):
                    for layer in self.layers:
                        blocks = math.ceil(self.size / self.block)
                        x = layer(x, blocks)
                    return x
            """,
            [],
        ),
    ],
)
def test_loop_invariant_device_work(code: str, expected: list[int]) -> None:
    assert _lines(code, "SG503") == expected


# ------------------------------------------------------------ host data stays clean


def test_repeat_interleave_on_host_data_is_not_a_shape_sync() -> None:
    host = """
        import torch
        from torch import nn

        class Model(nn.Module):
            def forward(self, x, query_start_loc_cpu: torch.Tensor):
                lens = query_start_loc_cpu[1:] - query_start_loc_cpu[:-1]
                ids = torch.repeat_interleave(torch.arange(lens.shape[0]), lens)
                return x[ids.to(x.device, non_blocking=True)]
        """
    assert [f.code for f in lint_snippet(host, select=("SG2",)).findings] == []
    device = host.replace("query_start_loc_cpu", "query_start_loc")
    assert [f.code for f in lint_snippet(device, select=("SG2",)).findings] == ["SG205"]
