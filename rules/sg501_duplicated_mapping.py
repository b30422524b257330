"""SG501: the same index mapping built and copied to the device by several hot functions."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from syncguard.canonical import Term, canonical_form
from syncguard.facts import Span
from syncguard.rule import Context, Invalid, ProjectReport, ProjectView, Record, Rule, Valid
from syncguard.values import Place

_FACTORIES = frozenset({"torch.tensor", "torch.as_tensor", "torch.asarray"})
_FACTORY_NAMES = frozenset(name.rpartition(".")[2] for name in _FACTORIES)
_SHOWN_SITES = 4
# Path words that mark a platform-specific backend: alternatives never run together.
_PLATFORM_WORDS = {
    "rocm": "rocm", "aiter": "rocm", "hip": "rocm", "amd": "rocm", "xpu": "xpu",
    "tpu": "tpu", "pallas": "tpu", "hpu": "hpu", "gaudi": "hpu", "npu": "npu",
    "ascend": "npu", "mlu": "mlu", "musa": "musa", "neuron": "neuron", "cpu": "cpu",
    "mps": "mps",
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class MappingCopy:
    """A canonical index mapping copied to the device, recorded for the project check."""

    term: Term
    description: str
    span: Span
    built: tuple[int, int] | None  # lines of the expression that builds it, when elsewhere


@dataclass(frozen=True, slots=True)
class StageFill:
    """A host tensor (``stage``: a local name or ``self.x``) filled with a mapping."""

    stage: str
    term: Term
    description: str
    lines: tuple[int, int]


@dataclass(frozen=True, slots=True)
class StageCopy:
    """A copy to the device from the host tensor ``stage`` (a mapping if it was filled with one)."""

    stage: str
    span: Span


class DuplicatedMapping(Rule):
    """Flags an index mapping (token-to-request, lengths, offsets, positions, chunk indices)
    built from the same data and copied to the device in two or more hot functions.

    Why it is waste: no sync happens (the data is on the host and the copies are
    asynchronous), but every consumer redoes the same host work each step: derive the
    mapping (``np.repeat``/``repeat_interleave``), pin a fresh host tensor, queue a copy
    into its own device buffer. With three attention backends doing this, the step pays
    the work three times. Equivalent spellings are recognised (see
    :mod:`syncguard.canonical`), across files, keyed by the data the mapping derives from.
    Only host-built data counts, and backends written for different platforms (a path
    that names rocm/aiter, xpu, tpu, cpu...) are alternatives that never run in one
    process, so they are not counted as duplicates of each other.

    How to fix: build the mapping once per step in the shared per-step metadata, copy it
    once through a persistent pinned stage into one persistent device buffer, and hand
    the cached view to every consumer; see
    ``syncguard.runtime.reference.StepMetadata.token_to_req_indices``.
    """

    code = "SG501"
    name = "duplicated-mapping"
    message = "the same index mapping is built and copied to the device by several hot functions"
    tokens = ("repeat", "diff", "cumsum", "searchsorted", "arange", "[1:]", "cdiv")
    cost = (
        "three consumers each rebuilding the token-to-request mapping: 110.48 µs per step, "
        "21.28 µs built once and cached (5.2x, decode batch 32, H200)"
    )
    graph_break = False
    blocks_host = False

    VALID = [
        Valid(
            """
import numpy as np
import torch

class DenseAttentionBuilder:
    def build(self, meta):  # syncguard: hot
        token_to_req = meta.token_to_req_indices(self.token_to_req_buffer)
        return token_to_req

class SlidingAttentionBuilder:
    def build(self, meta):  # syncguard: hot
        return meta.token_to_req_indices(self.token_to_req_buffer)

class LatentAttentionBuilder:
    def build(self, meta):  # syncguard: hot
        # a different mapping: from the sequence lengths, not the query lengths
        ids = np.repeat(np.arange(meta.num_reqs), np.diff(meta.seq_start_loc_cpu))
        self.seq_ids.copy_(torch.from_numpy(ids), non_blocking=True)
"""
        ),
        Valid(
            """
import numpy as np
import torch

def summarize(meta, device):          # not hot
    ids = np.repeat(np.arange(meta.num_reqs), np.diff(meta.query_start_loc_cpu))
    return torch.from_numpy(ids).to(device)

class DenseAttentionBuilder:
    def build(self, meta):  # syncguard: hot
        ids = np.repeat(np.arange(meta.num_reqs), np.diff(meta.query_start_loc_cpu))
        self.ids.copy_(torch.from_numpy(ids), non_blocking=True)
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import numpy as np
import torch

class DenseAttentionBuilder:
    def build(self, meta):  # syncguard: hot
        starts = np.asarray(meta.query_start_loc_cpu)
        ids = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
        self.token_to_req.copy_(torch.from_numpy(ids).pin_memory(), non_blocking=True)

class SlidingAttentionBuilder:
    def build(self, meta):  # syncguard: hot
        qsl = meta.query_start_loc_cpu
        ids = torch.repeat_interleave(torch.arange(meta.num_reqs), qsl[1:] - qsl[:-1])
        return ids.to(self.device, non_blocking=True)
