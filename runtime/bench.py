"""GPU benchmark of the reference fixes: ``python -m syncguard.runtime.bench [--json PATH]``.

For each scenario it runs the naive, fixed and device variants of one per-step job and
prints, per variant: host time per step (median), host time with about 30 ms of GPU work
queued (a variant that synchronizes waits for all of it), sync events per step, and the
host-to-device copies and pinned allocations per step (counted by design in
``syncguard.runtime.reference.counters``). It then captures each fixed path in a CUDA graph,
replays it with new inputs and checks the results. Needs any CUDA GPU; exits with code 2
and a message without one, with code 1 when a result is wrong.

Sync events come from ``syncguard.runtime.sync_audit(mode="record")`` when it exists, else
from ``torch.cuda.set_sync_debug_mode("warn")`` warnings (which miss some syncs; the
report names the counter used).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

VARIANTS = ("naive", "fixed", "device")
CONSUMERS_PER_STEP = 3
GRAPH_REPLAYS = 3
STALL_REPEATS = 5
COUNTED_STEPS = 20
WARMUP_STEPS = 20
MAPPING_TARGET_RATIO = 5.0
NO_STALL_FRACTION = 0.1  # a step "does not stall" if it returns within 10% of the queued time


@dataclass
class VariantResult:
    """Measurements of one variant in one scenario."""

    host_us: float = 0.0
    host_mean_us: float = 0.0
    stall_ms: float = 0.0
    syncs_per_step: float = 0.0
    h2d_copies_per_step: float = 0.0
    pinned_allocations_per_step: float = 0.0
    stage_waits_per_step: float = 0.0
    matches_oracle: bool = False
    graph: str = "-"


@dataclass
class ScenarioResult:
    """One scenario: what it models and the results of each variant."""

    name: str
    family: str
    description: str
    variants: dict[str, VariantResult] = field(default_factory=dict)


@dataclass
class Scenario:
    """Step functions per variant, a result check, and CUDA graph checks of fixed paths."""

    name: str
    family: str
    description: str
    steps: dict[str, Callable[[], Any]]
    matches_oracle: Callable[[str], bool]
    graph_checks: dict[str, Callable[[], tuple[int, int]]]


# ----- measuring ----------------------------------------------------------------------------


def host_time_us(step: Callable[[], Any], steps: int) -> tuple[float, float]:
    """(median, mean) host time of ``step`` in µs, the GPU idle before each call."""
    import torch

    for _ in range(WARMUP_STEPS):
        step()
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e6, statistics.fmean(times) * 1e6


def sleep_cycles_for(milliseconds: float) -> int:
    """GPU clock cycles that ``torch.cuda._sleep`` needs to keep the GPU busy that long."""
    import torch

    probe = 20_000_000
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rates = []
    for _ in range(3):
        start.record()
        torch.cuda._sleep(probe)
        end.record()
        end.synchronize()
        rates.append(probe / start.elapsed_time(end))
    return int(milliseconds * statistics.median(rates))


def stall_ms(step: Callable[[], Any], cycles: int) -> float:
    """Median host time of ``step`` in ms with ``cycles`` of GPU work queued before it."""
    import torch

    times = []
    for _ in range(STALL_REPEATS):
        torch.cuda.synchronize()
        torch.cuda._sleep(cycles)
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    torch.cuda.synchronize()
    return statistics.median(times) * 1e3


def find_sync_audit() -> Callable[..., Any] | None:
    """``syncguard.runtime.sync_audit`` if this installation has it."""
    try:
        from syncguard import runtime
    except ImportError:
        return None
    return getattr(runtime, "sync_audit", None)


def syncs_per_step(step: Callable[[], Any], steps: int) -> tuple[float, str]:
    """Sync events per call of ``step`` and the name of the counter that saw them.

    The debug mode is restored afterwards in any case: it must not stay armed across the
    CUDA graph captures that follow.
    """
    import torch

    previous = torch.cuda.get_sync_debug_mode()
    sync_audit = find_sync_audit()
    failure = ""
    if sync_audit is not None:
        try:
            with sync_audit(mode="record") as audit:
                for _ in range(steps):
                    step()
            torch.cuda.synchronize()
            return audit.count / steps, 'sync_audit(mode="record")'
        except Exception as error:  # report it and fall back to the debug-mode warnings
            failure = f" (sync_audit failed: {type(error).__name__}: {error})"
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            for _ in range(steps):
                step()
        finally:
            torch.cuda.set_sync_debug_mode(previous)
    torch.cuda.synchronize()
    events = sum("synchronizing" in str(w.message) for w in caught)
    return events / steps, 'torch.cuda.set_sync_debug_mode("warn") warnings' + failure


def work_per_step(step: Callable[[], Any], steps: int) -> tuple[float, float, float]:
    """(host-to-device copies, pinned allocations, stage waits) per call, as counted by
    ``syncguard.runtime.reference.counters``. A stage wait blocks the host until an earlier
    copy ran; it is not a sync of the kinds the audit reports, so it gets its own column.
    """
    import torch

    from syncguard.runtime.reference import counters

    counters.reset()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (
        counters.host_to_device_copies / steps,
        counters.pinned_allocations / steps,
        counters.stage_waits / steps,
    )


def capture(function: Callable[[], Any]) -> tuple[Any, Any]:
    """Warm ``function`` up on a side stream, capture it in a CUDA graph: (graph, output)."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            function()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        output = function()
    torch.cuda.synchronize()
    return graph, output


