"""Operator sweep: which torch operators make the host wait for the GPU (issue 14).

Runs every entry of torch's OpInfo database (``op_db`` and the foreach databases), each
sample input on the GPU, plus the extra cases of :mod:`op_sweep_extras` (operators real
engines call that OpInfo lacks). Each sample runs twice, after the device has drained:

1. under ``torch.cuda.set_sync_debug_mode("error")``: the op raises at its first sync;
2. under ``syncguard.runtime.sync_audit(mode="record")``: the audit's detectors (debug-mode
   warnings, explicit synchronizes, blocking and pageable copies).

A sample synced when either saw a sync; a sample that fails for another reason is an
error, not a sync. Per operator the verdict is ``always`` (every sample that ran synced),
``never`` or ``conditional``, with the argument forms that separate the syncing samples
from the others. Then, one at a time, the first syncing (and, for conditional ops, the
first sync-free) sample of each op is timed with about 30 ms of GPU work queued
(``torch.cuda._sleep``): an op whose host time is about 30 ms waited for the queue.

The sweep runs in worker processes (``--workers``), each over a share of the ops; a
worker that dies or leaves the device in an error state is restarted after the op it
was on, which is recorded as crashed. Usage, with syncguard importable::

    python benchmarks/op_sweep.py --out DIR                # GPU: DIR/op_sweep.json + logs
    python benchmarks/op_sweep.py --dry --out DIR          # CPU, a few ops, simulated audit
    python benchmarks/op_sweep.py --dry --ops cov,nonzero  # CPU, the named ops

``--dry`` runs on the CPU with a simulated audit (no debug mode there): it checks the
sweep end to end, it does not measure syncs. The committed result is
``benchmarks/op_sweep.json``; the rule tests read it.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

SYNC_MESSAGE = "called a synchronizing CUDA operation"
DRY_OPS = (
    "nonzero",
    "cov",
    "masked_fill",
    "nn.functional.one_hot",
    "add",
    "extra:_grouped_mm",
    "extra:Tensor.copy_",
)
MAX_SAMPLES = 48
PREFERRED_DTYPES = ("float32", "int64", "bool", "complex64", "float64", "bfloat16")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from op_sweep_summary import blocked, syncs, write_summary  # noqa: E402


@dataclass
class Case:
    """One sample of one op: how to run it, and how it reads in source."""

    call: str  # e.g. "torch.linalg.eig(t0)"; "" when it cannot be written as source
    features: list[str]
    run: Callable[[], object]
    tensors: tuple[Any, ...] = ()  # the tensors the call names t0, t1, ..., in that order


@dataclass
class Unit:
    """An operator (an OpInfo entry or an extra) and the cases that exercise it."""

    op: str  # "norm.nuc", "linalg.eig", "extra:_grouped_mm"
    source: str  # "op_db", "foreach_db" or "extra"
    spelling: str  # "torch.norm", ".to_sparse" (a method), "" when unknown
    aliases: list[str]
    dtype: str
    cases: Callable[..., list[Case]]  # OpInfo units take ``limit``: the samples to build
    meta: dict[str, Any] = field(default_factory=dict)


# --- describing arguments -------------------------------------------------------------


def _dtype_class(dtype: Any) -> str:
    if dtype.is_complex:
        return "complex"
    if dtype.is_floating_point:
        return "float"
    return "bool" if str(dtype) == "torch.bool" else "int"


class Renderer:
    """Writes a sample's arguments as source (tensors become ``t0``, ``t1``...) and lists
    the argument forms (``arg1:tensor.0d``, ``num_classes=-1``, ``kw:value:tensor``)."""

    def __init__(self) -> None:
        self.tensors = 0
        self.renderable = True
        self.empty = False  # some tensor argument has no elements

    def value(self, value: Any, label: str, features: list[str]) -> str:
        import torch

        if isinstance(value, torch.Tensor):
            host = value.device.type == "cpu"
            name = f"t{self.tensors}_cpu" if host else f"t{self.tensors}"
            self.tensors += 1
            features.append(f"{label}:tensor")
            features.append(f"{label}:tensor.{_dtype_class(value.dtype)}")
            features.append(f"{label}:tensor.{value.dim()}d")
            if value.numel() == 0:
                features.append(f"{label}:tensor.empty")
                self.empty = True
            if host:
                features.append(f"{label}:tensor.host")
                if value.is_pinned():
                    features.append(f"{label}:tensor.pinned")
            if value.layout != torch.strided:
                features.append(f"{label}:tensor.{str(value.layout).removeprefix('torch.')}")
            return name
        if isinstance(value, (list, tuple)):
            inner: list[str] = []
            parts = [self.value(item, f"{label}[]", inner) for item in value]
            features.append(f"{label}:seq")
            features.extend(sorted(set(inner)))
            text = ", ".join(parts)
            if isinstance(value, tuple):
                text += "," if len(parts) == 1 else ""
                return f"({text})"
            return f"[{text}]"
        if value is None or isinstance(value, (bool, int, float, complex, str)):
            text = repr(value)
            kind = "None" if value is None else type(value).__name__
            features.append(f"{label}:{kind}")
            if len(text) <= 24:
                features.append(f"{label}={text}")
            if isinstance(value, float) and value != value:
                return 'float("nan")'
            if isinstance(value, float) and value in (float("inf"), float("-inf")):
                return 'float("inf")' if value > 0 else 'float("-inf")'
            return text
        if isinstance(value, (torch.dtype, torch.device, torch.layout, torch.memory_format)):
            text = str(value) if not isinstance(value, torch.device) else repr(value)
            features.append(f"{label}={text}")
            return text
        self.renderable = False
        features.append(f"{label}:{type(value).__name__}")
        return f"<{type(value).__name__}>"


def tensors_in(values: Any) -> list[Any]:
    """The tensors of ``values`` (nested lists and tuples) in the order ``describe`` names them."""
    import torch

    if isinstance(values, torch.Tensor):
        return [values]
    if isinstance(values, (list, tuple)):
        return [tensor for value in values for tensor in tensors_in(value)]
    return []


def describe(spelling: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, list]:
    """The call as source, and the sample's argument forms."""
    renderer = Renderer()
    features: list[str] = [f"nargs={len(args)}"]
    parts = [renderer.value(arg, f"arg{index}", features) for index, arg in enumerate(args)]
    parts += [
        f"{key}={renderer.value(value, f'kw:{key}', features)}" for key, value in kwargs.items()
    ]
    features += [f"has:{key}" for key in kwargs]
    if renderer.empty:
        features.append("empty")
    if not spelling or not renderer.renderable:
        return "", features
    if spelling.startswith("."):
        if not parts:
            return "", features
        return f"{parts[0]}{spelling}({', '.join(parts[1:])})", features
    return f"{spelling}({', '.join(parts)})", features


