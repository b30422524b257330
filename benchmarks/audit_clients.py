"""Run real clients with and without ``sync_audit(mode="record")``; cross-check the linter.

Each client (``audit_client_*.py`` beside this file: timm, Lightning, torch_geometric,
torch.compile, a decoding loop) is run seeded three times: plainly, under the audit, and
plainly again (the control: is the client deterministic at all?). The outputs of the
audited run must be bitwise identical to the plain run's, and no run may raise. Then
``syncguard verify`` runs it once more and classifies each runtime sync against the
linter's findings on the client's file. Writes ``clients.json`` and ``clients.md`` into
the output folder and prints the tables.

Usage, with syncguard importable (the linter needs libcst):
    python benchmarks/audit_clients.py OUT_DIR [--clients timm,gnn,...] [--device cpu]
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS

import torch

from syncguard.runtime import sync_audit
from syncguard.runtime._report import summarize
from syncguard.runtime.verify import verify

CLIENTS = ("timm", "lightning", "gnn", "compile", "decode")
HERE = Path(__file__).resolve().parent
REPO = HERE.parent


def shown(path: str) -> str:
    """A path as RESULTS.md shows it: repository-relative, or from site-packages on."""
    resolved = Path(path).resolve() if not path.startswith("<") else Path(path)
    try:
        return resolved.relative_to(REPO).as_posix()
    except ValueError:
        pass
    parts = resolved.as_posix().split("/")
    for marker in ("site-packages", "dist-packages"):
        if marker in parts:
            return "/".join(parts[parts.index(marker) + 1 :])
    return resolved.as_posix()


def differences(left: Any, right: Any, where: str = "") -> list[str]:
    """Where two outputs differ, bit for bit (tensors: dtype, shape and bytes)."""
    if isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor):
        if (left.dtype, left.shape) != (right.dtype, right.shape):
            return [
                f"{where}: {left.dtype}{tuple(left.shape)} vs {right.dtype}{tuple(right.shape)}"
            ]
        bytes_left = left.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
        bytes_right = right.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
        return [] if torch.equal(bytes_left, bytes_right) else [f"{where}: values differ"]
    if isinstance(left, dict) and isinstance(right, dict):
        if left.keys() != right.keys():
            return [f"{where}: keys differ"]
        return [d for key in left for d in differences(left[key], right[key], f"{where}.{key}")]
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        if len(left) != len(right):
            return [f"{where}: length {len(left)} vs {len(right)}"]
        pairs = zip(left, right, strict=True)
        return [d for i, (a, b) in enumerate(pairs) for d in differences(a, b, f"{where}[{i}]")]
    if isinstance(left, float) and isinstance(right, float):
        same = (math.isnan(left) and math.isnan(right)) or left.hex() == right.hex()
        return [] if same else [f"{where}: {left!r} vs {right!r}"]
    return [] if left == right else [f"{where}: {left!r} vs {right!r}"]


def timed_run(
    client: Any, device: str, seed: int, audit: Any = None
) -> tuple[Any, str, float, list[int]]:
    """(outputs, error, seconds, events recorded at each step's end) of one seeded run."""
    boundaries: list[int] = []
    on_step: Callable[[int], None] | None = None
    if audit is not None:
        on_step = lambda step: boundaries.append(len(audit.events))  # noqa: E731
    state = client.make(device, seed)
    start = time.perf_counter()
    try:
        if audit is None:
            outputs = client.run(state)
        else:
            with audit:
                outputs = client.run(state, on_step)
        error = ""
    except Exception:
        outputs, error = None, traceback.format_exc(limit=6)
    if device == "cuda":
        torch.cuda.synchronize()
    return outputs, error, time.perf_counter() - start, boundaries


def site_rows(events: list[Any], boundaries: list[int]) -> list[dict[str, Any]]:
    """Per call site: total, in the first step, and per later step."""
    first = boundaries[0] if boundaries else len(events)
    steps = max(len(boundaries), 1)
    first_counts = {(r.path, r.line, r.op): r.count for r in summarize(events[:first])}
    rows = []
    for row in summarize(events):
        in_first = first_counts.get((row.path, row.line, row.op), 0)
        later = (row.count - in_first) / (steps - 1) if steps > 1 else None
        rows.append(
            {
                "site": f"{shown(row.path)}:{row.line}",
                "op": row.op,
                "kind": row.kind,
                "function": row.function,
                "count": row.count,
                "first_step": in_first,
                "per_later_step": later,
            }
        )
    return rows


def verify_summary(report: Any) -> dict[str, Any]:
    def sites(events: list[Any]) -> list[str]:
        return [f"{shown(r.path)}:{r.line} {r.op} x{r.count}" for r in summarize(events)]

    return {
        "exit_code": report.exit_code,
        "error": report.error,
        "confirmed": sites([event for event, _ in report.confirmed]),
        "confirmed_by": sorted(
            {f"{shown(f.path)}:{f.line} {f.code}" for _, found in report.confirmed for f in found}
        ),
        "missed": sites(report.missed),
        "outside": sites(report.outside),
        "never_fired": [f"{shown(f.path)}:{f.line} {f.code}" for f in report.never_fired],
        "not_executed": report.not_executed,
        "suppressed": report.suppressed,
    }


def run_client(name: str, device: str, seed: int) -> dict[str, Any]:
    client = importlib.import_module(f"audit_client_{name}")
    plain, plain_error, plain_s, _ = timed_run(client, device, seed)
    audit = sync_audit("record")
    audited, audited_error, audited_s, boundaries = timed_run(client, device, seed, audit)
    control, control_error, _, _ = timed_run(client, device, seed)
    result: dict[str, Any] = {
        "client": name,
        "file": shown(client.__file__),
        "device": device,
        "errors": {"plain": plain_error, "audited": audited_error, "control": control_error},
        "identical": None,
        "control_identical": None,
        "seconds": {"plain": round(plain_s, 3), "audited": round(audited_s, 3)},
        "detection": audit.detection,
        "steps": len(boundaries),
        "events": audit.count,
        "sites": site_rows(audit.events, boundaries),
    }
    if not (plain_error or audited_error):
        result["identical"] = not differences(plain, audited)
        result["differences"] = differences(plain, audited)[:5]
    if not (plain_error or control_error):
        result["control_identical"] = not differences(plain, control)
    try:
        report = verify(client.run, lambda: (client.make(device, seed),), scope="all")
        result["verify"] = verify_summary(report)
    except Exception as error:  # a verify failure is a result to report, not a crash
        result["verify"] = {"error": f"{type(error).__name__}: {error}"}
    return result


def markdown(results: list[dict[str, Any]]) -> str:
    lines = [
        "| client | identical with/without audit | control run identical | steps | syncs |"
        " confirmed | missed by the linter | outside linted files | never fired |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        v = r.get("verify", {})
        lines.append(
            f"| {r['client']} | {_yes(r['identical'])} | {_yes(r['control_identical'])} |"
            f" {r['steps']} | {r['events']} | {len(v.get('confirmed', []))} |"
            f" {len(v.get('missed', []))} | {len(v.get('outside', []))} |"
            f" {len(v.get('never_fired', []))} |"
        )
    for r in results:
        lines += ["", f"**{r['client']}** (`{r['file']}`, {r['detection']})", ""]
        if any(r["errors"].values()):
            lines += [f"    {kind}: {text}" for kind, text in r["errors"].items() if text]
        lines += [
            "| site | op | kind | total | first step | per later step |",
            "|---|---|---|---|---|---|",
        ]
        for s in r["sites"]:
            later = "" if s["per_later_step"] is None else f"{s['per_later_step']:g}"
            lines.append(
                f"| `{s['site']}` | `{s['op']}` | {s['kind']} | {s['count']} |"
                f" {s['first_step']} | {later} |"
            )
        for key in ("confirmed", "confirmed_by", "missed", "outside", "never_fired", "error"):
            if r.get("verify", {}).get(key):
                lines.append(f"- verify {key}: {r['verify'][key]}")
    return "\n".join(lines)


def _yes(value: bool | None) -> str:
    return "n/a" if value is None else ("yes" if value else "**NO**")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    sys.path.insert(0, str(HERE))
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for name in args.clients.split(","):
        start = time.perf_counter()
        results.append(run_client(name, args.device, args.seed))
        print(f"{name}: {time.perf_counter() - start:.1f} s", file=sys.stderr, flush=True)
    (args.out / "clients.json").write_text(json.dumps(results, indent=2, default=str))
    text = markdown(results)
    (args.out / "clients.md").write_text(text + "\n")
    print(text)
    failed = any(r["identical"] is not True or any(r["errors"].values()) for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