# ----- scenarios ----------------------------------------------------------------------------


def offsets_of(lengths: Sequence[int]) -> list[int]:
    """Cumulative offsets, starting at 0."""
    offsets = [0]
    for length in lengths:
        offsets.append(offsets[-1] + int(length))
    return offsets


def random_lengths(rng: Any, count: int, total: int) -> list[int]:
    """``count`` random non-negative lengths (zeros included) summing to ``total``."""
    import numpy as np

    cuts = np.sort(rng.integers(0, total + 1, size=max(count - 1, 0)))
    return np.diff(np.concatenate([[0], cuts, [total]])).astype(int).tolist()


def expected_mapping(lengths: Sequence[int], num_tokens: int) -> Any:
    """The token-to-request mapping by ``repeat_interleave`` on the host, padded with 0."""
    import torch

    mapping = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
    return torch.cat([mapping, mapping.new_zeros(num_tokens - mapping.numel())]).int()


def mapping_scenario(name: str, lengths: list[int], rng: Any) -> Scenario:
    """Three consumers per step need the token-to-request mapping of the same step."""
    import torch

    from syncguard.runtime import reference

    num_tokens, num_reqs = sum(lengths), len(lengths)
    qsl_cpu = torch.tensor(offsets_of(lengths), dtype=torch.int32)
    qsl = qsl_cpu.cuda()
    naive_buffers = [torch.zeros(num_tokens, dtype=torch.int32, device="cuda") for _ in "abc"]
    shared = torch.zeros(num_tokens, dtype=torch.int32, device="cuda")
    results: dict[str, Any] = {}

    def naive() -> None:
        for buffer in naive_buffers:
            results["naive"] = reference.naive_token_to_req_indices(qsl_cpu, buffer, num_tokens)

    def fixed() -> None:
        metadata = reference.StepMetadata(qsl_cpu, qsl, num_tokens)
        for _ in range(CONSUMERS_PER_STEP):
            results["fixed"] = metadata.token_to_req_indices(shared)

    def device() -> None:
        results["device"] = reference.token_to_req_indices_device(qsl, num_tokens)

    def matches_oracle(variant: str) -> bool:
        {"naive": naive, "fixed": fixed, "device": device}[variant]()
        expected = expected_mapping(lengths, num_tokens)
        return bool(torch.equal(results[variant].cpu(), expected))

    def fixed_in_graph() -> tuple[int, int]:
        values = torch.zeros(num_reqs, device="cuda")
        graph, gathered = capture(lambda: values.index_select(0, shared))
        passed = 0
        for replay in range(GRAPH_REPLAYS):
            new_lengths = random_lengths(rng, num_reqs, int(rng.integers(0, num_tokens + 1)))
            new_qsl = torch.tensor(offsets_of(new_lengths), dtype=torch.int32)
            metadata = reference.StepMetadata(new_qsl, new_qsl.cuda(), num_tokens)
            view = metadata.token_to_req_indices(shared)
            host_values = torch.arange(num_reqs, dtype=torch.float32) * 10 + replay
            values.copy_(host_values)
            graph.replay()
            expected = host_values[expected_mapping(new_lengths, num_tokens).long()]
            same_address = view.data_ptr() == shared.data_ptr()
            passed += same_address and torch.equal(gathered.cpu(), expected)
        return passed, GRAPH_REPLAYS

    def device_in_graph() -> tuple[int, int]:
        static_qsl = torch.zeros_like(qsl)
        graph, mapping = capture(
            lambda: reference.token_to_req_indices_device(static_qsl, num_tokens)
        )
        passed = 0
        for _ in range(GRAPH_REPLAYS):
            new_lengths = random_lengths(rng, num_reqs, int(rng.integers(0, num_tokens + 1)))
            static_qsl.copy_(torch.tensor(offsets_of(new_lengths), dtype=torch.int32))
            graph.replay()
            passed += torch.equal(mapping.cpu(), expected_mapping(new_lengths, num_tokens))
        return passed, GRAPH_REPLAYS

    description = (
        f"{num_reqs} requests, {num_tokens} tokens, {CONSUMERS_PER_STEP} consumers per step"
    )
    return Scenario(
        name,
        "mapping",
        description,
        {"naive": naive, "fixed": fixed, "device": device},
        matches_oracle,
        {"fixed": fixed_in_graph, "device": device_in_graph},
    )