# --- the operators --------------------------------------------------------------------


def _resolve(path: str) -> Any:
    import torch

    obj: Any = torch
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _spelling(name: str) -> str:
    import torch

    found = _resolve(name)
    if found is not None and callable(found) and not isinstance(found, type):
        return f"torch.{name}"
    if hasattr(torch.Tensor, name):
        return f".{name}"
    return ""


def _pick_dtype(op: Any, device: str) -> Any:
    import torch

    supported = op.supported_dtypes(device)
    for name in PREFERRED_DTYPES:
        dtype = getattr(torch, name)
        if dtype in supported:
            return dtype
    return sorted(supported, key=str)[0] if supported else None


def opinfo_units(device: str) -> Iterator[Unit]:
    """Every OpInfo entry, with one dtype (float32 where supported)."""
    from torch.testing._internal import common_methods_invocations as cmi

    databases = [("op_db", cmi.op_db)]
    databases += [
        ("foreach_db", getattr(cmi, name))
        for name in sorted(dir(cmi))
        if name.startswith("foreach_") and name.endswith("_op_db")
    ]
    for source, database in databases:
        for op in database:
            full = f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name
            dtype = _pick_dtype(op, device)
            spelling = _spelling(op.name)

            def cases(
                op: Any = op, dtype: Any = dtype, spelling: str = spelling, limit: int = MAX_SAMPLES
            ) -> list[Case]:
                import torch

                torch.manual_seed(0)
                found = []
                for sample in op.sample_inputs(device, dtype, requires_grad=False):
                    args = (sample.input, *sample.args)
                    call, features = describe(spelling, args, dict(sample.kwargs))
                    kwargs = dict(sample.kwargs)
                    tensors = tuple(tensors_in([*args, *kwargs.values()]))
                    found.append(Case(call, features, _bind(op, args, kwargs), tensors))
                    if len(found) >= limit:
                        break
                return found

            yield Unit(
                full,
                source,
                spelling,
                sorted(alias.name for alias in op.aliases),
                str(dtype).removeprefix("torch.") if dtype is not None else "",
                cases,
                {"variant": op.variant_test_name, "name": op.name},
            )


