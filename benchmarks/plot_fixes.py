"""Plot the reference-fix benchmark: ``python benchmarks/plot_fixes.py FIXES_JSON [OUT_PNG]``.

Reads the JSON written by ``python -m syncguard.runtime.bench --json FIXES_JSON`` and draws
naive / fixed / device per scenario: host time per step for the token-to-request mapping,
host time with GPU work queued for the chunk indices (where the naive version waits for
the GPU). Writes ``benchmarks/fixes.png`` unless OUT_PNG is given.

Needs matplotlib, which syncguard itself does not depend on: ``pip install matplotlib``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after choosing the non-interactive backend

VARIANTS = ("naive", "fixed", "device")
COLOURS = {"naive": "#c44e52", "fixed": "#55a868", "device": "#4c72b0"}
DEFAULT_OUTPUT = Path(__file__).resolve().parent / "fixes.png"


def draw_panel(axes: Any, scenarios: list[dict[str, Any]], metric: str, label: str) -> None:
    """Grouped bars of ``metric`` for each scenario and variant, values written on top."""
    width = 0.27
    for offset, variant in enumerate(VARIANTS):
        xs = [index + (offset - 1) * width for index in range(len(scenarios))]
        values = [scenario["variants"][variant][metric] for scenario in scenarios]
        bars = axes.bar(xs, values, width, label=variant, color=COLOURS[variant])
        axes.bar_label(bars, labels=[f"{value:.3g}" for value in values], fontsize=7)
    axes.set_xticks(range(len(scenarios)), [scenario["name"] for scenario in scenarios])
    axes.set_ylabel(label)
    axes.tick_params(axis="x", labelsize=8)
    axes.legend(fontsize=8)


def plot(results: dict[str, Any], output: Path) -> None:
    """Write the two-panel figure for ``results`` to ``output``."""
    meta = results["meta"]
    mapping = [s for s in results["scenarios"] if s["family"] == "mapping"]
    chunks = [s for s in results["scenarios"] if s["family"] == "chunks"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), width_ratios=(2, 1.2))
    draw_panel(left, mapping, "host_us", "host µs per step (median)")
    left.set_title("token-to-request mapping, 3 consumers per step")
    draw_panel(
        right, chunks, "stall_ms", f"host ms per step, {meta['queued_ms']:g} ms GPU work queued"
    )
    right.set_yscale("log")
    right.set_title("chunk indices for chunked linear attention")
    figure.suptitle(
        f"syncguard reference fixes: {meta['gpu']}, torch {meta['torch']}, {meta['date']}"
    )
    figure.tight_layout()
    figure.savefig(output, dpi=120)


def main(argv: list[str]) -> int:
    """Entry point: plot FIXES_JSON to OUT_PNG (default benchmarks/fixes.png)."""
    if len(argv) not in (1, 2):
        print(__doc__.splitlines()[0], file=sys.stderr)
        return 2
    source = Path(argv[0])
    try:
        results = json.loads(source.read_text())
    except (OSError, json.JSONDecodeError) as error:
        print(f"{source}: cannot read benchmark results: {error}", file=sys.stderr)
        return 2
    output = Path(argv[1]) if len(argv) == 2 else DEFAULT_OUTPUT
    plot(results, output)
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