def attention_matches(out: Any, q: Any, k: Any, v: Any, lengths: Sequence[int]) -> bool:
    """Compare with causal linear attention computed per sequence by plain matrix products."""
    import torch

    expected = torch.zeros_like(out)
    start = 0
    for length in lengths:
        rows = slice(start, start + length)
        expected[rows] = (q[rows] @ k[rows].T).tril() @ v[rows]
        start += length
    scale = expected.abs().max().clamp(min=1.0)
    return bool(((out - expected).abs().max() / scale) < 1e-3)


def chunk_scenario(name: str, lengths: list[int], rng: Any) -> Scenario:
    """Chunk indices and offsets for the chunked linear attention of one step."""
    import torch

    from syncguard.runtime import reference

    chunk_size = reference.CHUNK_SIZE
    num_tokens, num_seqs = sum(lengths), len(lengths)
    cu_cpu = torch.tensor(offsets_of(lengths), dtype=torch.int64)
    cu = cu_cpu.cuda()
    bound = reference.max_chunks_bound(num_tokens, num_seqs, chunk_size)
    indices_buffer = torch.full((bound, 2), -1, dtype=torch.int64, device="cuda")
    offsets_buffer = torch.zeros(num_seqs + 1, dtype=torch.int64, device="cuda")
    results: dict[str, Any] = {}

    def naive() -> None:
        results["naive"] = (
            reference.naive_prepare_chunk_indices(cu, chunk_size),
            reference.naive_prepare_chunk_offsets(cu, chunk_size),
        )

    def fixed() -> None:
        count = reference.write_chunk_metadata(cu_cpu, indices_buffer, offsets_buffer, chunk_size)
        results["fixed"] = (indices_buffer[:count], offsets_buffer)

    def device() -> None:
        indices, offsets = reference.prepare_chunk_indices_device(cu, chunk_size, bound)
        results["device"] = (indices[: len(expected_indices)], offsets)

    expected_indices = reference.prepare_chunk_indices(cu_cpu, chunk_size)
    expected_offsets = reference.prepare_chunk_offsets(cu_cpu, chunk_size)

    def matches_oracle(variant: str) -> bool:
        {"naive": naive, "fixed": fixed, "device": device}[variant]()
        indices, offsets = (t.cpu() for t in results[variant])
        return bool(
            torch.equal(indices, expected_indices) and torch.equal(offsets, expected_offsets)
        )

    static_cu = torch.zeros_like(cu)
    q, k, v = (torch.zeros(num_tokens, 16, device="cuda") for _ in "qkv")

    def replay_checks(graph: Any, out: Any, write_metadata: bool) -> tuple[int, int]:
        passed = 0
        for _ in range(GRAPH_REPLAYS):
            new_lengths = random_lengths(rng, num_seqs, num_tokens)
            new_cu = torch.tensor(offsets_of(new_lengths), dtype=torch.int64)
            static_cu.copy_(new_cu)
            if write_metadata:
                reference.write_chunk_metadata(new_cu, indices_buffer, offsets_buffer, chunk_size)
            for static in (q, k, v):
                static.copy_(torch.randn(num_tokens, 16, device="cuda") / 4)
            graph.replay()
            passed += attention_matches(out, q, k, v, new_lengths)
        return passed, GRAPH_REPLAYS

    def fixed_in_graph() -> tuple[int, int]:
        graph, out = capture(
            lambda: reference.chunked_linear_attention(
                q, k, v, static_cu, indices_buffer, offsets_buffer, chunk_size
            )
        )
        return replay_checks(graph, out, write_metadata=True)

    def device_in_graph() -> tuple[int, int]:
        graph, out = capture(
            lambda: reference.chunked_linear_attention(q, k, v, static_cu, chunk_size=chunk_size)
        )
        return replay_checks(graph, out, write_metadata=False)

    description = (
        f"{num_seqs} sequences, {num_tokens} tokens, {len(expected_indices)} chunks "
        f"of {chunk_size} (static bound {bound})"
    )
    return Scenario(
        name,
        "chunks",
        description,
        {"naive": naive, "fixed": fixed, "device": device},
        matches_oracle,
        {"fixed": fixed_in_graph, "device": device_in_graph},
    )