def _bind(func: Callable[..., object], args: tuple, kwargs: dict) -> Callable[[], object]:
    return lambda: func(*args, **kwargs)


def all_units(device: str) -> list[Unit]:
    from op_sweep_extras import extra_units

    return [*opinfo_units(device), *extra_units(device, sys.modules[__name__])]


# --- running one sample ---------------------------------------------------------------


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}"


def detect(case: Case, cuda: bool) -> dict[str, Any]:
    """Run ``case`` under the debug mode, then under the audit; what each saw."""
    import torch

    from syncguard.runtime import sync_audit

    result: dict[str, Any] = {"call": case.call, "features": case.features}
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            case.run()
            result["debug"] = False
        except Exception as exc:
            if SYNC_MESSAGE not in str(exc):
                result["error"] = _first_line(exc)
                return result
            result["debug"] = True
        finally:
            torch.cuda.set_sync_debug_mode(0)
        torch.cuda.synchronize()
    with sync_audit(mode="record", simulate=not cuda) as audit:
        try:
            case.run()
        except Exception as exc:
            result["error"] = _first_line(exc)
    result["audit"] = sorted({f"{event.kind}:{event.detail}" for event in audit.events})
    if cuda and "error" not in result:
        result["idle_ms"] = _queued_host_ms(case, queued=False)
        result["blocked_ms"] = _queued_host_ms(case, queued=True)
    result["synced"] = bool(result.get("debug")) or bool(result["audit"])
    return result


_SLEEP: list[int] = []


def _queued_host_ms(case: Case, queued: bool) -> float | None:
    """Host time of one run of ``case``, with about 30 ms of GPU work queued before it or
    with an idle GPU."""
    import torch

    if not _SLEEP:
        _SLEEP.append(_sleep_cycles(30.0))
    torch.cuda.synchronize()
    if queued:
        torch.cuda._sleep(_SLEEP[0])
    start = time.perf_counter()
    try:
        case.run()
    except Exception:
        return None
    finally:
        elapsed = (time.perf_counter() - start) * 1000
        torch.cuda.synchronize()
    return round(elapsed, 2)


def sweep_unit(unit: Unit, cuda: bool) -> dict[str, Any]:
    """Every case of ``unit``, as a record for the JSONL file."""
    record: dict[str, Any] = {
        "op": unit.op,
        "source": unit.source,
        "spelling": unit.spelling,
        "aliases": unit.aliases,
        "dtype": unit.dtype,
        **unit.meta,
    }
    started = time.perf_counter()
    try:
        cases = unit.cases()
    except Exception as exc:
        record["error"] = "samples: " + _first_line(exc)
        record["samples"] = []
        return record
    record["samples"] = [detect(case, cuda) for case in cases]
    record["seconds"] = round(time.perf_counter() - started, 3)
    return record


# --- timing ---------------------------------------------------------------------------


def _sleep_cycles(milliseconds: float) -> int:
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    return int(10_000_000 * milliseconds / start.elapsed_time(end))


def host_ms(case: Case, cycles: int, repeats: int = 3) -> tuple[float, float] | None:
    """Median host time of ``case`` with an idle GPU, and with about 30 ms of GPU work
    queued before it (``cycles`` of ``torch.cuda._sleep``)."""
    import torch

    idle, queued = [], []
    try:
        case.run()  # warm up
        for _ in range(repeats):
            torch.cuda.synchronize()
            start = time.perf_counter()
            case.run()
            idle.append((time.perf_counter() - start) * 1000)
            torch.cuda.synchronize()
            torch.cuda._sleep(cycles)
            start = time.perf_counter()
            case.run()
            queued.append((time.perf_counter() - start) * 1000)
            torch.cuda.synchronize()
    except Exception:
        return None
    return round(statistics.median(idle), 2), round(statistics.median(queued), 2)


