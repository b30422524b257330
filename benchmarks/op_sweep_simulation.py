"""The runtime audit's simulation against the operator sweep (issue 14).

For every call the sweep recorded (``benchmarks/op_sweep.json``), the same OpInfo sample is
built on the CPU, the recorded call is written out as a function in a scratch module (so the
audit sees the call as user code does, with its source) and run under
``sync_audit(mode="record", simulate=True)``, with the tensors the sweep named ``*_cpu``
marked as host memory. A call agrees when the simulation reports it exactly when it synced
on the GPU. Usage, with syncguard importable::

    python benchmarks/op_sweep_simulation.py              # every op: a table of disagreements
    python benchmarks/op_sweep_simulation.py --ops cov,nonzero

The rule tests run the same comparison on a fixed share of the ops
(``tests/test_simulation_catalog.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import re
import sys
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
SWEEP = os.path.join(HERE, "op_sweep.json")
_NAME = re.compile(r"\bt(\d+)(_cpu)?\b")
_GETITEM = re.compile(r"^(t\d+(?:_cpu)?)\.__getitem__\((.*)\)$")


@dataclass(frozen=True)
class Outcome:
    """One recorded call: what the GPU did and what the simulation said."""

    op: str
    call: str
    synced: bool
    simulated: bool | None  # None: the call failed on the CPU
    detail: str = ""

    @property
    def agrees(self) -> bool:
        return self.simulated is self.synced


def sweep_ops(path: str = SWEEP) -> list[dict]:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)["ops"]


def _function(call: str) -> tuple[str, list[tuple[int, bool]]]:
    """``def call_N(t0, t1_cpu): return <call>``; and each parameter's index and host flag."""
    seen = sorted({(int(m.group(1)), bool(m.group(2))) for m in _NAME.finditer(call)})
    params = ", ".join(f"t{index}{'_cpu' if host else ''}" for index, host in seen)
    return f"({params}):\n    return {call}\n", seen


def _plain(call: str) -> str:
    """``call`` without the host marks on tensor names, and without float literals (samples
    draw random Python numbers)."""
    call = re.sub(r"-?\d+\.\d+(e-?\d+)?", "<float>", call)
    return _on_cpu(call).replace("_cpu", "")


def _on_cpu(call: str) -> str:
    """The call with its ``device='cuda'`` arguments made ``'cpu'`` (simulation treats
    every tensor as device memory unless marked as host)."""
    return call.replace("device='cuda'", "device='cpu'")


def compare(ops: Iterable[dict], scratch: str) -> list[Outcome]:
    """Run every recorded call of ``ops`` (sweep summaries) under simulation."""
    wanted = [op for op in ops if op["source"] != "extra" and op.get("calls")]
    with _no_lazy_cuda_seeding():
        return _compare(wanted, scratch)


@contextlib.contextmanager
def _no_lazy_cuda_seeding() -> Iterator[None]:
    """Without CUDA, every ``torch.manual_seed`` (OpInfo seeds each sample) queues a lazy
    CUDA seeding call with a formatted stack: half the time of a run. Skip it there."""
    import torch

    if torch.cuda.is_available():
        yield
        return
    original = torch.cuda.manual_seed_all
    torch.cuda.manual_seed_all = lambda seed: None
    try:
        yield
    finally:
        torch.cuda.manual_seed_all = original


def _compare(wanted: list[dict], scratch: str) -> list[Outcome]:
    import torch

    sys.path.insert(0, HERE)
    import op_sweep

    from syncguard.runtime import mark_host, sync_audit

    units = {unit.op: unit for unit in op_sweep.opinfo_units("cpu") if unit.op in
             {op["op"] for op in wanted}}  # fmt: skip
    lines = ["import torch", ""]
    jobs = []
    for op in wanted:
        try:
            cases = units[op["op"]].cases(limit=1 + max(call["index"] for call in op["calls"]))
        except Exception as exc:  # the CPU cannot build these samples
            jobs += [(op, call, None, [], f"samples: {exc}") for call in op["calls"]]
            continue
        for call in op["calls"]:
            case = cases[call["index"]] if call["index"] < len(cases) else None
            if case is None or _plain(case.call) != _plain(call["call"]):
                jobs.append((op, call, None, [], "the CPU sample differs from the GPU one"))
                continue
            body, params = _function(_GETITEM.sub(r"\1[\2]", _on_cpu(call["call"])))
            name = f"call_{len(jobs)}"
            lines.append(f"def {name}{body}")
            jobs.append((op, call, name, params, case))
    path = os.path.join(scratch, "sweep_calls.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("sweep_calls", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    outcomes = []
    warnings.filterwarnings("ignore")
    for op, call, name, params, case in jobs:
        if name is None:
            outcomes.append(Outcome(op["op"], call["call"], call["synced"], None, case))
            continue
        tensors = [case.tensors[index] for index, _ in params]
        for (_, host), tensor in zip(params, tensors, strict=True):
            if host:
                mark_host(tensor)
        torch.manual_seed(0)
        detail = ""
        with sync_audit(mode="record", simulate=True) as audit:
            try:
                getattr(module, name)(*tensors)
            except Exception as exc:
                detail = f"{type(exc).__name__}: {str(exc)[:80]}"
        simulated = None if detail else bool(audit.events)
        if audit.events:
            detail = ", ".join(sorted({event.detail for event in audit.events}))
        outcomes.append(Outcome(op["op"], call["call"], call["synced"], simulated, detail))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", help="comma-separated op names (default: every op)")
    args = parser.parse_args(argv)
    ops = sweep_ops()
    if args.ops:
        ops = [op for op in ops if op["op"] in args.ops.split(",")]
    with tempfile.TemporaryDirectory() as scratch:
        outcomes = compare(ops, scratch)
    ran = [o for o in outcomes if o.simulated is not None]
    wrong = [o for o in ran if not o.agrees]
    print(f"{len(outcomes)} recorded calls, {len(ran)} ran on the CPU, {len(wrong)} disagree")
    print(f"{'op':<36} {'GPU':<8} {'simulated':<10} call / detail")
    for outcome in wrong:
        gpu = "synced" if outcome.synced else "no sync"
        sim = "reported" if outcome.simulated else "silent"
        print(f"{outcome.op:<36} {gpu:<8} {sim:<10} {outcome.call[:60]}  {outcome.detail[:60]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