def build_scenarios(seed: int) -> list[Scenario]:
    """The scenarios of the issue: four mapping batches, two chunk-index batches."""
    import numpy as np

    rng = np.random.default_rng(seed)
    mixed = rng.integers(1, 1024, size=64).tolist()
    return [
        mapping_scenario("decode_bs32", [1] * 32, rng),
        mapping_scenario("decode_bs256", [1] * 256, rng),
        mapping_scenario("prefill_8x512", [512] * 8, rng),
        mapping_scenario("prefill_32x1024", [1024] * 32, rng),
        chunk_scenario("prefill_4x4096", [4096] * 4, rng),
        chunk_scenario("prefill_64_mixed", mixed, rng),
    ]


# ----- running and reporting ----------------------------------------------------------------


def run_scenario(scenario: Scenario, steps: int, cycles: int) -> tuple[ScenarioResult, str]:
    """Measure every variant of ``scenario``; returns the result and the sync counter name."""
    result = ScenarioResult(scenario.name, scenario.family, scenario.description)
    counter = ""
    for variant in VARIANTS:
        step = scenario.steps[variant]
        measured = VariantResult(matches_oracle=scenario.matches_oracle(variant))
        measured.host_us, measured.host_mean_us = host_time_us(step, steps)
        measured.stall_ms = stall_ms(step, cycles)
        (
            measured.h2d_copies_per_step,
            measured.pinned_allocations_per_step,
            measured.stage_waits_per_step,
        ) = work_per_step(step, COUNTED_STEPS)
        measured.syncs_per_step, counter = syncs_per_step(step, COUNTED_STEPS)
        if variant in scenario.graph_checks:
            passed, total = scenario.graph_checks[variant]()
            measured.graph = f"ok {passed}/{total}" if passed == total else f"FAIL {passed}/{total}"
        result.variants[variant] = measured
    return result, counter