def timing_picks(records: list[dict[str, Any]]) -> dict[str, dict[int, int]]:
    """Samples to time one at a time: per op the first syncing and first sync-free one
    (the measured cost), and every one whose parallel timing disagrees with the detectors
    (up to 8 per op): the serial timing decides whether it waited for the GPU."""
    picks: dict[str, dict[int, int]] = {}  # op -> sample index -> repeats
    for record in records:
        ran = [(i, s) for i, s in enumerate(record["samples"]) if "error" not in s]
        ran = [(i, s) for i, s in ran if "empty" not in s["features"]] or ran
        chosen: dict[int, int] = {}
        for wanted, repeats in ((True, 3), (False, 1)):
            chosen.update((i, repeats) for i, s in ran if syncs(s) is wanted)
            chosen = dict(list(chosen.items())[:1] if wanted else list(chosen.items())[:2])
        disputed = [i for i, s in ran if blocked(s) is not None and blocked(s) != s["synced"]]
        for index in [i for i in disputed if i not in chosen][:8]:
            chosen[index] = 1
        if chosen:
            picks[record["op"]] = chosen
    return picks


def time_serially(
    units: dict[str, Unit], records: list[dict[str, Any]], cycles: int, log: Any
) -> None:
    """Time the picked samples one at a time; store ``serial_ms`` (idle, queued) on them."""
    by_op = {record["op"]: record for record in records}
    for op, indices in timing_picks(records).items():
        if op not in units:
            continue
        try:
            cases = units[op].cases()
        except Exception:
            continue
        for index, repeats in indices.items():
            if index < len(cases) and index < len(by_op[op]["samples"]):
                measured = host_ms(cases[index], cycles, repeats)
                if measured is not None:
                    by_op[op]["samples"][index]["serial_ms"] = list(measured)
        print(f"timed {op}: {sorted(indices)}", file=log, flush=True)


# --- driver ---------------------------------------------------------------------------


def _select(units: list[Unit], names: str | None, dry: bool) -> list[Unit]:
    if (names is None and not dry) or names == "all":
        return units
    wanted = set(names.split(",")) if names else set(DRY_OPS)
    return [unit for unit in units if unit.op in wanted or unit.op.split(".")[0] in wanted]


def worker(args: argparse.Namespace) -> int:
    """Sweep every ``shard``-th unit (skipping those already in the JSONL file)."""
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)  # workers share the cores: keep host timings clean
    cuda = torch.cuda.is_available() and not args.dry
    device = "cuda" if cuda else "cpu"
    if args.sleep_cycles:
        _SLEEP.append(args.sleep_cycles)
    units = _select(all_units(device), args.ops, args.dry)
    index, count = (int(part) for part in args.shard.split("/"))
    done = set()
    if os.path.exists(args.jsonl):
        with open(args.jsonl) as handle:
            done = {json.loads(line)["op"] for line in handle if line.strip()}
    with open(args.jsonl, "a") as out, open(args.jsonl + ".current", "w") as current:
        for position, unit in enumerate(units):
            if position % count != index or unit.op in done:
                continue
            current.seek(0)
            current.write(unit.op.ljust(120))
            current.flush()
            record = sweep_unit(unit, cuda)
            if cuda:
                try:
                    torch.cuda.synchronize()
                except Exception as exc:  # a device-side assert: the context is gone
                    record["error"] = "device: " + _first_line(exc)
                    out.write(json.dumps(record) + "\n")
                    return 3
            out.write(json.dumps(record) + "\n")
            out.flush()
    return 0


