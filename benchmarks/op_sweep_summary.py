"""The operator sweep's classification: raw per-sample records -> ``op_sweep.json``.

Per operator: ``always`` (every sample that ran, empty inputs aside, synced), ``never``
or ``conditional``, with the argument forms that separate the syncing samples from the
others, how each sync was detected, the calls the rule tests lint, and the host time of
a syncing and a sync-free sample with 30 ms of GPU work queued. No torch needed:
``python benchmarks/op_sweep.py --from-samples`` classifies a saved raw file again.
"""

from __future__ import annotations

import json
import os
from typing import Any

CALLS = 8  # syncing and sync-free calls kept per op in the summary
BLOCKED_MS = 15.0  # extra host time, with ~30 ms queued, that says a call waited for the GPU


def separating_forms(samples: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Argument forms that tell the syncing samples of a conditional op from the others.

    ``sync_when``: forms present exactly in the syncing samples; ``sync_when_absent``:
    forms absent exactly from them (``has:num_classes``); ``sync_if``: forms only
    syncing samples have (each sufficient, none necessary); ``no_sync_if``: the reverse.
    """
    every = sorted({f for s in samples for f in s["features"]})
    synced = [set(s["features"]) for s in samples if syncs(s)]
    clean = [set(s["features"]) for s in samples if not syncs(s)]

    def only(group: list[set[str]], others: list[set[str]]) -> list[str]:
        return [f for f in every if any(f in g for g in group) and not any(f in o for o in others)]

    present = [f for f in every if all(f in g for g in synced) and not any(f in o for o in clean)]
    absent = [f for f in every if all(f in o for o in clean) and not any(f in g for g in synced)]
    return {
        "sync_when": present,
        "sync_when_absent": absent,
        "sync_if": only(synced, clean)[:12],
        "no_sync_if": only(clean, synced)[:12],
    }


def blocked(sample: dict[str, Any]) -> bool | None:
    """Whether the sample waited for the queued GPU work (None: not timed). A serial
    timing, when there is one, decides; else the timing taken while workers ran."""
    if "serial_ms" in sample:
        idle, queued = sample["serial_ms"]
    else:
        idle, queued = sample.get("idle_ms"), sample.get("blocked_ms")
    if queued is None or idle is None:
        return None
    return bool(queued - idle > BLOCKED_MS)


def syncs(sample: dict[str, Any]) -> bool:
    """A detector saw a sync, or the host waited for the queued work."""
    return bool(sample.get("synced")) or bool(blocked(sample))


def classify(record: dict[str, Any]) -> dict[str, Any]:
    """The per-op summary committed in ``op_sweep.json``."""
    samples = record["samples"]
    ran_all = [s for s in samples if "error" not in s]
    # An empty input returns before any kernel runs; per-step data is not empty.
    ran = [s for s in ran_all if "empty" not in s["features"]] or ran_all
    synced = [s for s in ran if syncs(s)]
    if not ran:
        verdict = "error"
    elif len(synced) == len(ran):
        verdict = "always"
    elif synced:
        verdict = "conditional"
    else:
        verdict = "never"
    summary: dict[str, Any] = {
        key: record[key]
        for key in ("op", "source", "spelling", "aliases", "dtype", "name", "variant")
        if key in record
    }
    summary.update(
        verdict=verdict,
        samples=len(samples),
        ran=len(ran),
        synced=len(synced),
        errors=len(samples) - len(ran_all),
        empty=len(ran_all) - len(ran),
    )
    silent = [s for s in ran if not s["synced"] and blocked(s)]
    if silent:
        summary["blocked_undetected"] = len(silent)
    quiet = [s for s in synced if s["synced"] and blocked(s) is False]
    if quiet:
        summary["detected_not_blocked"] = len(quiet)
    if record.get("error"):
        summary["error"] = record["error"]
    if synced:
        summary["detected"] = {
            "debug_mode": sum(1 for s in synced if s.get("debug")),
            "audit": sum(1 for s in synced if s.get("audit")),
            "audit_only": sum(1 for s in synced if s.get("audit") and not s.get("debug")),
            "debug_only": sum(1 for s in synced if s.get("debug") and not s.get("audit")),
            "blocked": sum(1 for s in synced if blocked(s)),
        }
        summary["audit_kinds"] = sorted({e for s in synced for e in s.get("audit", ())})[:6]
    if verdict == "conditional":
        summary["forms"] = separating_forms(ran)
    if verdict in ("always", "conditional", "never"):
        indexed = [(i, s) for i, s in enumerate(samples) if any(s is r for r in ran) and s["call"]]
        chosen = [(i, s) for i, s in indexed if syncs(s)][:CALLS]
        chosen += [(i, s) for i, s in indexed if not syncs(s)][: CALLS if synced else 3]
        summary["calls"] = [
            {
                "call": s["call"],
                "synced": syncs(s),
                "index": i,
                **({"host_ms": s["serial_ms"]} if "serial_ms" in s else {}),
            }
            for i, s in sorted(chosen, key=lambda pair: pair[0])
        ]
    timed = [(i, s) for i, s in enumerate(samples) if "serial_ms" in s and any(s is r for r in ran)]
    for label, wanted in (("syncing", True), ("sync_free", False)):
        found = next((s["serial_ms"] for _, s in timed if syncs(s) is wanted), None)
        if found is not None:
            summary.setdefault("host_ms", {})[label] = {"idle": found[0], "queued_30ms": found[1]}
    first_errors = sorted({s["error"] for s in samples if "error" in s})[:2]
    if first_errors:
        summary["sample_errors"] = first_errors
    return summary


def write_summary(env: dict[str, str], records: list[dict[str, Any]], out: str) -> int:
    """Classify every op and write ``op_sweep.json``; print the syncing ops."""
    summaries = sorted((classify(record) for record in records), key=lambda s: s["op"])
    verdicts = [s["verdict"] for s in summaries]
    document = {
        **env,
        "counts": {
            "entries": len(summaries),
            "samples": sum(s["samples"] for s in summaries),
            "sample_errors": sum(s["errors"] for s in summaries),
            **{v: verdicts.count(v) for v in ("always", "conditional", "never", "error")},
        },
        "ops": summaries,
    }
    path = os.path.join(out, "op_sweep.json")
    with open(path, "w") as handle:
        json.dump(document, handle, indent=1)
        handle.write("\n")
    print(json.dumps(document["counts"]))
    for summary in summaries:
        if summary["verdict"] in ("always", "conditional"):
            timing = summary.get("host_ms", "")
            print(f"{summary['verdict']:<12} {summary['op']:<40} "
                  f"{summary['synced']}/{summary['ran']} {timing}")  # fmt: skip
    print(f"wrote {path}")
    return 0
