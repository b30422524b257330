"""SG502: a host array built, pinned into a fresh tensor and copied to the device every step."""

from __future__ import annotations

import ast

from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.torch_api import PINNING_HELPER
from syncguard.values import Place

_PINNED_FACTORIES = frozenset(
    {"torch.empty", "torch.zeros", "torch.ones", "torch.full", "torch.empty_like",
     "torch.zeros_like", "torch.ones_like", "torch.full_like", "torch.empty_strided"}
)  # fmt: skip
# Methods that return a view of their receiver (the same pinned memory).
_VIEWS = frozenset({"view", "reshape", "flatten", "narrow", "squeeze", "unsqueeze", "view_as"})
_MAX_HOPS = 8


class PerStepStaging(Rule):
    """Flags, in a hot path, a copy to the device from a pinned host tensor that was
    allocated in the same call: by a pinning helper (``np_to_pinned_tensor(array)``,
    ``flatten_arrays_to_pinned_cpu``...) or a factory with ``pin_memory=`` (``torch.empty(n,
    pin_memory=True)`` made per call, filled, then copied). Build, pin, copy: the whole
    staging is redone every step.

    Split with SG306: a copy whose source was pinned with ``.pin_memory()`` in the same
    function is SG306's finding, so SG502 never reports it; SG502 covers the staging
    SG306 does not see: pinning inside a helper, and pinned factories allocated per call.
    The two never report the same copy.

    Why it is waste: no sync happens (pinned memory, asynchronous copy), but each step
    allocates page-locked memory (or takes it from the caching host allocator and records
    an event for it), writes the data into it and only then queues the copy. A stage
    allocated once does the same job with only the write and the copy.

    How to fix: allocate a persistent pinned stage once (``__init__``: ``self.stage =
    torch.empty(max_n, dtype=..., pin_memory=True)``), write ``self.stage[:n]`` each step
    and copy that slice with ``non_blocking=True`` (reusing the stage only after the copy
    that read it has run: keep two and alternate, or record an event);
    ``syncguard.runtime.reference.PinnedStagePool`` does this.
    """

    code = "SG502"
    name = "per-step-staging"
    message = "a fresh pinned host tensor is allocated, filled and copied to the device every step"
    tokens = ("pinned", "pin_memory")
    cost = "host time: 110.48 us per step naive vs 21.28 us with a persistent pinned stage (H200)"
    graph_break = False
    blocks_host = False

    VALID = [
        Valid(
            """
import numpy as np
import torch

class StepInputBuilder:
    def __init__(self, max_tokens, device):
        self.stage = torch.empty(max_tokens, dtype=torch.int32, pin_memory=True)
        self.buffer = torch.empty(max_tokens, dtype=torch.int32, device=device)

    def build(self, query_start_loc_cpu):  # syncguard: hot
        lens = np.diff(query_start_loc_cpu)
        n = int(lens.sum())
        self.stage.numpy()[:n] = np.repeat(np.arange(len(lens)), lens)
        self.buffer[:n].copy_(self.stage[:n], non_blocking=True)
        return self.buffer[:n]
"""
        ),
        Valid(
            """
import torch

def np_to_pinned_tensor(array):
    return torch.from_numpy(array).pin_memory()

class StepInputBuilder:
    def __init__(self, lookup_np, device):                    # cold: once
        self.lookup = np_to_pinned_tensor(lookup_np).to(device, non_blocking=True)

    def build(self, ids_np):  # syncguard: hot
        staged = torch.from_numpy(ids_np).pin_memory()   # SG306's finding, not SG502's
        return staged.to("cuda", non_blocking=True)
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import numpy as np
from engine.utils import np_to_pinned_tensor

class SparseInputBuilder:
    def build(self, common_attn_metadata):  # syncguard: hot
        starts = np.asarray(common_attn_metadata.query_start_loc_cpu, dtype=np.int32)
        req_id_per_token = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
        self.req_id_per_token_buffer[: req_id_per_token.shape[0]].copy_(
            np_to_pinned_tensor(req_id_per_token), non_blocking=True
        )
""",
            line=8,
        ),
        Invalid(
            """
import torch

class Runner:
    def execute_model(self, positions_np):  # syncguard: hot
        stage = torch.empty(len(positions_np), dtype=torch.int64, pin_memory=True)
        stage.numpy()[:] = positions_np
        positions = stage.to(self.device, non_blocking=True)
        return positions
""",
            line=7,
        ),
    ]

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        source = _copy_source(node, ctx)
        if source is None:
            return
        staging = _fresh_pinned_allocation(source, ctx)
        if staging is None:
            return
        ctx.report(
            node,
            subject=None,
            message=(
                f"`{staging}` allocates a fresh pinned host tensor on every call; it is "
                "filled and copied to the device here, every step"
            ),
            suggestion=(
                "allocate a persistent pinned stage once (in `__init__`), write `stage[:n]` "
                "each step and copy that slice with `non_blocking=True`"
            ),
        )


def _copy_source(node: ast.Call, ctx: Context) -> ast.expr | None:
    """The host tensor a host-to-device copy reads, if ``node`` is one."""
    func = node.func
    if not isinstance(func, ast.Attribute):
        return None
    if func.attr == "copy_" and node.args and ctx.value(func.value).may_be_device:
        return node.args[0]
    if func.attr == "cuda" or (func.attr == "to" and ctx.value(node).place is Place.DEVICE):
        return func.value
    return None


def _fresh_pinned_allocation(node: ast.expr, ctx: Context) -> str | None:
    """How ``node``'s memory was pinned, when it was allocated by a call in this function
    (through local names, slices and views); None otherwise."""
    seen: set[str] = set()
    for _ in range(_MAX_HOPS):
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Name):
            value = ctx.assigned(node.id)
            if value is None or node.id in seen:
                return None
            seen.add(node.id)
            node = value
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
            if PINNING_HELPER.search(name):
                return f"{ctx.source(func)}(...)"
            qualified = ctx.qualified_name(func)
            if qualified in _PINNED_FACTORIES and _pins(node):
                return f"{qualified}(..., pin_memory=...)"
            if isinstance(func, ast.Attribute) and func.attr in _VIEWS:
                node = func.value
            else:
                return None
        else:
            return None
    return None


def _pins(node: ast.Call) -> bool:
    for keyword in node.keywords:
        if keyword.arg == "pin_memory":
            value = keyword.value
            return not (isinstance(value, ast.Constant) and not value.value)
    return False
