"""What the audit costs when nothing syncs.

1. A decorated call with the audit switched off (``SYNCGUARD_AUDIT=off``): µs extra per
   call over the plain function (target: under 2 µs); and, for reference, a decorated call
   with the audit on (one activation per call).
2. Wrapped methods (``Tensor.to`` in its common forms, ``copy_``) that do not sync: µs
   per call with an audit active over the plain call (target: at most 3 µs extra).
3. A loop of small ops with an audit active and no sync: time against the plain loop
   (target on CUDA: within 5 %), and under a no-op ``TorchDispatchMode`` for comparison
   (why the CUDA path uses no dispatch mode). A second loop calls a wrapped method
   (``Tensor.to``) every iteration. Without CUDA the loops run on CPU under simulation,
   which is informational only.

Usage, with syncguard importable: ``python benchmarks/audit_overhead.py``.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import timeit
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from syncguard.runtime import ENV_VAR, sync_audit


class NoOpMode(TorchDispatchMode):
    """A dispatch mode that only forwards each op."""

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


_TO = vars(torch._C.TensorBase)["to"]  # the methods the audit wraps, unwrapped
_COPY = vars(torch._C.TensorBase)["copy_"]


def per_call_us(func: Callable[[], object], number: int) -> float:
    """Best of 7 repeats, µs per call."""
    return min(timeit.repeat(func, number=number, repeat=7)) / number * 1e6


def decorator_costs() -> None:
    def plain(value: int) -> int:
        return value

    decorated = sync_audit("record")(plain)
    os.environ[ENV_VAR] = "off"
    try:
        base = per_call_us(lambda: plain(1), 200_000)
        off = per_call_us(lambda: decorated(1), 200_000)
    finally:
        del os.environ[ENV_VAR]
    on = per_call_us(lambda: decorated(1), 5_000)
    print("| call | µs per call | extra µs |")
    print("|---|---|---|")
    print(f"| plain function | {base:.3f} | |")
    print(f"| decorated, {ENV_VAR}=off | {off:.3f} | {off - base:.3f} |")
    print(f"| decorated, audit on (record, no sync) | {on:.3f} | {on - base:.3f} |")
    verdict = "met" if off - base < 2.0 else "MISSED"
    print(f"\nextra cost of a switched-off decorated call: {off - base:.3f} µs (< 2 µs: {verdict})")


def wrapped_call_costs(device: str) -> None:
    """µs per call of wrapped methods (none of them a sync), plain and with an audit active."""
    y = torch.randn(256, device=device)
    target = torch.device(device)
    calls: dict[str, Callable[[], object]] = {
        "y.to(torch.float32)": lambda: y.to(torch.float32),
        "y.to(device)": lambda: y.to(target),
        "y.to(device, non_blocking=True)": lambda: y.to(target, non_blocking=True),
        "y.to(copy=True, dtype=, device=)": lambda: y.to(
            copy=True, dtype=torch.float32, device=target
        ),
        "y.copy_(y)": lambda: y.copy_(y),
    }
    unwrapped = {
        "y.to(torch.float32)": lambda: _TO(y, torch.float32),
        "y.to(device)": lambda: _TO(y, target),
        "y.to(device, non_blocking=True)": lambda: _TO(y, target, non_blocking=True),
        "y.to(copy=True, dtype=, device=)": lambda: _TO(
            y, copy=True, dtype=torch.float32, device=target
        ),
        "y.copy_(y)": lambda: _COPY(y, y),
    }
    print(f"\nwrapped methods on {device}, µs per call (best of 7 x 20000; no sync among them;")
    print("the audit's CUDA path, also on CPU; 'debug mode only' calls the unwrapped method")
    print("with the audit active, so 'wrapper' is the wrapper's own cost):")
    print("| call | plain | audit active | debug mode only | extra | wrapper |")
    print("|---|---|---|---|---|---|")
    worst = 0.0
    for label, call in calls.items():
        plain = per_call_us(call, 20_000)
        with sync_audit("record", simulate=False):
            audited = per_call_us(call, 20_000)
            armed = per_call_us(unwrapped[label], 20_000)
        worst = max(worst, audited - plain)
        print(
            f"| `{label}` | {plain:.2f} | {audited:.2f} | {armed:.2f} | {audited - plain:.2f}"
            f" | {audited - armed:.2f} |"
        )
    verdict = "met" if worst <= 3.0 else "MISSED"
    print(f"\nworst extra cost of a wrapped call: {worst:.2f} µs (<= 3 µs: {verdict})")


def loop_costs(device: str) -> None:
    x = torch.randn(1024, device=device)
    steps = 2000

    def small_ops() -> None:
        y = x
        for _ in range(steps):
            y = y * 1.0001 + 0.5

    def wrapped_method() -> None:
        y = x
        for _ in range(steps):
            y = y.to(torch.float32) * 1.0001

    def settle() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    def timed(loop: Callable[[], None], context: Callable[[], Any] | None) -> float:
        settle()
        start = time.perf_counter()
        if context is None:
            loop()
        else:
            with context():
                loop()
        settle()
        return (time.perf_counter() - start) * 1e3

    simulate = device != "cuda"
    contexts: dict[str, Callable[[], Any] | None] = {
        "plain": None,
        "sync_audit(record)": lambda: sync_audit("record", simulate=simulate),
        "no-op TorchDispatchMode": NoOpMode,
    }
    for name, loop in (("x * 1.0001 + 0.5", small_ops), ("x.to(float32) * 1.0001", wrapped_method)):
        for context in contexts.values():  # warm-up
            timed(loop, context)
        samples: dict[str, list[float]] = {label: [] for label in contexts}
        for _ in range(9):  # interleaved, so drifts hit every variant alike
            for label, context in contexts.items():
                samples[label].append(timed(loop, context))
        base = statistics.median(samples["plain"])
        print(f"\nloop of {steps} iterations of `{name}` on {device} (median of 9):")
        print("| variant | ms | ratio to plain |")
        print("|---|---|---|")
        for label, values in samples.items():
            middle = statistics.median(values)
            print(f"| {label} | {middle:.2f} | {middle / base:.3f} |")


def main() -> int:
    print(f"torch {torch.__version__}, Python {sys.version.split()[0]}")
    decorator_costs()
    if torch.cuda.is_available():
        print(f"\nGPU: {torch.cuda.get_device_name(0)}")
        wrapped_call_costs("cuda")
        loop_costs("cuda")
    else:
        print("\nCUDA is not available: the loops run on CPU under simulation (informational)")
        wrapped_call_costs("cpu")
        loop_costs("cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main())
