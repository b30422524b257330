"""The chunk-index case: the before/ engine syncs through a helper, after/ is clean."""

from __future__ import annotations

import json
import shutil

from conftest import FIXTURES, REPO, run_cli

BEFORE = "fixtures/chunked/before"
AFTER = "fixtures/chunked/after"


def _json(*args: str) -> list[dict]:
    result = run_cli("check", *args, "--output-format", "json", "--select", "SG101,SG102,SG201")
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_before_reports_each_sync_with_code_line_and_chain() -> None:
    findings = _json(BEFORE)
    got = {(f["code"], f["path"], f["line"]) for f in findings}
    assert got == {
        ("SG102", f"{BEFORE}/engine/kernels/chunk.py", 21),
        ("SG101", f"{BEFORE}/engine/layers/gdn_attn.py", 32),
    }
    hidden = next(f for f in findings if f["code"] == "SG102")
    assert hidden["hot"] == "autograd.Function.forward"
    assert hidden["chain"] == [
        f"{BEFORE}/engine/kernels/chunk.py:21 "
        "engine.kernels.chunk.ChunkGatedDeltaRuleFunction.forward",
        f"{BEFORE}/engine/kernels/chunk.py:11 engine.kernels.chunk.chunk_gated_delta_rule_fwd",
        f"{BEFORE}/engine/kernels/index.py:14 engine.kernels.index.prepare_chunk_indices",
    ]
    source = (REPO / BEFORE / "engine/kernels/index.py").read_text().splitlines()
    assert ".tolist()" in source[14 - 1]
    builder = next(f for f in findings if f["code"] == "SG101")
    assert builder["hot"] == "hot-functions: *MetadataBuilder.build"
    assert builder["severity"] == "error"


def test_after_reports_nothing() -> None:
    assert _json(AFTER) == []


def test_same_helper_same_builder_only_the_argument_placement_decides(tmp_path) -> None:
    tree = tmp_path / "before"
    shutil.copytree(FIXTURES / "chunked/before", tree)
    builder = tree / "engine/layers/gdn_attn.py"
    text = builder.read_text()
    anchor = "        has_initial_state = common_attn_metadata.seq_lens > query_lens\n"
    assert anchor in text
    extra = (
        "        host_rows = prepare_chunk_indices(common_attn_metadata.query_start_loc_cpu, 64)\n"
        "        device_rows = prepare_chunk_indices(query_start_loc, 64)\n"
    )
    text = text.replace(anchor, anchor + extra)
    text = "from ..kernels.index import prepare_chunk_indices\n" + text
    builder.write_text(text)
    lines = builder.read_text().splitlines()
    host_line = next(n for n, line in enumerate(lines, 1) if "host_rows =" in line)
    device_line = next(n for n, line in enumerate(lines, 1) if "device_rows =" in line)
    result = run_cli(
        "check",
        str(tree / "engine/layers"),
        str(tree / "engine/kernels"),
        "--output-format",
        "json",
        "--select",
        "SG102",
    )
    findings = json.loads(result.stdout)
    builder_lines = {f["line"] for f in findings if f["path"].endswith("gdn_attn.py")}
    assert device_line in builder_lines
    assert host_line not in builder_lines
