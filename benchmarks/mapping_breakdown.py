"""Host cost of each piece of the token-to-request mapping step, naive and cached.

    python benchmarks/mapping_breakdown.py [--batch 32] [--samples 2000] [--device cuda]

Times every component of one decode step of ``syncguard.runtime.reference`` separately
(validation, numpy fill, view creation, the copy launch, event record and query, a fresh
pinned tensor...), then the whole steps as ``python -m syncguard.runtime.bench`` runs them:
three consumers per step. Each sample is one call, timed with ``perf_counter`` after
``torch.cuda.synchronize()`` (an idle GPU, as in the bench); the table gives the median, the
10th and 90th percentiles and the mean, in µs. ``--device cpu`` runs the rows that need no
GPU, to try the script on a machine without one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from syncguard.runtime import reference

CONSUMERS_PER_STEP = 3
WARMUP_CALLS = 200


@dataclass
class Component:
    """One timed piece: ``run(setup())`` is timed, ``setup`` is not."""

    group: str
    name: str
    run: Callable[[Any], object]
    setup: Callable[[], Any] = lambda: None
    needs_cuda: bool = False


def time_component(
    component: Component, samples: int, synchronize: Callable[[], None]
) -> list[float]:
    """Host µs of ``samples`` single calls, each after a synchronize and an untimed setup."""
    for _ in range(WARMUP_CALLS):
        component.run(component.setup())
    times = []
    for _ in range(samples):
        argument = component.setup()
        synchronize()
        start = time.perf_counter()
        component.run(argument)
        times.append((time.perf_counter() - start) * 1e6)
    synchronize()
    return times


def components(batch: int, device: str) -> list[Component]:
    """The pieces of a decode step of ``batch`` requests of one token each."""
    lengths = [1] * batch
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    qsl_cpu = torch.from_numpy(offsets)
    qsl = qsl_cpu.to(device)
    num_tokens = int(offsets[-1])
    lengths_array = offsets[1:] - offsets[:-1]
    buffer = torch.zeros(num_tokens, dtype=reference.MAPPING_DTYPE, device=device)
    naive_buffers = [torch.zeros_like(buffer) for _ in range(CONSUMERS_PER_STEP)]
    pinned = device != "cpu"
    stage = torch.zeros(256, dtype=reference.MAPPING_DTYPE, pin_memory=pinned)
    stage_array = stage.numpy()
    stage_view = stage[:num_tokens]
    mapping = np.repeat(np.arange(batch, dtype=np.int32), lengths_array)
    requests = reference._token_requests(offsets, lengths_array, "query_start_loc_cpu")

    def new_metadata() -> reference.StepMetadata:
        return reference.StepMetadata(qsl_cpu, qsl, num_tokens)

    def built_metadata() -> reference.StepMetadata:
        metadata = new_metadata()
        metadata.token_to_req_indices(buffer)
        return metadata

    def fixed_step(_: object) -> None:
        metadata = reference.StepMetadata(qsl_cpu, qsl, num_tokens)
        for _consumer in range(CONSUMERS_PER_STEP):
            metadata.token_to_req_indices(buffer)

    def naive_step(_: object) -> None:
        for naive_buffer in naive_buffers:
            reference.naive_token_to_req_indices(qsl_cpu, naive_buffer, num_tokens)

    def fresh_pinned() -> torch.Tensor:
        return torch.from_numpy(mapping).pin_memory() if pinned else torch.from_numpy(mapping)

    legacy_event = torch.cuda.Event() if pinned else None
    event = torch.Event(device=device) if pinned else None
    return [
        Component(
            "fixed",
            "StepMetadata(...) (validation, request of each token)",
            lambda _: new_metadata(),
        ),
        Component(
            "fixed",
            "  in it: offset checks + lengths (order left to repeat)",
            lambda _: reference._host_offsets(qsl_cpu, "query_start_loc_cpu", check_order=False),
        ),
        Component(
            "fixed",
            "  in it: request of each token + order check (repeat)",
            lambda _: reference._token_requests(offsets, lengths_array, "query_start_loc_cpu"),
        ),
        Component(
            "fixed",
            "numpy fill of the stage (stage[:n] = requests)",
            lambda _: stage_array.__setitem__(slice(num_tokens), requests),
        ),
        Component(
            "fixed", "stage[:n] (a torch view; the pool caches them)", lambda _: stage[:num_tokens]
        ),
        Component(
            "fixed",
            "buffer.copy_(pinned stage view, non_blocking=True)",
            lambda _: buffer.copy_(stage_view, non_blocking=True),
            needs_cuda=True,
        ),
        Component(
            "fixed",
            "stage_pool.upload(buffer, n, requests): fill, copy, event",
            lambda _: reference.stage_pool.upload(buffer, num_tokens, requests),
        ),
        Component(
            "fixed",
            "first consumer: token_to_req_indices (build + copy)",
            lambda metadata: metadata.token_to_req_indices(buffer),
            setup=new_metadata,
        ),
        Component(
            "fixed",
            "later consumer: token_to_req_indices (cached)",
            lambda metadata: metadata.token_to_req_indices(buffer),
            setup=built_metadata,
        ),
        Component("fixed", f"whole step: init + {CONSUMERS_PER_STEP} consumers", fixed_step),
        Component(
            "events",
            "torch.cuda.Event().record() (Python, current_stream())",
            lambda _: legacy_event.record(),  # type: ignore[union-attr]
            needs_cuda=True,
        ),
        Component(
            "events",
            "torch.cuda.Event().query()",
            lambda _: legacy_event.query(),  # type: ignore[union-attr]
            needs_cuda=True,
        ),
        Component(
            "events",
            "torch.cuda.current_stream()",
            lambda _: torch.cuda.current_stream(),
            needs_cuda=True,
        ),
        Component(
            "events",
            "torch.Event(device).record() (C++)",
            lambda _: event.record(),  # type: ignore[union-attr]
            needs_cuda=True,
        ),
        Component(
            "events",
            "torch.Event(device).query() (C++)",
            lambda _: event.query(),  # type: ignore[union-attr]
            needs_cuda=True,
        ),
        Component(
            "naive",
            "offset checks + lengths + order check (_host_offsets)",
            lambda _: reference._host_offsets(qsl_cpu, "query_start_loc_cpu"),
        ),
        Component(
            "naive",
            "np.repeat(np.arange(n), lengths)",
            lambda _: np.repeat(np.arange(batch, dtype=np.int32), lengths_array),
        ),
        Component("naive", "torch.from_numpy(mapping)", lambda _: torch.from_numpy(mapping)),
        Component(
            "naive",
            "torch.from_numpy(mapping).pin_memory() (a fresh pinned tensor)",
            lambda _: fresh_pinned(),
            needs_cuda=True,
        ),
        Component(
            "naive",
            "buffer[:n].copy_(fresh pinned, non_blocking=True)",
            lambda host: buffer[:num_tokens].copy_(host, non_blocking=True),
            setup=fresh_pinned,
            needs_cuda=True,
        ),
        Component(
            "naive", "buffer[n:n].zero_() (empty padding)", lambda _: buffer[num_tokens:].zero_()
        ),
        Component(
            "naive",
            "one consumer: naive_token_to_req_indices",
            lambda _: reference.naive_token_to_req_indices(qsl_cpu, buffer, num_tokens),
        ),
        Component("naive", f"whole step: {CONSUMERS_PER_STEP} consumers", naive_step),
        Component("other", "buffer.zero_() (one small kernel launch)", lambda _: buffer.zero_()),
        Component(
            "other",
            "token_to_req_indices_device (whole device variant)",
            lambda _: reference.token_to_req_indices_device(qsl, num_tokens),
        ),
    ]


def format_rows(rows: Sequence[tuple[str, str, list[float]]]) -> str:
    """A plain-text table: group, component, median, p10, p90, mean."""
    header = ("group", "component", "median µs", "p10", "p90", "mean")
    lines = [header]
    for group, name, times in rows:
        deciles = statistics.quantiles(times, n=10)
        lines.append(
            (
                group,
                name,
                f"{statistics.median(times):.2f}",
                f"{deciles[0]:.2f}",
                f"{deciles[-1]:.2f}",
                f"{statistics.fmean(times):.2f}",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    text = []
    for index, line in enumerate(lines):
        cells = [
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ]
        text.append(" | ".join(cells))
        if index == 0:
            text.append("-+-".join("-" * width for width in widths))
    return "\n".join(text)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32, help="decode requests (one token each)")
    parser.add_argument("--samples", type=int, default=2000, help="timed calls per component")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = parser.parse_args(argv)
    if args.batch < 1 or args.samples < 10:
        parser.error("--batch must be >= 1 and --samples >= 10")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Time every component and print the table."""
    args = parse_args(argv)
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("mapping_breakdown.py needs a CUDA GPU (or --device cpu)", file=sys.stderr)
        return 2
    synchronize = torch.cuda.synchronize if cuda else (lambda: None)
    where = torch.cuda.get_device_name() if cuda else "CPU only (CUDA rows skipped)"
    print(f"{where}, torch {torch.__version__}, decode batch {args.batch}, {args.samples} samples")
    rows = [
        (component.group, component.name, time_component(component, args.samples, synchronize))
        for component in components(args.batch, args.device)
        if cuda or not component.needs_cuda
    ]
    print(format_rows(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