def format_table(result: ScenarioResult, steps: int, queued_ms: float) -> str:
    """A plain-text table of one scenario."""
    header = (
        "variant",
        f"host µs/step (median of {steps})",
        "mean",
        f"host ms, {queued_ms:g} ms queued",
        "syncs/step",
        "H2D copies/step",
        "pinned allocs/step",
        "stage waits/step",
        "same as oracle",
        "CUDA graph replay",
    )
    rows = [header]
    for name, v in result.variants.items():
        rows.append(
            (
                name,
                f"{v.host_us:.1f}",
                f"{v.host_mean_us:.1f}",
                f"{v.stall_ms:.2f}",
                f"{v.syncs_per_step:g}",
                f"{v.h2d_copies_per_step:g}",
                f"{v.pinned_allocations_per_step:g}",
                f"{v.stage_waits_per_step:g}",
                "yes" if v.matches_oracle else "NO",
                v.graph,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [f"{result.name}: {result.description}"]
    for index, row in enumerate(rows):
        lines.append(
            " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
        if index == 0:
            lines.append("-+-".join("-" * width for width in widths))
    naive, fixed = result.variants["naive"], result.variants["fixed"]
    lines.append(
        f"naive / fixed: host time {naive.host_us / fixed.host_us:.2f}x "
        f"(means: {naive.host_mean_us / fixed.host_mean_us:.2f}x), "
        f"queued-work time {naive.stall_ms / fixed.stall_ms:.1f}x"
    )
    return "\n".join(lines)


def evaluate_targets(results: list[ScenarioResult], queued_ms: float) -> list[dict[str, Any]]:
    """The issue's targets, each with the measured figure and whether it was met."""
    by_name = {r.name: r for r in results}
    decode = by_name["decode_bs32"].variants
    ratio = decode["naive"].host_us / decode["fixed"].host_us
    targets = [
        {
            "target": f"cached mapping >= {MAPPING_TARGET_RATIO:g}x faster than naive, decode bs32",
            "measured": f"{ratio:.2f}x",
            "met": ratio >= MAPPING_TARGET_RATIO,
        }
    ]
    for result in results:
        if result.family != "chunks":
            continue
        fixed = result.variants["fixed"]
        targets.append(
            {
                "target": f"precomputed chunk indices: 0 syncs and no stall, {result.name}",
                "measured": f"{fixed.syncs_per_step:g} syncs/step, "
                f"{fixed.stall_ms:.2f} ms with {queued_ms:g} ms queued",
                "met": fixed.syncs_per_step == 0 and fixed.stall_ms < NO_STALL_FRACTION * queued_ms,
            }
        )
    device_syncs = {r.name: r.variants["device"].syncs_per_step for r in results}
    targets.append(
        {
            "target": "device variants: 0 sync events",
            "measured": ", ".join(f"{name} {count:g}" for name, count in device_syncs.items()),
            "met": all(count == 0 for count in device_syncs.values()),
        }
    )
    return targets


def all_correct(results: list[ScenarioResult]) -> bool:
    """Whether every variant matched its oracle and every graph replay passed."""
    return all(
        v.matches_oracle and not v.graph.startswith("FAIL")
        for r in results
        for v in r.variants.values()
    )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m syncguard.runtime.bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--json", type=Path, help="write the results to this JSON file")
    parser.add_argument("--steps", type=int, default=300, help="timed steps per variant")
    parser.add_argument("--queued-ms", type=float, default=30.0, help="GPU work queued")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    args = parser.parse_args(argv)
    if args.steps < 1 or args.queued_ms <= 0:
        parser.error("--steps and --queued-ms must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run every scenario, print the tables and targets, optionally write JSON."""
    args = parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print(
            "syncguard.runtime.bench needs a CUDA GPU: torch.cuda.is_available() is False "
            f"(torch {torch.__version__}). Run it on a machine with one.",
            file=sys.stderr,
        )
        return 2
    torch.manual_seed(args.seed)
    cycles = sleep_cycles_for(args.queued_ms)
    results: list[ScenarioResult] = []
    counter = ""
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "command": "python -m syncguard.runtime.bench " + " ".join(sys.argv[1:]),
        "steps": args.steps,
        "queued_ms": args.queued_ms,
    }
    print(f"{meta['gpu']}, torch {meta['torch']} (CUDA {meta['cuda']}), {meta['date']}\n")
    for scenario in build_scenarios(args.seed):
        result, counter = run_scenario(scenario, args.steps, cycles)
        results.append(result)
        print(format_table(result, args.steps, args.queued_ms), end="\n\n", flush=True)
    meta["sync_counter"] = counter
    targets = evaluate_targets(results, args.queued_ms)
    print(f"sync events counted with {counter}")
    for target in targets:
        print(f"[{'met' if target['met'] else 'MISSED'}] {target['target']}: {target['measured']}")
    correct = all_correct(results)
    print(
        "results: all variants equal the oracle, all graph replays pass"
        if correct
        else "results: SOME RESULTS ARE WRONG (see the tables)"
    )
    if args.json is not None:
        payload = {
            "meta": meta,
            "scenarios": [
                {
                    "name": r.name,
                    "family": r.family,
                    "description": r.description,
                    "variants": {name: vars(v) for name, v in r.variants.items()},
                }
                for r in results
            ],
            "targets": targets,
            "all_correct": correct,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload, indent=2) + "\n")
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
