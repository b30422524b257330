"""The sweep's extra cases: operators real engines call that torch's OpInfo database lacks.

Chosen from ``benchmarks/corpus_torch_calls.py`` over the development corpora (vLLM,
Megatron-core, torchtitan, DeepSpeed, TRL, Liger-Kernel, FlashInfer, xFormers,
Transformers): grouped and scaled matmuls of mixture-of-experts and fp8 layers,
``torch.ops.aten.*`` spellings, optimizers' foreach / fused / capturable paths, gradient
clipping and scaling, explicit synchronizes, host-device copies (pageable and pinned),
window and factory functions, and Python conversions of device scalars. Each extra is a
unit named ``extra:<name>`` whose cases vary the argument form that may decide a sync.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

Sample = tuple[tuple[Any, ...], dict[str, Any]]


def extra_units(device: str, lib: ModuleType) -> list[Any]:
    """Every extra as an ``op_sweep.Unit``; ``lib`` is the op_sweep module."""
    cuda = device == "cuda"
    units = []

    def calls(name: str, spelling: str, func: Any, build: Callable[[], list[Sample]]) -> None:
        """Cases calling ``spelling``, looked up at each call as user code would: the
        audit wraps some of these functions and methods while it runs."""

        def cases() -> list[Any]:
            torch.manual_seed(0)
            found = []
            for args, kwargs in build():
                call, features = lib.describe(spelling, args, kwargs)
                tensors = tuple(lib.tensors_in([*args, *kwargs.values()]))
                found.append(lib.Case(call, features, _late(spelling, func, args, kwargs), tensors))
            return found

        units.append(lib.Unit(f"extra:{name}", "extra", spelling, [], "", cases))

    def programs(name: str, build: Callable[[], list[tuple[str, list[str], Any]]]) -> None:
        def cases() -> list[Any]:
            torch.manual_seed(0)
            return [lib.Case(call, features, run) for call, features, run in build()]

        units.append(lib.Unit(f"extra:{name}", "extra", "", [], "", cases))

    def t(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.randn(*shape, device=device).to(dtype)

    host = torch.randn(1 << 22)
    pinned = host.pin_memory() if cuda else host
    dev = torch.empty(1 << 22, device=device)
    mask = t(64) > 0
    reps = torch.randint(1, 4, (32,), device=device)
    scalar = torch.tensor(3.0, device=device)

    # mixture-of-experts and fp8 matmuls
    def grouped() -> list[Sample]:
        x = t(64, 32, dtype=torch.bfloat16)
        w = t(4, 16, 32, dtype=torch.bfloat16).transpose(-2, -1)
        offs = torch.tensor([16, 32, 48, 64], dtype=torch.int32, device=device)
        xb = t(4, 16, 32, dtype=torch.bfloat16)
        return [((x, w), {"offs": offs}), ((xb, w), {})]

    calls("_grouped_mm", "torch._grouped_mm", torch._grouped_mm, grouped)
    if hasattr(F, "grouped_mm"):
        calls("nn.functional.grouped_mm", "torch.nn.functional.grouped_mm", F.grouped_mm, grouped)

    def scaled() -> list[Sample]:
        a = t(16, 32).to(torch.float8_e4m3fn)
        b = t(16, 32).to(torch.float8_e4m3fn).t()
        one = torch.tensor(1.0, device=device)
        return [((a, b, one, one), {"out_dtype": torch.bfloat16})]

    calls("_scaled_mm", "torch._scaled_mm", torch._scaled_mm, scaled)

    # torch.ops.aten spellings
    aten = torch.ops.aten
    for name, func, build in (
        ("_local_scalar_dense", aten._local_scalar_dense.default, lambda: [((scalar,), {})]),
        ("item", aten.item.default, lambda: [((scalar,), {})]),
        ("nonzero", aten.nonzero.default, lambda: [((mask,), {})]),
        ("masked_select", aten.masked_select.default, lambda: [((t(64), mask), {})]),
        ("repeat_interleave.Tensor", aten.repeat_interleave.Tensor, lambda: [((reps,), {})]),
        ("index.Tensor", aten.index.Tensor, lambda: [((t(64), [mask]), {})]),
        ("index_put_", aten.index_put_.default, lambda: [((t(64), [mask], scalar), {})]),
        ("_to_copy", aten._to_copy.default, lambda: [((t(64),), {"device": "cpu"})]),
        ("copy_", aten.copy_.default, lambda: [((dev, host), {})]),
        ("view.dtype", aten.view.dtype, lambda: [((t(64), torch.int32), {})]),
        ("_assert_scalar", aten._assert_scalar.default, lambda: [((True, "ok"), {})]),
        ("where.self", aten.where.self, lambda: [((mask, t(64), t(64)), {})]),
    ):
        spelling = f"torch.ops.aten.{func._overloadpacket.__name__}.{func._overloadname}"
        calls(f"aten.{name}", spelling, func, build)

    # reads and copies (the ground-truth table's forms)
    calls("Tensor.item", ".item", torch.Tensor.item, lambda: [((scalar,), {})])
    calls("Tensor.tolist", ".tolist", torch.Tensor.tolist, lambda: [((reps,), {})])
    calls("Tensor.cpu", ".cpu", torch.Tensor.cpu, lambda: [((t(64),), {})])
    calls("Tensor.numpy", ".numpy", torch.Tensor.numpy, lambda: [((t(64),), {"force": True})])
    calls(
        "Tensor.to",
        ".to",
        torch.Tensor.to,
        lambda: [
            ((t(64), "cpu"), {}),
            ((t(64), "cpu"), {"non_blocking": True}),
            ((host, device), {}),
            ((host, device), {"non_blocking": True}),
            ((pinned, device), {"non_blocking": True}),
            ((t(64), torch.float16), {}),
        ],
    )
    calls(
        "Tensor.copy_",
        ".copy_",
        torch.Tensor.copy_,
        lambda: [
            ((dev, host), {}),
            ((dev, host), {"non_blocking": True}),
            ((dev, pinned), {"non_blocking": True}),
            ((dev, t(1 << 22)), {}),
        ],
    )
    calls("Tensor.new_tensor", ".new_tensor", torch.Tensor.new_tensor,
          lambda: [((t(4), [1.0, 2.0]), {})])  # fmt: skip
    calls("Tensor.pin_memory", ".pin_memory", torch.Tensor.pin_memory, lambda: [((host,), {})])
    for name in ("tensor", "as_tensor"):
        calls(name, f"torch.{name}", getattr(torch, name),
              lambda: [(([1, 2, 3],), {"device": device}), (([1, 2, 3],), {})])  # fmt: skip
    array = np.arange(64, dtype=np.float32)
    programs(
        "from_numpy",
        lambda: [
            (
                "torch.from_numpy(a).to(device)",
                ["to:device"],
                lambda: torch.from_numpy(array).to(device),
            ),
            ("torch.from_numpy(a)", ["host only"], lambda: torch.from_numpy(array)),
        ],
    )
    programs(
        "python_scalar",
        lambda: [
            ("int(t0)", ["int"], lambda: int(scalar)),
            ("float(t0)", ["float"], lambda: float(scalar)),
            ("bool(t0)", ["bool"], lambda: bool(scalar)),
            ('f"{t0}"', ["format"], lambda: f"{scalar}"),
            ("range(t0)", ["index"], lambda: range(reps[0])),
        ],
    )

    # explicit synchronization
    def explicit() -> list[tuple[str, list[str], Any]]:
        found = [
            ("torch.cuda.synchronize()", ["cuda"], lambda: torch.cuda.synchronize()),
            ("torch.cuda.current_stream().synchronize()", ["stream"],
             lambda: torch.cuda.current_stream().synchronize()),
        ]  # fmt: skip
        if hasattr(torch, "accelerator"):
            found.append(("torch.accelerator.synchronize()", ["accelerator"],
                          lambda: torch.accelerator.synchronize()))  # fmt: skip
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        end.record()

        def elapsed() -> float:
            end.synchronize()
            return start.elapsed_time(end)

        found += [
            ("end.synchronize()", ["event"], lambda: end.synchronize()),
            ("start.elapsed_time(end)", ["elapsed_time"], elapsed),
        ]
        return found

    programs("synchronize", explicit)

    # foreach paths, optimizers, gradient clipping and scaling
    def tensors(n: int = 4) -> list[torch.Tensor]:
        return [t(32) for _ in range(n)]

    calls("_foreach_add_", "torch._foreach_add_", torch._foreach_add_,
          lambda: [((tensors(), scalar), {}), ((tensors(), 1.0), {}),
                   ((tensors(), tensors()), {"alpha": 0.5})])  # fmt: skip
    calls("_foreach_mul_", "torch._foreach_mul_", torch._foreach_mul_,
          lambda: [((tensors(), scalar), {}), ((tensors(), 0.5), {})])  # fmt: skip
    calls("_foreach_norm", "torch._foreach_norm", torch._foreach_norm,
          lambda: [((tensors(),), {})])  # fmt: skip
    calls("_foreach_copy_", "torch._foreach_copy_", torch._foreach_copy_,
          lambda: [((tensors(), tensors()), {})])  # fmt: skip

    def optimizer_cases() -> list[tuple[str, list[str], Any]]:
        found = []
        configs: list[tuple[str, dict[str, Any]]] = [
            ("default", {}),
            ("foreach", {"foreach": True}),
            ("for-loop", {"foreach": False}),
            ("fused", {"fused": True}),
            ("capturable", {"capturable": True}),
            ("capturable,tensor-lr", {"capturable": True, "lr": torch.tensor(1e-3, device=device)}),
        ]
        for cls in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.Adagrad,
                    torch.optim.RMSprop, torch.optim.Adamax, torch.optim.NAdam,
                    torch.optim.RAdam, torch.optim.Adadelta, torch.optim.ASGD,
                    torch.optim.Rprop):  # fmt: skip
            for label, config in configs:
                options = {"lr": 1e-3, **config}
                if cls is torch.optim.SGD:
                    options["momentum"] = 0.9
                params = [torch.nn.Parameter(t(16, 16)) for _ in range(3)]
                for param in params:
                    param.grad = torch.randn_like(param)
                try:
                    optimizer = cls(params, **options)
                    optimizer.step()  # the first step builds the state
                except Exception as exc:  # the config is not offered for this optimizer
                    found.append((f"{cls.__name__}({label}).step()", [label],
                                  _raiser(exc)))  # fmt: skip
                    continue
                found.append((f"torch.optim.{cls.__name__}(params, {label}).step()",
                              [f"optim={cls.__name__}", f"config={label}"],
                              optimizer.step))  # fmt: skip
        return found

    programs("optim.step", optimizer_cases)

    def clipping() -> list[tuple[str, list[str], Any]]:
        params = [torch.nn.Parameter(t(32, 32)) for _ in range(4)]
        for param in params:
            param.grad = torch.randn_like(param)
        grads = [p.grad for p in params]
        utils = torch.nn.utils
        found = [
            ("clip_grad_norm_(params, 1.0)", ["default"],
             lambda: utils.clip_grad_norm_(params, 1.0)),
            ("clip_grad_norm_(params, 1.0, foreach=True)", ["foreach"],
             lambda: utils.clip_grad_norm_(params, 1.0, foreach=True)),
            ("clip_grad_norm_(params, 1.0, error_if_nonfinite=True)", ["error_if_nonfinite"],
             lambda: utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)),
            ("clip_grad_value_(params, 1.0)", ["value"],
             lambda: utils.clip_grad_value_(params, 1.0)),
        ]  # fmt: skip
        if hasattr(utils, "get_total_norm"):
            total = utils.get_total_norm(grads)
            found += [
                ("get_total_norm(grads)", ["total_norm"], lambda: utils.get_total_norm(grads)),
                ("clip_grads_with_norm_(params, 1.0, total)", ["with_norm"],
                 lambda: utils.clip_grads_with_norm_(params, 1.0, total)),
            ]  # fmt: skip
        if cuda:
            scaler = torch.amp.GradScaler("cuda")
            optimizer = torch.optim.SGD(params, lr=1e-3)

            def scaled_step() -> None:
                loss = scaler.scale(sum((p * p).sum() for p in params))
                loss.backward()
                scaler.step(optimizer)
                scaler.update()

            scaled_step()
            found.append(("scaler.step(optimizer); scaler.update()", ["grad_scaler"],
                          scaled_step))  # fmt: skip
        return found

    programs("grad_clip_and_scale", clipping)

    # factories, windows and other calls engines make
    calls("rand", "torch.rand", torch.rand, lambda: [((64,), {"device": device})])
    rows = torch.randint(0, 3, (64, 4), device=device)
    for name in ("unique", "unique_consecutive"):
        calls(name, f"torch.{name}", getattr(torch, name),
              lambda: [((rows,), {}), ((rows,), {"dim": 0}), ((rows,), {"dim": 1})])  # fmt: skip
    calls("randperm", "torch.randperm", torch.randperm, lambda: [((64,), {"device": device})])
    for name in ("hann_window", "kaiser_window"):
        calls(name, f"torch.{name}", getattr(torch, name), lambda: [((64,), {"device": device})])
    calls("_assert_async", "torch._assert_async", torch._assert_async,
          lambda: [((scalar > 0,), {})])  # fmt: skip
    calls("numel", "torch.numel", torch.numel, lambda: [((t(8),), {})])
    calls("pad_sequence", "torch.nn.utils.rnn.pad_sequence", torch.nn.utils.rnn.pad_sequence,
          lambda: [(([t(3, 4), t(5, 4)],), {"batch_first": True})])  # fmt: skip
    calls("gumbel_softmax", "torch.nn.functional.gumbel_softmax", F.gumbel_softmax,
          lambda: [((t(4, 8),), {"tau": 1.0}), ((t(4, 8),), {"hard": True})])  # fmt: skip
    calls("fold", "torch.nn.functional.fold", F.fold,
          lambda: [((t(1, 12, 12),), {"output_size": (4, 5), "kernel_size": (2, 2)})])  # fmt: skip
    calls("cosine_similarity", "torch.cosine_similarity", torch.cosine_similarity,
          lambda: [((t(4, 8), t(4, 8)), {})])  # fmt: skip
    calls("_flatten_dense_tensors", "torch._utils._flatten_dense_tensors",
          torch._utils._flatten_dense_tensors, lambda: [((tensors(),), {})])  # fmt: skip
    calls("from_dlpack", "torch.from_dlpack", torch.from_dlpack, lambda: [((t(8),), {})])
    probs = torch.softmax(t(16), 0)
    calls(
        "distributions.Categorical",
        "torch.distributions.Categorical",
        torch.distributions.Categorical,
        lambda: [((), {"probs": probs}), ((), {"probs": probs, "validate_args": False})],
    )
    return units


def _late(spelling: str, func: Any, args: tuple, kwargs: dict) -> Callable[[], object]:
    """Call ``spelling`` (``torch.x``, ``.method``) resolved when the case runs."""
    if spelling.startswith("."):
        name = spelling[1:]
        return lambda: getattr(args[0], name)(*args[1:], **kwargs)
    if spelling.startswith("torch.") and not spelling.startswith("torch.ops."):
        path = spelling.split(".")[1:]

        def run() -> object:
            target: Any = torch
            for part in path:
                target = getattr(target, part)
            return target(*args, **kwargs)

        return run
    return lambda: func(*args, **kwargs)


def _raiser(exc: Exception) -> Callable[[], None]:
    def run() -> None:
        raise exc

    return run
