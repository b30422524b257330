"""Does ``x[mask] = values`` block the host? (SG113; GROUND_TRUTH lists only the scalar form.)

For each form, queue about 20 ms of GPU work, then time how long the host spends in the
statement and count the warnings ``torch.cuda.set_sync_debug_mode("warn")`` gives for it.
Prints a markdown table. Needs a CUDA GPU.
"""

from __future__ import annotations

import time
import warnings

import torch


def _queue_work(a: torch.Tensor, repeats: int) -> None:
    for _ in range(repeats):
        a = a @ a
        a = a / a.norm()


def _calibrate(a: torch.Tensor) -> int:
    """Matmul repeats that keep the GPU busy for about 20 ms."""
    _queue_work(a, 3)  # warm-up
    torch.cuda.synchronize()
    start = time.perf_counter()
    _queue_work(a, 20)
    torch.cuda.synchronize()
    per_repeat = (time.perf_counter() - start) / 20
    return max(1, round(0.020 / per_repeat))


def _drain_ms(a: torch.Tensor, repeats: int) -> float:
    """How long the queued work takes, measured the same way (host waits for all of it)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    _queue_work(a, repeats)
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    device = torch.device("cuda")
    a = torch.randn(8192, 8192, device=device)
    repeats = _calibrate(a)
    queued = _drain_ms(a, repeats)
    n = 1 << 20
    x = torch.zeros(n, device=device)
    mask = torch.rand(n, device=device) > 0.5
    count = int(mask.sum())
    values = torch.randn(count, device=device)
    scalar_device = torch.tensor(3.0, device=device)
    forms = {
        "x[mask] = values (1-D device tensor)": lambda: x.__setitem__(mask, values),
        "x[mask] = device 0-d tensor": lambda: x.__setitem__(mask, scalar_device),
        "x[mask] = 0.0 (Python scalar)": lambda: x.__setitem__(mask, 0.0),
        "x.masked_fill_(mask, 0.0)": lambda: x.masked_fill_(mask, 0.0),
        "torch.where(mask, y, x) (sync-free form)": lambda: torch.where(mask, scalar_device, x),
    }
    print(
        f"torch {torch.__version__}, {torch.cuda.get_device_name()}, {queued:.1f} ms of work "
        f"queued before each statement ({repeats} 8192x8192 matmuls), n = {n}"
    )
    print()
    print("| form | host time in the statement (ms, median of 5) | sync warnings |")
    print("| --- | ---: | ---: |")
    for name, run in forms.items():
        run()  # warm-up (kernels, allocator)
        torch.cuda.synchronize()
        times = []
        caught_counts = []
        for _ in range(5):
            _queue_work(a, repeats)
            torch.cuda.set_sync_debug_mode("warn")
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                start = time.perf_counter()
                run()
                elapsed = time.perf_counter() - start
            torch.cuda.set_sync_debug_mode("default")
            torch.cuda.synchronize()
            times.append(elapsed * 1000)
            caught_counts.append(sum("synchroniz" in str(w.message) for w in caught))
        times.sort()
        print(f"| {name} | {times[2]:.2f} | {max(caught_counts)} |")


if __name__ == "__main__":
    main()
