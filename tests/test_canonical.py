"""Canonical forms: equivalent spellings of an index build meet, different data does not."""

from __future__ import annotations

import ast
import inspect

import pytest

from syncguard.canonical import Form, canonical_form, canonical_term

_PRELUDE = """
import numpy as np
import torch
import torch.nn.functional as F
import triton
from numpy import repeat
"""


class _Names:
    """Imports and straight-line assignments of a snippet (what the analysis tracks)."""

    def __init__(self, tree: ast.Module) -> None:
        self.imports: dict[str, str] = {}
        self.assignments: dict[str, ast.expr] = {}
        for statement in tree.body:
            if isinstance(statement, ast.Import):
                for alias in statement.names:
                    self.imports[alias.asname or alias.name] = alias.name
            elif isinstance(statement, ast.ImportFrom):
                for alias in statement.names:
                    self.imports[alias.asname or alias.name] = f"{statement.module}.{alias.name}"
            elif isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name):
                self.assignments[statement.targets[0].id] = statement.value

    def qualified_name(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.imports.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.qualified_name(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def assigned(self, name: str) -> ast.expr | None:
        return self.assignments.get(name)


def form_of(code: str) -> Form | None:
    """The form of the value assigned to ``result`` in ``code``."""
    tree = ast.parse(_PRELUDE + inspect.cleandoc(code))
    names = _Names(tree)
    return canonical_form(names.assignments["result"], names)


def key(code: str) -> tuple:
    form = form_of(code)
    assert form is not None, f"not recognised: {code}"
    return form.term


TOKEN_TO_REQUEST = [
    "result = np.repeat(np.arange(n), np.diff(meta.query_start_loc_cpu))",
    "result = torch.repeat_interleave(torch.arange(num_reqs), qsl[1:] - qsl[:-1])\n"
    "qsl = meta.query_start_loc_cpu",
    """
    starts = np.asarray(common_attn_metadata.query_start_loc_cpu, dtype=np.int32)
    seg_lengths = np.diff(starts)
    result = np.repeat(np.arange(seg_lengths.shape[0], dtype=np.int32), seg_lengths)
    """,
    """
    qsl = self.query_start_loc_cpu
    lens = qsl[1:] - qsl[:-1]
    result = torch.repeat_interleave(torch.arange(len(lens), device="cpu"), lens)
    """,
    "result = torch.arange(num_reqs, dtype=torch.int32).repeat_interleave("
    "torch.diff(query_start_loc_cpu))",
    "result = repeat(self.arange_np[:num_reqs], np.diff(query_start_loc_cpu[: num_reqs + 1]))",
    "result = np.arange(n).repeat(query_start_loc_cpu.diff())",
    "result = torch.searchsorted(query_start_loc_cpu[1:], torch.arange(t), right=True)",
    "result = torch.searchsorted(query_start_loc_cpu, torch.arange(t), right=True) - 1",
    "result = np.searchsorted(np.cumsum(np.diff(query_start_loc_cpu)), np.arange(t), side='right')",
    """
    lengths = query_start_loc_cpu[1 : n + 1] - query_start_loc_cpu[:n]
    ids = np.repeat(np.arange(n), lengths)
    result = torch.from_numpy(ids).pin_memory()
    """,
]


def test_token_to_request_spellings_share_one_key() -> None:
    keys = {key(code) for code in TOKEN_TO_REQUEST}
    assert len(keys) == 1
    form = form_of(TOKEN_TO_REQUEST[0])
    assert form is not None
    assert form.kind == "token-to-request mapping"
    assert form.sources == ("query_start_loc_cpu",)
    assert form.describe() == "the token-to-request mapping of `query_start_loc_cpu`"


@pytest.mark.parametrize(
    "other",
    [
        "result = np.repeat(np.arange(n), np.diff(meta.seq_start_loc_cpu))",  # other data
        "result = np.repeat(np.arange(n), meta.query_start_loc_cpu)",  # offsets used as lengths
        "result = np.repeat(np.arange(n), np.diff(query_start_loc_cpu[num_decodes:]))",
        "result = np.diff(meta.query_start_loc_cpu)",  # lengths, not the mapping
    ],
)
def test_different_data_or_kind_gets_a_different_key(other: str) -> None:
    assert key(other) != key(TOKEN_TO_REQUEST[0])


@pytest.mark.parametrize(
    ("kind", "spellings"),
    [
        (
            "per-sequence lengths",
            [
                "result = np.diff(query_start_loc_cpu)",
                "result = query_start_loc_cpu[1:] - query_start_loc_cpu[:-1]",
                "result = torch.diff(meta.query_start_loc_cpu.to(torch.int64))",
                "result = query_start_loc_cpu.diff()",
            ],
        ),
        (
            "cumulative offsets",
            [
                "result = F.pad(torch.cumsum(seq_lens_cpu, 0), (1, 0))",
                "result = np.concatenate([[0], np.cumsum(seq_lens_cpu)])",
                "result = torch.cat([seq_lens_cpu.new_tensor([0]), seq_lens_cpu]).cumsum(-1)",
                "result = torch.cat([torch.zeros(1, dtype=torch.int32), seq_lens_cpu.cumsum(0)])",
            ],
        ),
        (
            "position within each request",
            [
                """
                qsl = query_start_loc_cpu
                result = torch.arange(total) - torch.repeat_interleave(qsl[:-1], qsl[1:] - qsl[:-1])
                """,
                """
                lens = np.diff(query_start_loc_cpu)
                cu = np.cumsum(lens)
                result = self.arange_np[:total] - np.repeat(cu - lens, lens)
                """,
                """
                lens = np.diff(query_start_loc_cpu)
                req = np.repeat(np.arange(n), lens)
                result = np.arange(total) - query_start_loc_cpu[req]
                """,
                "result = torch.cat([torch.arange(n) for n in np.diff(query_start_loc_cpu)])",
            ],
        ),
        (
            "chunk counts per sequence",
            [
                "result = triton.cdiv(np.diff(cu_seqlens_cpu), chunk_size)",
                "result = -(-np.diff(cu_seqlens_cpu) // chunk_size)",
                "result = (np.diff(cu_seqlens_cpu) + chunk_size - 1) // chunk_size",
                "result = torch.ceil(torch.diff(cu_seqlens_cpu) / chunk_size).long()",
            ],
        ),
        (
            "chunk offsets",
            [
                "result = torch.cat([cu.new_tensor([0]), triton.cdiv(cu[1:] - cu[:-1], 64)])"
                ".cumsum(-1)\ncu = cu_seqlens_cpu",
                "result = np.concatenate([[0], np.cumsum((np.diff(cu_seqlens_cpu) + 63) // 64)])",
            ],
        ),
        (
            "chunk-to-sequence index",
            [
                """
                counts = triton.cdiv(np.diff(cu_seqlens_cpu), 64)
                result = np.repeat(np.arange(len(counts)), counts)
                """,
                """
                counts = -(-(cu_seqlens_cpu[1:] - cu_seqlens_cpu[:-1]) // 64)
                result = torch.repeat_interleave(torch.arange(counts.shape[0]), counts)
                """,
            ],
        ),
        (
            "chunk indices",
            [
                # the flash-linear-attention spelling and a vectorised one
                """
                counts = triton.cdiv(cu_seqlens_cpu[1:] - cu_seqlens_cpu[:-1], chunk_size)
                indices = torch.cat([torch.arange(n) for n in counts.tolist()])
                result = torch.stack([indices.eq(0).cumsum(0) - 1, indices], 1).to(cu_seqlens_cpu)
                """,
                """
                counts = triton.cdiv(np.diff(cu_seqlens_cpu), chunk_size)
                seq_ids = torch.repeat_interleave(torch.arange(len(counts)), counts)
                starts = torch.cumsum(counts, 0) - counts
                chunk_ids = torch.arange(len(seq_ids)) - starts[seq_ids]
                result = torch.stack([seq_ids, chunk_ids], 1)
                """,
            ],
        ),
    ],
)
def test_each_covered_kind(kind: str, spellings: list[str]) -> None:
    forms = [form_of(code) for code in spellings]
    assert all(form is not None and form.kind == kind for form in forms), [
        form and form.kind for form in forms
    ]
    assert len({form.term for form in forms if form is not None}) == 1


def test_chunk_size_is_part_of_the_key() -> None:
    assert key("result = triton.cdiv(np.diff(cu_seqlens_cpu), 64)") != key(
        "result = triton.cdiv(np.diff(cu_seqlens_cpu), 128)"
    )


@pytest.mark.parametrize(
    "code",
    [
        "result = x.cumsum(-1)",  # a prefix sum of arbitrary data (sampling) is no index
        "result = np.repeat(values, 3)",
        "result = torch.arange(n)",
        "result = weights.repeat_interleave(group, dim=1)",
        "result = torch.arange(4).repeat(lens)",  # Tensor.repeat tiles, it does not repeat
        "result = np.diff(ts, prepend=0)",
    ],
)
def test_other_expressions_are_not_index_builds(code: str) -> None:
    assert form_of(code) is None


def test_self_referencing_assignments_terminate() -> None:
    tree = ast.parse("x = x + 1\nresult = np.diff(x)")
    names = _Names(tree)
    names.imports["np"] = "numpy"
    term = canonical_term(names.assignments["result"], names)
    assert term[0] == "lengths"