def run_shards(args: argparse.Namespace, log: Any) -> list[dict[str, Any]]:
    """Run the workers to completion, restarting any that die after the op it was on."""
    paths = [os.path.join(args.out, f"shard{i}.jsonl") for i in range(args.workers)]
    base = [sys.executable, os.path.abspath(__file__), "--worker"]
    base += ["--sleep-cycles", str(args.sleep_cycles)]
    if args.dry:
        base.append("--dry")
    if args.ops:
        base += ["--ops", args.ops]

    def start(i: int) -> subprocess.Popen[bytes]:
        command = [*base, "--shard", f"{i}/{args.workers}", "--jsonl", paths[i]]
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    running = {i: start(i) for i in range(args.workers)}
    watched: dict[int, tuple[str, float]] = {}
    restarts = 0
    while running:
        time.sleep(0.5)
        for i, process in list(running.items()):
            code = process.poll()
            if code is None:
                if _stalled(paths[i], i, watched, args.op_timeout):
                    process.kill()
                    process.wait()
                    code = -9
                else:
                    continue
            del running[i]
            if code == 0:
                print(f"shard {i} done", file=log, flush=True)
                continue
            if not os.path.exists(paths[i] + ".current"):
                print(f"shard {i} failed to start (exit {code})", file=log, flush=True)
                continue
            with open(paths[i] + ".current") as handle:
                crashed = handle.read().strip()
            with open(paths[i]) as handle:
                done = {json.loads(line)["op"] for line in handle if line.strip()}
            if crashed not in done:
                with open(paths[i], "a") as handle:
                    failure = {"op": crashed, "error": f"worker exit {code}", "samples": []}
                    handle.write(json.dumps(failure) + "\n")
            print(f"shard {i} exit {code} on {crashed}; restarting", file=log, flush=True)
            restarts += 1
            if restarts < 40:
                watched.pop(i, None)
                running[i] = start(i)
    records = []
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path) as handle:
            records += [json.loads(line) for line in handle if line.strip()]
    return records


def _stalled(path: str, shard: int, watched: dict[int, tuple[str, float]], limit: float) -> bool:
    """True when the shard has been on the same op for more than ``limit`` seconds."""
    try:
        with open(path + ".current") as handle:
            op = handle.read().strip()
    except OSError:
        return False
    now = time.perf_counter()
    if watched.get(shard, ("", 0.0))[0] != op:
        watched[shard] = (op, now)
    return now - watched[shard][1] > limit


def environment(cuda: bool) -> dict[str, str]:
    import torch

    return {
        "torch": torch.__version__,
        "cuda": str(torch.version.cuda),
        "gpu": torch.cuda.get_device_name() if cuda else "none (dry run on the CPU)",
        "date": datetime.date.today().isoformat(),
        "python": sys.version.split()[0],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="op_sweep_out")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--ops", help="comma-separated op names, or 'all' (default: all; --dry: a few)"
    )
    parser.add_argument("--dry", action="store_true", help="CPU, simulated audit, a few ops")
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--op-timeout", type=float, default=90.0, help="seconds per op")
    parser.add_argument("--from-samples", help="classify a saved op_sweep_samples.json again")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--shard", default="0/1", help=argparse.SUPPRESS)
    parser.add_argument("--jsonl", help=argparse.SUPPRESS)
    parser.add_argument("--sleep-cycles", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args)
    os.makedirs(args.out, exist_ok=True)
    if args.from_samples:
        opener = gzip.open if args.from_samples.endswith(".gz") else open
        with opener(args.from_samples, "rt") as handle:
            saved = json.load(handle)
        return write_summary(saved["environment"], saved["records"], args.out)
    import torch

    warnings.filterwarnings("ignore")
    cuda = torch.cuda.is_available() and not args.dry
    started = time.perf_counter()
    env = environment(cuda)
    env["command"] = "python benchmarks/op_sweep.py " + " ".join(argv or sys.argv[1:])
    with open(os.path.join(args.out, "workers.log"), "a") as log:
        if cuda:
            args.sleep_cycles = _sleep_cycles(30.0)  # calibrated before the workers start
        records = run_shards(args, log)
        if cuda and not args.no_timing:
            units = {unit.op: unit for unit in _select(all_units("cuda"), args.ops, False)}
            time_serially(units, records, args.sleep_cycles, log)
    env["seconds"] = str(round(time.perf_counter() - started, 1))
    with open(os.path.join(args.out, "op_sweep_samples.json"), "w") as handle:
        json.dump({"environment": env, "records": records}, handle)
    return write_summary(env, records, args.out)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        traceback.print_exc()
        sys.exit(130)