""",
            line=8,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "copy_"
            and node.args
            and ctx.value(func.value).on_host
        ):
            self._fill(func.value, node.args[0], node, ctx)  # stage.copy_(host_mapping)
            return
        payload = _copied_to_device(node, ctx)
        if payload is not None:
            self._copy(node, payload, ctx)

    def visit_Assign(self, node: ast.Assign, ctx: Context) -> None:
        for target in node.targets:
            if isinstance(target, ast.Subscript):
                if ctx.value(target.value).may_be_device:
                    self._copy(node, node.value, ctx)  # device_buffer[:n] = host_mapping
                else:
                    self._fill(target, node.value, node, ctx)  # stage_np[:n] = mapping
                return

    def _copy(self, node: ast.AST, payload: ast.expr, ctx: Context) -> None:
        if not ctx.value(payload).on_host:
            return  # built on the device (or maybe): not host work copied up
        form = canonical_form(payload, ctx)
        if form is not None:
            built = _built_at(payload, ctx)
            ctx.record(MappingCopy(form.term, form.describe(), ctx.span(node), built))
            return
        stage = _stage_name(payload)
        if stage is not None:
            ctx.record(StageCopy(stage, ctx.span(node)))

    def _fill(self, target: ast.expr, value: ast.expr, node: ast.AST, ctx: Context) -> None:
        stage = _stage_name(target)
        host = stage is not None and ctx.value(value).on_host
        form = canonical_form(value, ctx) if host else None
        if stage is not None and form is not None:
            span = ctx.span(node)
            ctx.record(StageFill(stage, form.term, form.describe(), (span.line, span.end_line)))

    def check_project(self, project: ProjectView) -> Iterable[ProjectReport]:
        groups: dict[Term, list[tuple[Record, MappingCopy]]] = {}
        fills: dict[tuple[str, str, str], StageFill] = {}
        for record in project.records(self.code):
            if project.scope == "hot" and project.hot(record.path, record.function) is None:
                continue
            item = record.item
            if isinstance(item, StageFill):
                fills[(record.path, record.function, item.stage)] = item
                continue
            if isinstance(item, StageCopy):
                fill = fills.get((record.path, record.function, item.stage))
                if fill is None:
                    continue
                item = MappingCopy(fill.term, fill.description, item.span, fill.lines)
            if isinstance(item, MappingCopy):
                groups.setdefault(item.term, []).append((record, item))
        for members in groups.values():
            if len({(record.path, record.function) for record, _ in members}) >= 2:
                yield from self._reports(members)

    def _reports(self, members: list[tuple[Record, MappingCopy]]) -> Iterator[ProjectReport]:
        for record, copy in members:
            here = (record.path, record.function)
            platform = _platform(record.path)
            others = [
                f"{other.path}:{other_copy.span.line} ({other.function})"
                for other, other_copy in members
                if (other.path, other.function) != here
                and _same_process(platform, _platform(other.path))
            ]
            if not others:
                continue
            shown = ", ".join(others[:_SHOWN_SITES])
            if len(others) > _SHOWN_SITES:
                shown += f" and {len(others) - _SHOWN_SITES} more"
            span = copy.span
            yield ProjectReport(
                path=record.path,
                function=record.function,
                span=span,
                statement=(span.line, span.end_line),
                message=(
                    f"{copy.description} is built and copied to the device here and again in "
                    f"{shown}: the same per-step work, done {len(others) + 1} times"
                ),
                suggestion=(
                    "build it once per step in the shared per-step metadata (one pinned "
                    "stage, one persistent device buffer) and reuse the cached view in every "
                    "consumer, as `syncguard.runtime.reference.StepMetadata"
                    ".token_to_req_indices` does"
                ),
                suppressible_at=(copy.built,) if copy.built is not None else (),
            )


def _copied_to_device(node: ast.Call, ctx: Context) -> ast.expr | None:
    """The host data ``node`` copies to the device, if it is such a copy."""
    func = node.func
    if not node.args and not isinstance(func, ast.Attribute):
        return None
    final = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    if isinstance(func, ast.Attribute) and final == "copy_":
        return node.args[0] if node.args and ctx.value(func.value).may_be_device else None
    if isinstance(func, ast.Attribute) and final in ("cuda", "to"):
        if final == "cuda" or ctx.value(node).place is Place.DEVICE:
            return func.value
        return None
    if not node.args:
        return None
    if final in _FACTORY_NAMES:
        if ctx.qualified_name(func) in _FACTORIES and any(
            keyword.arg == "device" for keyword in node.keywords
        ):
            return None if ctx.value(node).on_host else node.args[0]
        return None
    if "h2d" in final or "to_device" in final:
        return node.args[0]  # async_tensor_h2d(host, device)
    return None


def _platform(path: str) -> str | None:
    """The accelerator platform a file is written for, from its path (``rocm_aiter_mla.py``
    -> ``rocm``); None for code shared by every platform."""
    for word in re.split(r"[^a-z0-9]+", path.lower()):
        platform = _PLATFORM_WORDS.get(word)
        if platform is not None:
            return platform
    return None


def _same_process(first: str | None, second: str | None) -> bool:
    """Whether code for these platforms can run in one process (one of them is shared)."""
    return first is None or second is None or first == second


def _stage_name(node: ast.expr) -> str | None:
    """The host tensor ``node`` reads or writes: ``stage`` for ``stage[:n]`` or
    ``stage.numpy()[:n]``, ``self.stage`` for ``self.stage[:n]``; None for anything else."""
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("numpy", "view", "reshape", "flatten")
        ):
            node = node.func.value
        else:
            break
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def _built_at(payload: ast.expr, ctx: Context) -> tuple[int, int] | None:
    """Lines of the local assignment the copied data comes from, if it has one."""
    for node in ast.walk(payload):
        if isinstance(node, ast.Name):
            value = ctx.assigned(node.id)
            if value is not None:
                return (value.lineno, value.end_lineno or value.lineno)
    return None
