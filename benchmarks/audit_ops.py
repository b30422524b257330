"""Every op of the ground-truth tables under ``sync_audit(mode="record")``.

For each op: its host time with about 30 ms of GPU work queued (``torch.cuda._sleep``; an
op that takes about 30 ms waited for the GPU: it blocks), and the number of events the
audit recorded. Expected: one event per blocking call (three for the list comprehension,
60 for 20 steps of the naive chunk code) and none for the rest. Each row runs 3 times
(median time; events of every run). Usage, with syncguard importable::

    python benchmarks/audit_ops.py            # GPU: timing + events, exit 1 on a mismatch
    python benchmarks/audit_ops.py --simulate # no GPU needed: events under simulation only

Without CUDA the script falls back to ``--simulate`` and says so; that table is
informational (simulation cannot see host-to-device copies or stream syncs).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from syncguard.runtime import reference, sync_audit


@dataclass(frozen=True)
class Row:
    """One op: what the ground truth says, and how to run it on a context of tensors."""

    label: str
    blocks: bool
    run: Callable[[Any], object]
    events: int = -1  # expected events; -1 means 1 if blocks else 0
    cuda_only: bool = False  # needs real device memory, pinned memory or streams

    @property
    def expected(self) -> int:
        if self.events >= 0:
            return self.events
        return 1 if self.blocks else 0


class Context:
    """The tensors the ops use, on ``device``."""

    def __init__(self, device: str) -> None:
        cuda = device == "cuda"
        gen = torch.Generator().manual_seed(0)
        self.device = device
        self.x = torch.randn(4096, generator=gen).to(device)
        self.y = self.x.clone()
        self.t = torch.tensor(3.0, device=device)
        self.mask = self.x > 0
        self.idx = torch.randint(0, 64, (1024,), generator=gen).to(device)
        self.reps = torch.randint(1, 4, (256,), generator=gen).to(device)
        self.reps_total = int(self.reps.sum())
        self.t0 = torch.tensor(2, device=device)
        self.t1 = torch.tensor(3, device=device)
        self.xs = list(range(8))
        self.values = list(range(256))
        self.arr = np.arange(4096, dtype=np.float32)
        self.pageable = torch.randn(1 << 20, generator=gen)
        self.pinned = self.pageable.pin_memory() if cuda else self.pageable
        self.pinned_strided = torch.randn(1024, 2048).pin_memory().t() if cuda else self.pageable
        self.dev_buf = torch.empty(1 << 20, device=device)
        self.dev_matrix = torch.empty(2048, 1024, device=device)
        self.host_out = torch.empty(4096)
        self.pinned_out = torch.empty(4096).pin_memory() if cuda else self.host_out
        self.p = torch.softmax(torch.randn(64, generator=gen), 0).to(device)
        self.spd = (torch.eye(64) * 4 + 0.1).to(device)
        self.rhs = torch.randn(64, 4, generator=gen).to(device)
        self.cpu_long = torch.randint(0, 4096, (256,), generator=gen)
        self.cpu_mask = self.mask.cpu()
        self.cu_seqlens = torch.tensor([0, 1000, 3000, 4096, 6000], device=device)
        self.stream = torch.cuda.Stream() if cuda else None
        self.event = torch.cuda.Event() if cuda else None


def _event_sync(c: Context) -> None:
    c.event.record()
    c.event.synchronize()


def _naive_chunk_steps(c: Context) -> None:
    for _ in range(20):
        reference.naive_prepare_chunk_indices(c.cu_seqlens, 64)
        reference.naive_prepare_chunk_offsets(c.cu_seqlens, 64)


def _assert_nonneg(c: Context) -> None:
    assert bool((c.x.abs() >= 0).all())


def _masked_store(c: Context) -> None:
    c.y[c.mask] = 0.0


def _masked_store_device_value(c: Context) -> None:
    c.y[c.mask] = c.t


def _scalar_store(c: Context) -> None:
    c.dev_buf[0] = 0


def _slice_store(c: Context) -> None:
    c.dev_buf[:1] = 0


def _device_scalar_store(c: Context) -> None:
    c.dev_buf[0] = c.t


ROWS: list[Row] = [
    # -- the main table ------------------------------------------------------------------
    Row("t.sum().item()", True, lambda c: c.x.sum().item()),
    Row("idx.tolist()", True, lambda c: c.idx.tolist()),
    Row("mask.nonzero()", True, lambda c: c.mask.nonzero()),
    Row("torch.nonzero(mask)", True, lambda c: torch.nonzero(c.mask)),
    Row(
        "torch.nonzero_static(mask, size=16)",
        False,
        lambda c: torch.nonzero_static(c.mask, size=16),
    ),
    Row("torch.where(mask)", True, lambda c: torch.where(c.mask)),
    Row("torch.where(mask, x, 0.0)", False, lambda c: torch.where(c.mask, c.x, 0.0)),
    Row("x[mask]", True, lambda c: c.x[c.mask]),
    Row("x[mask] = 0.0", False, _masked_store),
    Row("x.masked_fill(mask, 0.0)", False, lambda c: c.x.masked_fill(c.mask, 0.0)),
    Row("torch.masked_select(x, mask)", True, lambda c: torch.masked_select(c.x, c.mask)),
    Row("torch.unique(idx)", True, lambda c: torch.unique(c.idx)),
    Row("torch.repeat_interleave(reps)", True, lambda c: torch.repeat_interleave(c.reps)),
    Row(
        "torch.repeat_interleave(reps, output_size=n)",
        False,
        lambda c: torch.repeat_interleave(c.reps, output_size=c.reps_total),
    ),
    Row("torch.bincount(idx)", True, lambda c: torch.bincount(c.idx)),
    Row("torch.bincount(idx, minlength=100)", True, lambda c: torch.bincount(c.idx, minlength=100)),
    Row("x.cpu()", True, lambda c: c.x.cpu()),
    Row('x.to("cpu")', True, lambda c: c.x.to("cpu")),
    Row('x.to("cpu", non_blocking=True)', False, lambda c: c.x.to("cpu", non_blocking=True)),
    Row("x.cpu().numpy()", True, lambda c: c.x.cpu().numpy()),
    Row(
        "torch.tensor(list, device=cuda)",
        True,
        lambda c: torch.tensor(c.values, device=c.device),
        cuda_only=True,
    ),
    Row(
        "torch.as_tensor(list, device=cuda)",
        True,
        lambda c: torch.as_tensor(c.values, device=c.device),
        cuda_only=True,
    ),
    Row(
        "torch.from_numpy(arr).to(cuda)",
        True,
        lambda c: torch.from_numpy(c.arr).to(c.device),
        cuda_only=True,
    ),
    Row("dev_buf.copy_(pageable_cpu)", True, lambda c: c.dev_buf.copy_(c.pageable), cuda_only=True),
    Row(
        "dev_buf.copy_(pageable_cpu, non_blocking=True)",
        True,
        lambda c: c.dev_buf.copy_(c.pageable, non_blocking=True),
        cuda_only=True,
    ),
    Row(
        "dev_buf.copy_(pinned_cpu, non_blocking=True)",
        False,
        lambda c: c.dev_buf.copy_(c.pinned, non_blocking=True),
        cuda_only=True,
    ),
    Row(
        "torch.randn(4096).pin_memory()",
        False,
        lambda c: torch.randn(4096).pin_memory(),
        cuda_only=True,
    ),
    Row("torch.cuda.synchronize()", True, lambda c: torch.cuda.synchronize(), cuda_only=True),
    Row("bool(mask.any())", True, lambda c: bool(c.mask.any())),
    Row("int(idx.max())", True, lambda c: int(c.idx.max())),
    Row("float(t)", True, lambda c: float(c.t)),
    Row("1 if (x.sum() > 0) else 0", True, lambda c: 1 if (c.x.sum() > 0) else 0),
    Row("str(x) / print(x)", True, lambda c: str(c.x)),
    Row("torch.allclose(x, y)", True, lambda c: torch.allclose(c.x, c.y)),
    Row("torch.equal(x, x)", False, lambda c: torch.equal(c.x, c.x)),
    Row("t.is_nonzero()", True, lambda c: c.t.is_nonzero()),
    Row(
        "[idx[i].item() for i in range(3)]", True, lambda c: [c.idx[i].item() for i in range(3)], 3
    ),
    Row("torch.cumsum(idx, 0)", False, lambda c: torch.cumsum(c.idx, 0)),
    Row("torch.arange(n, device=cuda)", False, lambda c: torch.arange(4096, device=c.device)),
    Row("torch.topk(x, 8)", False, lambda c: torch.topk(c.x, 8)),
    Row("torch.sort(idx)", False, lambda c: torch.sort(c.idx)),
    Row("torch.index_select(x, 0, idx)", False, lambda c: torch.index_select(c.x, 0, c.idx)),
    Row("(x.sum() > 0).tolist()", True, lambda c: (c.x.sum() > 0).tolist()),
    Row("torch.multinomial(p, 1)", False, lambda c: torch.multinomial(c.p, 1)),
    Row(
        "torch.cuda.current_stream().synchronize()",
        True,
        lambda c: torch.cuda.current_stream().synchronize(),
        cuda_only=True,
    ),
    # -- more ops ------------------------------------------------------------------------
    Row("int(t)", True, lambda c: int(c.t0)),
    Row("bool(t)", True, lambda c: bool(c.t0)),
    Row("if t > 0:", True, lambda c: 1 if c.t0 > 0 else 0),
    Row('f"{t}"', True, lambda c: f"{c.t0}"),
    Row("range(t0)", True, lambda c: range(c.t0)),
    Row("xs[t0]", True, lambda c: c.xs[c.t0]),
    Row("xs[:t0]", True, lambda c: c.xs[: c.t0]),
    Row("torch.zeros(t0)", True, lambda c: torch.zeros(c.t0, device=c.device)),
    Row("torch.arange(t0)", True, lambda c: torch.arange(c.t0, device=c.device)),
    Row("torch.full(shape, t0)", True, lambda c: torch.full((4,), c.t0, device=c.device)),
    Row("F.pad(x, (0, t0))", True, lambda c: F.pad(c.x, (0, c.t0))),
    Row("max([t0, t1])", True, lambda c: max([c.t0, c.t1])),
    Row("torch.tensor([t0, t1])", True, lambda c: torch.tensor([c.t0, c.t1]), cuda_only=True),
    Row("assert bool((x >= 0).all())", True, _assert_nonneg),
    Row("torch.argwhere(mask)", True, lambda c: torch.argwhere(c.mask)),
    Row("torch.unique_consecutive(idx)", True, lambda c: torch.unique_consecutive(c.idx)),
    Row("torch.histc(x)", True, lambda c: torch.histc(c.x)),
    Row("F.one_hot(idx)", True, lambda c: F.one_hot(c.idx)),
    Row("torch.linalg.inv(A)", True, lambda c: torch.linalg.inv(c.spd)),
    Row("torch.linalg.cholesky(A)", True, lambda c: torch.linalg.cholesky(c.spd)),
    Row("torch.linalg.solve(A, b)", True, lambda c: torch.linalg.solve(c.spd, c.rhs)),
    Row("Categorical(probs=p)", True, lambda c: torch.distributions.Categorical(probs=c.p)),
    Row("torch.normal(mean, std_tensor)", True, lambda c: torch.normal(c.x, c.x.abs() + 1)),
    Row("x[mask] = gpu_0d", True, _masked_store_device_value),
    Row("x.masked_fill(mask, gpu_0d)", True, lambda c: c.x.masked_fill(c.mask, c.t)),
    Row("t.new_tensor([...])", True, lambda c: c.x.new_tensor([1.0, 2.0]), cuda_only=True),
    Row('pageable.to("cuda")', True, lambda c: c.pageable.to(c.device), cuda_only=True),
    Row('pinned.to("cuda")', True, lambda c: c.pinned.to(c.device), cuda_only=True),
    Row("x[cpu_long_index]", True, lambda c: c.x[c.cpu_long], cuda_only=True),
    Row("buf[0] = 0", True, _scalar_store, cuda_only=True),
    Row("stream.synchronize() (idle)", True, lambda c: c.stream.synchronize(), cuda_only=True),
    Row("torch.histc(x, min=-1, max=1)", False, lambda c: torch.histc(c.x, min=-1, max=1)),
    Row("F.one_hot(idx, num_classes)", False, lambda c: F.one_hot(c.idx, 64)),
    Row("x.repeat_interleave(2)", False, lambda c: c.x.repeat_interleave(2)),
    Row(
        "Categorical(p, validate_args=False)",
        False,
        lambda c: torch.distributions.Categorical(probs=c.p, validate_args=False),
    ),
    Row("torch._assert_async(t > 0)", False, lambda c: torch._assert_async(c.t > 0)),
    Row("t.any() / t.all()", False, lambda c: (c.mask.any(), c.mask.all())),
    Row("torch.randperm(n, device=cuda)", False, lambda c: torch.randperm(4096, device=c.device)),
    Row("x.median()", False, lambda c: c.x.median()),
    Row("x[gpu_long_index]", False, lambda c: c.x[c.idx]),
    Row("x[cpu_bool_mask]", False, lambda c: c.x[c.cpu_mask], cuda_only=True),
    Row("buf[0] = gpu_0d", False, _device_scalar_store),
    Row("buf[:1] = 0", False, _slice_store),
    Row("x.fill_(gpu_0d)", False, lambda c: c.y.fill_(c.t)),
    Row(
        'pinned.to("cuda", non_blocking=True)',
        False,
        lambda c: c.pinned.to(c.device, non_blocking=True),
        cuda_only=True,
    ),
    Row(
        "dst_pinned.copy_(x, non_blocking=True)",
        False,
        lambda c: c.pinned_out.copy_(c.x, non_blocking=True),
        cuda_only=True,
    ),
    Row(
        "torch.empty(n, pin_memory=True)",
        False,
        lambda c: torch.empty(4096, pin_memory=True),
        cuda_only=True,
    ),
    Row(
        "Stream.wait_stream",
        False,
        lambda c: c.stream.wait_stream(torch.cuda.current_stream()),
        cuda_only=True,
    ),
    # -- what set_sync_debug_mode misses, and the naive reference code -------------------
    Row("Event.synchronize() (after queued work)", True, _event_sync, cuda_only=True),
    Row(
        "dev_buf.copy_(non-contiguous pinned, non_blocking=True)",
        True,
        lambda c: c.dev_matrix.copy_(c.pinned_strided, non_blocking=True),
        cuda_only=True,
    ),
    Row(
        "pageable_dst.copy_(x, non_blocking=True)",
        True,
        lambda c: c.host_out.copy_(c.x, non_blocking=True),
        cuda_only=True,
    ),
    Row("20 naive chunk-index steps (reference.py)", True, _naive_chunk_steps, 60, cuda_only=True),
]


def _sleep_cycles(target_ms: float) -> int:
    """``torch.cuda._sleep`` cycles that keep the GPU busy for about ``target_ms``."""
    cycles = 1_000_000
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        end.synchronize()
        cycles = int(cycles * target_ms / start.elapsed_time(end))
    return cycles


def measure(row: Row, context: Context, cycles: int | None, runs: int) -> tuple[str, list[int]]:
    """(median host ms with work queued, or "n/a"; events of each run)."""
    row.run(context)  # warm-up, unaudited
    if cycles is not None:
        torch.cuda.synchronize()
    times, events = [], []
    for _ in range(runs):
        with sync_audit("record", simulate=cycles is None) as audit:
            if cycles is not None:
                torch.cuda._sleep(cycles)
            start = time.perf_counter()
            row.run(context)
            times.append((time.perf_counter() - start) * 1e3)
        if cycles is not None:
            torch.cuda.synchronize()
        events.append(audit.count)
    shown = f"{statistics.median(times):.2f}" if cycles is not None else "n/a"
    return shown, events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulate", action="store_true", help="no GPU: events only")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    simulate = args.simulate or not torch.cuda.is_available()
    if simulate and not args.simulate:
        print("CUDA is not available: falling back to --simulate (events only, informational)")
    context = Context("cpu" if simulate else "cuda")
    cycles = None if simulate else _sleep_cycles(30.0)
    rows = [row for row in ROWS if not (simulate and row.cuda_only)]
    print("| op | GT blocks | host ms, 30 ms queued | blocks here | events/run | expected | ok |")
    print("|---|---|---|---|---|---|---|")
    mismatches, timing_differs = [], []
    for row in rows:
        gt = "yes" if row.blocks else "no"
        try:
            host_ms, events = measure(row, context, cycles, args.runs)
        except Exception as error:  # one broken row must not stop the table
            failure = f"error: {type(error).__name__}: {error}"
            print(f"| `{row.label}` | {gt} | {failure} | | | | **NO** |")
            mismatches.append(row.label)
            continue
        blocked = "n/a" if host_ms == "n/a" else ("yes" if float(host_ms) > 15.0 else "no")
        if blocked not in ("n/a", gt):
            timing_differs.append(row.label)
        ok = all(count == row.expected for count in events)
        if not ok:
            mismatches.append(row.label)
        shown = "/".join(str(count) for count in events)
        print(
            f"| `{row.label}` | {gt} | {host_ms} | {blocked} | {shown} | {row.expected}"
            f" | {'yes' if ok else '**NO**'} |"
        )
    where = "simulation" if simulate else f"CUDA, {torch.cuda.get_device_name(0)}"
    print(
        f"\n{len(rows) - len(mismatches)}/{len(rows)} rows with the expected events ({where},"
        f" torch {torch.__version__}, Python {sys.version.split()[0]})"
    )
    if mismatches:
        print("events differ: " + "; ".join(mismatches))
    if timing_differs:
        print("blocking differs from the ground truth: " + "; ".join(timing_differs))
    return 0 if simulate or not mismatches else 1


if __name__ == "__main__":
    sys.exit(main())
