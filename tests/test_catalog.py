"""The rule catalog against the operator sweep measured on an H200 (benchmarks/op_sweep.json).

* Every operator the sweep says always syncs is claimed by a rule (its ``sweep_ops``) or is on
  the exclusion list below, with the reason; no rule claims an operator that never synced.
* Every call the sweep recorded is linted in a hot ``forward`` on device tensors (host tensors
  are named ``*_cpu``, as the sweep wrote them): the syncing calls of always-syncing ops are
  reported, no call of a never-syncing op is, and for conditional ops the syncing calls are
  reported and the sync-free ones are not, except where the deciding form cannot be seen in the
  source (listed below, with the reason).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from syncguard.rules import all_rules
from syncguard.testing import lint_tree

SWEEP = Path(__file__).resolve().parents[1] / "benchmarks" / "op_sweep.json"

# Always-syncing ops no rule reports, and why.
EXCLUDED = {
    "extra:aten._to_copy": "an aten spelling of `.to()`: engines call it only inside compiler "
    "pattern-matching passes, which trace rather than run it; `x.to('cpu')` is SG103",
    "extra:aten.copy_": "an aten spelling of `copy_`, used by compiler passes (see above); "
    "`dev.copy_(host)` is SG302",
    "extra:aten.index.Tensor": "an aten spelling of boolean-mask indexing, used by compiler "
    "passes; `x[mask]` is SG202",
    "extra:aten.index_put_": "an aten spelling of a masked store, used by compiler passes; "
    "`x[mask] = t` is SG113",
}

# Conditional ops whose syncing form is not visible in the source, and why.
NOT_VISIBLE = {
    "_foreach_add": "syncs when `other` is a 0-d tensor; a tensor and a list of tensors look "
    "alike in the source",
    "extra:_foreach_add_": "same as `_foreach_add`",
    "cholesky_inverse": "syncs (without a debug-mode warning) for batched inputs only",
    "cholesky_solve": "syncs (without a debug-mode warning) for batched inputs only",
    "equal": "returns False without reading values when the shapes differ; SG107 reports it",
    "isin": "takes the sorting path, which syncs, only when `test_elements` is large "
    "relative to `elements`",
    "linalg.lu": "syncs (without a debug-mode warning) for rectangular matrices only",
    "linalg.lu_factor_ex": "syncs (without a debug-mode warning) for rectangular matrices only",
    "lu": "syncs (without a debug-mode warning) for rectangular matrices only",
    "mode": "syncs for large inputs only (3000 elements in the sweep)",
    "extra:optim.step": "`torch.optim.ASGD` without `capturable=True` reads its step sizes "
    "with `.item()`; the optimizer's class is not visible at the `.step()` call",
}

# Calls of the sweep's program-like extras (not a single call): the rule expected for each.
# (the sweep's names for events are spelled as engines name them)
PROGRAMS: dict[str, tuple[str, str | None]] = {
    "int(t0)": ("int(t0)", "SG104"),
    "float(t0)": ("float(t0)", "SG104"),
    "bool(t0)": ("bool(t0)", "SG104"),
    'f"{t0}"': ('f"{t0}"', "SG106"),
    "range(t0)": ("range(t0)", "SG104"),
    "torch.cuda.synchronize()": ("torch.cuda.synchronize()", "SG401"),
    "torch.accelerator.synchronize()": ("torch.accelerator.synchronize()", "SG401"),
    "torch.cuda.current_stream().synchronize()": (
        "torch.cuda.current_stream().synchronize()",
        "SG402",
    ),
    "end.synchronize()": ("done_event.synchronize()", "SG402"),
    "start.elapsed_time(end)": ("start_event.elapsed_time(end_event)", "SG403"),
    "torch.from_numpy(a).to(device)": ("torch.from_numpy(a).to(device)", "SG302"),
    "torch.from_numpy(a)": ("torch.from_numpy(a)", None),
    "clip_grad_norm_(params, 1.0, error_if_nonfinite=True)": (
        "clip_grad_norm_(params, 1.0, error_if_nonfinite=True)",
        "SG115",
    ),
    "clip_grad_norm_(params, 1.0)": ("clip_grad_norm_(params, 1.0)", None),
    "clip_grad_norm_(params, 1.0, foreach=True)": (
        "clip_grad_norm_(params, 1.0, foreach=True)",
        None,
    ),
    # the sweep's scaler and SGD optimizer, built where the forward can see them
    "scaler.step(optimizer); scaler.update()": (
        'torch.amp.GradScaler("cuda").step(torch.optim.SGD(params, lr=1e-3))',
        "SG116",
    ),
}


@cache
def sweep() -> dict:
    return json.loads(SWEEP.read_text(encoding="utf-8"))


def ops(*verdicts: str) -> list[dict]:
    return [op for op in sweep()["ops"] if op["verdict"] in verdicts]


def claims() -> dict[str, list[str]]:
    """Sweep op -> the rules that claim it."""
    found: dict[str, list[str]] = {}
    for code, rule in all_rules().items():
        for op in getattr(rule, "sweep_ops", ()):
            found.setdefault(op, []).append(code)
    return found


def test_the_sweep_ran_on_a_gpu() -> None:
    data = sweep()
    assert data["gpu"].startswith("NVIDIA") and data["torch"]
    counts = data["counts"]
    assert counts["entries"] == len(data["ops"]) > 700
    assert counts["always"] + counts["conditional"] + counts["never"] + counts["error"] == len(
        data["ops"]
    )


def test_every_always_syncing_op_has_a_rule_or_a_reason() -> None:
    claimed = claims()
    missing = [op["op"] for op in ops("always") if op["op"] not in claimed | EXCLUDED.keys()]
    assert not missing, f"always-syncing ops with no rule and no exclusion: {missing}"


def test_no_rule_claims_an_op_that_never_synced() -> None:
    verdicts = {op["op"]: op["verdict"] for op in sweep()["ops"]}
    wrong = {op: codes for op, codes in claims().items() if verdicts.get(op) != "always"
             and verdicts.get(op) != "conditional"}  # fmt: skip
    assert not wrong, f"rules claim ops the sweep did not see sync (or did not sweep): {wrong}"


def test_exclusions_are_still_needed() -> None:
    verdicts = {op["op"]: op["verdict"] for op in sweep()["ops"]}
    claimed = claims()
    for op in EXCLUDED:
        assert verdicts.get(op) == "always" and op not in claimed, op
    for op in NOT_VISIBLE:
        assert verdicts.get(op) == "conditional", op


# --- every recorded call, in a hot forward ---------------------------------------------

_TENSOR = re.compile(r"\bt\d+(?:_cpu)?\b")
_DEVICE = re.compile(r"device\(type='(\w+)'(?:, index=\d+)?\)")
_GETITEM = re.compile(r"^(t\d+(?:_cpu)?)\.__getitem__\((.*)\)$")


def _source(call: str) -> str:
    call = _DEVICE.sub(r"'\1'", call)
    return _GETITEM.sub(r"\1[\2]", call)


# Recorded calls whose form decides nothing the source shows, and why.
DATA_DECIDES = {
    ("__getitem__", "t0[t1_cpu]"): "the host index is a boolean mask (no sync, as SG305 "
    "says); the recorded call does not show its dtype",
    ("linalg.norm.subgradients_at_zero", "torch.linalg.norm(t0, -2, keepdim=False)"): "order -2 "
    "is a spectral norm (SVD: syncs) of a matrix but a plain norm of a vector; the call does not "
    "show the input's rank (SG114 reports the matrix-only `matrix_norm(x, -2)`)",
}


def recorded() -> Iterator[tuple[str, str, bool]]:
    for op in ops("always", "conditional", "never"):
        for call in op.get("calls", ()):
            if op["source"] == "extra" and not op["spelling"]:
                continue  # program-like extras: see PROGRAMS
            yield op["op"], _source(call["call"]), call["synced"]


@cache
def ambiguous() -> frozenset[str]:
    """Call texts recorded both syncing and not (in one op or in two variants of one op:
    ``torch.linalg.norm(t0, 2)`` on a vector and on a matrix): the data decides, not the
    source."""
    outcomes: dict[str, set[bool]] = {}
    for _, call, synced in recorded():
        outcomes.setdefault(call, set()).add(synced)
    return frozenset(call for call, seen in outcomes.items() if len(seen) > 1)


def cases() -> Iterator[tuple[str, str, bool]]:
    """(op, call, synced) for every recorded call whose outcome the source decides."""
    for op, call, synced in recorded():
        if call not in ambiguous() and (op, call) not in DATA_DECIDES:
            yield op, call, synced


def test_few_recorded_calls_are_decided_by_the_data() -> None:
    calls = {call for _, call, _ in recorded()}
    assert len(ambiguous()) <= 0.02 * len(calls), sorted(ambiguous())


_FREE = ("params", "a", "device", "done_event", "start_event", "end_event")


def _module(calls: list[str]) -> tuple[str, list[int]]:
    """A module with one hot ``forward`` per call, and the line of each call."""
    lines = ["import torch", "from torch import nn", "from torch.nn.utils import clip_grad_norm_"]
    where = []
    for index, call in enumerate(calls):
        names = sorted(set(_TENSOR.findall(call)), key=lambda name: int(name[1:].split("_")[0]))
        free = [name for name in _FREE if re.search(rf"\b{name}\b", call)]
        params = ", ".join([f"{name}: torch.Tensor" for name in names] + free)
        lines += [
            "",
            f"class Model{index}(nn.Module):",
            f"    def forward(self{', ' if params else ''}{params}):",
            f"        return {call}",
        ]
        where.append(len(lines))
    return "\n".join(lines) + "\n", where


@cache
def reported(calls: tuple[str, ...]) -> tuple[frozenset[str], ...]:
    """The codes reported on each call's line, each call in its own hot forward."""
    source, where = _module(list(calls))
    ast.parse(source)
    result = lint_tree({"model.py": source})
    assert not result.problems, result.problems
    by_line: dict[int, set[str]] = {}
    for finding in result.findings:
        by_line.setdefault(finding.span.line, set()).add(finding.code)
    return tuple(frozenset(by_line.get(line, ())) for line in where)


def _all_cases() -> list[tuple[str, str, bool]]:
    return list(cases())


@cache
def _codes() -> dict[tuple[str, str], frozenset[str]]:
    found = _all_cases()
    codes = reported(tuple(call for _, call, _ in found))
    return {(op, call): code for (op, call, _), code in zip(found, codes, strict=True)}


def test_every_recorded_call_parses() -> None:
    for _, call, _ in cases():
        ast.parse(call)


def test_syncing_calls_of_always_syncing_ops_are_reported() -> None:
    codes = _codes()
    always = {op["op"] for op in ops("always")}
    silent = [
        (op, call)
        for op, call, synced in _all_cases()
        if op in always and op not in EXCLUDED and synced and not codes[op, call]
    ]
    assert not silent, f"always-syncing calls not reported in a hot forward: {silent}"


def test_no_call_of_a_never_syncing_op_is_reported() -> None:
    codes = _codes()
    never = {op["op"] for op in ops("never")}
    alarms = [(op, call, sorted(codes[op, call])) for op, call, _ in _all_cases()
              if op in never and codes[op, call]]  # fmt: skip
    assert not alarms, f"never-syncing calls reported: {alarms}"


def test_conditional_ops_are_reported_exactly_in_their_syncing_forms() -> None:
    codes = _codes()
    conditional = {op["op"] for op in ops("conditional")} - NOT_VISIBLE.keys()
    wrong = [
        (op, call, "synced" if synced else "sync-free", sorted(codes[op, call]))
        for op, call, synced in _all_cases()
        if op in conditional and synced != bool(codes[op, call])
    ]
    assert not wrong, f"conditional ops reported in the wrong forms: {wrong}"


def test_program_extras_are_reported_by_their_rules() -> None:
    recorded = {call["call"]: call["synced"] for op in ops("always", "conditional", "never")
                if op["source"] == "extra" and not op["spelling"]
                for call in op.get("calls", ())}  # fmt: skip
    assert not set(PROGRAMS) - set(recorded), set(PROGRAMS) - set(recorded)
    for call, (_, expected) in PROGRAMS.items():
        assert recorded[call] is (expected is not None), call
    codes = reported(tuple(snippet for snippet, _ in PROGRAMS.values()))
    for (call, (_, expected)), found in zip(PROGRAMS.items(), codes, strict=True):
        assert (expected in found) if expected else not found, (call, sorted(found))
