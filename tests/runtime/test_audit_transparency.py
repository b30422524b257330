"""The audit never changes what the audited program does (issue 13.1).

Every callable the audit wraps is called in every form its documented signatures accept,
and in wrong forms, three ways: plainly, under a simulated audit, and under the CUDA path's
audit run on this machine. The outcomes must be the same: the same exception (type and
message) or the same result (type, dtype, device, shape, strides, values, the storage it
shares with the inputs, autograd state), the same warnings, and the same calls seen by the
program's own ``TorchFunctionMode``. Hypothesis adds random argument combinations.
"""

from __future__ import annotations

import contextlib
import inspect
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.overrides import TorchFunctionMode

from syncguard.runtime import _hooks, sync_audit

Inputs = dict[str, Any]
Call = Callable[[Inputs], Any]


def inputs() -> Inputs:
    """Fresh tensors for one call (calls may modify them)."""
    torch.manual_seed(0)
    x = torch.randn(2, 3)
    return {
        "x": x,
        "image": torch.randn(1, 2, 3, 3),
        "ints": torch.arange(6).reshape(2, 3),
        "scalar": torch.tensor(1.5),
        "param": torch.nn.Parameter(torch.randn(3)),
        "leaf": torch.randn(3, requires_grad=True),
        "other": torch.zeros(1, dtype=torch.float64),
        "src": torch.ones(2, 3),
        "array": np.arange(6.0),
    }


class SeenCalls(TorchFunctionMode):
    """The program's own torch-function mode: logs every call it is shown."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.seen.append(getattr(func, "__qualname__", None) or repr(func))
        return func(*args, **(kwargs or {}))


def describe(value: Any, given: Inputs) -> Any:
    """What a program can observe of a value, identity aside (see ``identity`` below)."""
    if isinstance(value, torch.Tensor):
        on_meta = value.device.type == "meta"
        shares = [
            name
            for name, item in given.items()
            if isinstance(item, torch.Tensor)
            and not on_meta
            and item.untyped_storage().data_ptr() == value.untyped_storage().data_ptr()
        ]
        return {
            "type": type(value).__name__,
            "dtype": value.dtype,
            "device": value.device,
            "shape": tuple(value.shape),
            "stride": value.stride(),
            "requires_grad": value.requires_grad,
            "values": None if on_meta else value.detach().clone().tolist(),
            "shares storage with": sorted(shares),
            "pinned": None if value.device.type != "cpu" else value.is_pinned(),
        }
    if isinstance(value, np.ndarray):
        return {"type": "ndarray", "values": value.tolist(), "writeable": value.flags.writeable}
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [describe(item, given) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return type(value).__name__, value
    return type(value).__name__  # another object (a CUDAGraph): a new one each call


def outcome(call: Call, audit: Callable[[], Any] | None, *, with_mode: bool = True) -> Any:
    """The observable outcome of ``call`` run on fresh inputs, optionally inside ``audit()``."""
    given = inputs()
    mode = SeenCalls()
    observed: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        context = audit() if audit is not None else contextlib.nullcontext()
        try:
            with context, mode if with_mode else contextlib.nullcontext():
                result = call(given)
        except Exception as error:  # the outcome under test
            observed["raised"] = (type(error), str(error))
        else:
            observed["returned"] = describe(result, given)
            observed["identity"] = [name for name, item in given.items() if item is result]
    observed["warnings"] = [(w.category, str(w.message)) for w in caught]
    observed["torch functions seen"] = mode.seen
    observed["inputs after"] = {name: describe(item, given) for name, item in given.items()}
    return observed


AUDITS: dict[str, Callable[[], Any]] = {
    "simulation": lambda: sync_audit("record", simulate=True),
    "cuda-path": lambda: sync_audit("record", simulate=False),
}

# (call as written, call) -- documented forms, keyword and positional, then wrong forms
TO_CALLS: list[tuple[str, Call]] = [
    ("to()", lambda v: v["x"].to()),
    ("to(dtype)", lambda v: v["x"].to(torch.float16)),
    ("to(same dtype)", lambda v: v["x"].to(torch.float32)),
    ("to(dtype, True, True)", lambda v: v["x"].to(torch.float16, True, True)),
    ("to(dtype, copy=True)", lambda v: v["x"].to(torch.float32, copy=True)),
    ("to(dtype=, non_blocking=)", lambda v: v["x"].to(dtype=torch.int32, non_blocking=False)),
    ("to('cpu')", lambda v: v["x"].to("cpu")),
    ("to(device('cpu'))", lambda v: v["x"].to(torch.device("cpu"))),
    ("to(None)", lambda v: v["x"].to(None)),
    ("to(device=None)", lambda v: v["x"].to(device=None)),
    ("to('cpu', dtype)", lambda v: v["x"].to("cpu", torch.float64)),
    ("to('cpu', dtype, True, True)", lambda v: v["x"].to("cpu", torch.float64, True, True)),
    ("to('cpu', non_blocking=True)", lambda v: v["x"].to("cpu", non_blocking=True)),
    (
        "to(copy=True, dtype=, device=)",
        lambda v: v["x"].to(copy=True, dtype=torch.float32, device=v["x"].device),
    ),
    ("to(copy=True, device='cpu')", lambda v: v["x"].to(copy=True, device="cpu")),
    (
        "to('cpu', memory_format=channels_last)",
        lambda v: v["image"].to("cpu", memory_format=torch.channels_last),
    ),
    (
        "to(dtype, memory_format=channels_last)",
        lambda v: v["image"].to(torch.float16, memory_format=torch.channels_last),
    ),
    ("to('meta')", lambda v: v["x"].to("meta")),
    ("to(device='meta', dtype=)", lambda v: v["x"].to(device="meta", dtype=torch.float16)),
    ("to(other)", lambda v: v["x"].to(v["other"])),
    ("to(other, True, True)", lambda v: v["x"].to(v["other"], True, True)),
    ("to(other, copy=True)", lambda v: v["x"].to(v["other"], copy=True)),
    ("to(int tensor)", lambda v: v["ints"].to(v["x"])),
    ("to('cuda')", lambda v: v["x"].to("cuda")),
    ("to('cuda:0', non_blocking=True)", lambda v: v["x"].to("cuda:0", non_blocking=True)),
    ("to(0)", lambda v: v["x"].to(0)),
    ("Parameter.to('cpu')", lambda v: v["param"].to("cpu")),
    ("leaf.to(float64)", lambda v: v["leaf"].to(torch.float64)),
    ("leaf.to('cpu', copy=True)", lambda v: v["leaf"].to("cpu", copy=True)),
    ("Tensor.to(x, 'cpu')", lambda v: torch.Tensor.to(v["x"], "cpu")),
    # wrong forms: torch's own errors
    ("Tensor.to()", lambda v: torch.Tensor.to()),
    ("Tensor.to(object())", lambda v: torch.Tensor.to(object(), "cpu")),  # type: ignore[call-overload]
    ("to('bogus')", lambda v: v["x"].to("bogus")),
    ("to(-1)", lambda v: v["x"].to(-1)),
    ("to('cpu', 1)", lambda v: v["x"].to("cpu", 1)),  # type: ignore[call-overload]
    ("to('cpu', non_blocking=1)", lambda v: v["x"].to("cpu", non_blocking=1)),  # type: ignore[call-overload]
    ("to(dtype, device=)", lambda v: v["x"].to(torch.float16, device="cpu")),  # type: ignore[call-overload]
    ("to(other=)", lambda v: v["x"].to(other=v["other"])),  # type: ignore[call-overload]
    ("to(other, dtype)", lambda v: v["x"].to(v["other"], torch.float16)),  # type: ignore[call-overload]
    ("to(5 positional)", lambda v: v["x"].to("cpu", torch.half, False, False, None)),  # type: ignore[call-overload]
    ("to(memory_format=1)", lambda v: v["x"].to(memory_format=1)),  # type: ignore[call-overload]
    ("to(channels_last on 2-d)", lambda v: v["x"].to("cpu", memory_format=torch.channels_last)),
    ("to(unknown=)", lambda v: v["x"].to("cpu", unknown=True)),  # type: ignore[call-overload]
    ("to('float16')", lambda v: v["x"].to("float16")),
    ("to(1.5)", lambda v: v["x"].to(1.5)),  # type: ignore[call-overload]
    ("to(True)", lambda v: v["x"].to(True)),  # type: ignore[call-overload]
]

OTHER_CALLS: list[tuple[str, Call]] = [
    ("cuda()", lambda v: v["x"].cuda()),
    ("cuda(0, True)", lambda v: v["x"].cuda(0, True)),
    ("cuda(device='cuda:0', non_blocking=True)", lambda v: v["x"].cuda("cuda:0", True)),
    ("cuda(memory_format=)", lambda v: v["image"].cuda(memory_format=torch.channels_last)),
    ("cuda('cpu')", lambda v: v["x"].cuda("cpu")),
    ("cuda(-1)", lambda v: v["x"].cuda(-1)),
    ("cuda(0, 1)", lambda v: v["x"].cuda(0, 1)),  # type: ignore[arg-type]
    ("cuda(0, True, None)", lambda v: v["x"].cuda(0, True, None)),  # type: ignore[call-arg]
    ("Tensor.cuda()", lambda v: torch.Tensor.cuda()),  # type: ignore[call-arg]
    ("cpu()", lambda v: v["x"].cpu()),
    ("cpu(memory_format=)", lambda v: v["image"].cpu(memory_format=torch.channels_last)),
    ("Parameter.cpu()", lambda v: v["param"].cpu()),
    ("leaf.cpu()", lambda v: v["leaf"].cpu()),
    ("cpu(contiguous_format)", lambda v: v["x"].cpu(torch.contiguous_format)),  # type: ignore[call-arg]
    ("cpu(bogus=)", lambda v: v["x"].cpu(bogus=1)),  # type: ignore[call-arg]
    ("Tensor.cpu()", lambda v: torch.Tensor.cpu()),  # type: ignore[call-arg]
    ("copy_(src)", lambda v: v["x"].copy_(v["src"])),
    ("copy_(src, True)", lambda v: v["x"].copy_(v["src"], True)),
    ("copy_(src=, non_blocking=)", lambda v: v["x"].copy_(src=v["src"], non_blocking=True)),
    ("copy_(broadcast)", lambda v: v["x"].copy_(v["scalar"])),
    ("copy_(meta)", lambda v: v["x"].copy_(v["src"].to("meta"))),
    ("copy_(leaf)", lambda v: v["leaf"].copy_(torch.zeros(3))),
    ("copy_(3.0)", lambda v: v["x"].copy_(3.0)),  # type: ignore[arg-type]
    ("copy_()", lambda v: v["x"].copy_()),  # type: ignore[call-arg]
    ("copy_(src, 1)", lambda v: v["x"].copy_(v["src"], 1)),  # type: ignore[arg-type]
    ("copy_(src, True, 1)", lambda v: v["x"].copy_(v["src"], True, 1)),  # type: ignore[call-arg]
    ("copy_(shape mismatch)", lambda v: v["x"].copy_(torch.ones(4))),
    ("tolist()", lambda v: v["x"].tolist()),
    ("scalar.tolist()", lambda v: v["scalar"].tolist()),
    ("meta.tolist()", lambda v: v["x"].to("meta").tolist()),
    ("tolist(1)", lambda v: v["x"].tolist(1)),  # type: ignore[call-arg]
    ("repr()", lambda v: repr(v["x"])),
    ("str()", lambda v: str(v["ints"])),
    ("__repr__(tensor_contents=)", lambda v: v["x"].__repr__(tensor_contents="x")),  # type: ignore[call-arg]
    ("__repr__(1)", lambda v: v["x"].__repr__(1)),  # type: ignore[call-arg]
    ("Tensor.__repr__(1)", lambda v: torch.Tensor.__repr__(1)),  # type: ignore[arg-type]
    ("format()", lambda v: f"{v['scalar']:.2f}"),
    ("from_numpy(array)", lambda v: torch.from_numpy(v["array"])),
    ("from_numpy(list)", lambda v: torch.from_numpy([1, 2])),  # type: ignore[arg-type]
    ("from_numpy()", lambda v: torch.from_numpy()),  # type: ignore[call-arg]
    ("from_numpy(a, b)", lambda v: torch.from_numpy(v["array"], v["array"])),  # type: ignore[call-arg]
    ("cuda.synchronize()", lambda v: torch.cuda.synchronize()),
    ("cuda.synchronize('bogus')", lambda v: torch.cuda.synchronize("bogus")),
    ("cuda.synchronize(1, 2)", lambda v: torch.cuda.synchronize(1, 2)),  # type: ignore[call-arg]
    ("accelerator.synchronize()", lambda v: torch.accelerator.synchronize()),
    ("accelerator.synchronize(device=)", lambda v: torch.accelerator.synchronize(device=None)),  # type: ignore[call-arg]
    ("Stream.synchronize(object())", lambda v: torch.cuda.Stream.synchronize(object())),  # type: ignore[arg-type]
    ("Stream.synchronize()", lambda v: torch.cuda.Stream.synchronize()),  # type: ignore[call-arg]
    ("Event.synchronize(object())", lambda v: torch.cuda.Event.synchronize(object())),  # type: ignore[arg-type]
    ("CUDAGraph()", lambda v: torch.cuda.CUDAGraph()),
    ("capture_begin(object())", lambda v: torch.cuda.CUDAGraph.capture_begin(object())),  # type: ignore[arg-type]
    ("capture_begin()", lambda v: torch.cuda.CUDAGraph.capture_begin()),  # type: ignore[call-arg]
    ("capture_end(object())", lambda v: torch.cuda.CUDAGraph.capture_end(object())),  # type: ignore[arg-type]
]

aten = torch.ops.aten
OpOverload, OpOverloadPacket = torch._ops.OpOverload, torch._ops.OpOverloadPacket

# torch.ops calls: overloads, packets, the aten spellings of to and copy_, wrong forms
OP_CALLS: list[tuple[str, Call]] = [
    ("aten.nonzero.default(x)", lambda v: aten.nonzero.default(v["x"])),
    ("aten.nonzero.default(self=x)", lambda v: aten.nonzero.default(self=v["x"])),
    ("aten.nonzero(x)", lambda v: aten.nonzero(v["x"])),
    ("aten.item.default(scalar)", lambda v: aten.item.default(v["scalar"])),
    (
        "aten._local_scalar_dense.default(scalar)",
        lambda v: aten._local_scalar_dense.default(v["scalar"]),
    ),
    (
        "aten.masked_select.default(x, mask)",
        lambda v: aten.masked_select.default(v["x"], v["x"] > 0),
    ),
    ("aten.index.Tensor(x, [mask])", lambda v: aten.index.Tensor(v["x"], [v["x"] > 0])),
    (
        "aten.index_put_.default(x, [mask], scalar)",
        lambda v: aten.index_put_.default(v["x"], [v["x"] > 0], v["scalar"]),
    ),
    (
        "aten.repeat_interleave.Tensor(ints)",
        lambda v: aten.repeat_interleave.Tensor(v["ints"].flatten()),
    ),
    (
        "aten.repeat_interleave(ints, output_size=)",
        lambda v: aten.repeat_interleave(v["ints"].flatten(), output_size=15),
    ),
    ("aten.add.Tensor(x, x, alpha=2)", lambda v: aten.add.Tensor(v["x"], v["x"], alpha=2)),
    ("aten.add(x, 1)", lambda v: aten.add(v["x"], 1)),
    (
        "aten._to_copy.default(x, device='cpu')",
        lambda v: aten._to_copy.default(v["x"], device="cpu"),
    ),
    (
        "aten._to_copy.default(x, dtype=)",
        lambda v: aten._to_copy.default(v["x"], dtype=torch.float16),
    ),
    (
        "aten._to_copy.default(x, device=, non_blocking=True)",
        lambda v: aten._to_copy.default(v["x"], device=torch.device("cpu"), non_blocking=True),
    ),
    ("aten._to_copy(x, device='cpu')", lambda v: aten._to_copy(v["x"], device="cpu")),
    ("aten.copy_.default(x, src)", lambda v: aten.copy_.default(v["x"], v["src"])),
    ("aten.copy_.default(x, src, True)", lambda v: aten.copy_.default(v["x"], v["src"], True)),
    (
        "aten.copy_(x, src=, non_blocking=)",
        lambda v: aten.copy_(v["x"], src=v["src"], non_blocking=False),
    ),
    (
        "OpOverload.__call__(aten.nonzero.default, x)",
        lambda v: OpOverload.__call__(aten.nonzero.default, v["x"]),
    ),
    # wrong forms: torch's own errors
    ("aten.nonzero.default()", lambda v: aten.nonzero.default()),
    ("aten.nonzero.default(x, bogus=1)", lambda v: aten.nonzero.default(v["x"], bogus=1)),
    ("aten.nonzero(x, x, x)", lambda v: aten.nonzero(v["x"], v["x"], v["x"])),
    ("aten.nonzero.default('bogus')", lambda v: aten.nonzero.default("bogus")),
    (
        "aten._to_copy.default(x, device='bogus')",
        lambda v: aten._to_copy.default(v["x"], device="bogus"),
    ),
    (
        "aten._to_copy.default(x, non_blocking=1)",
        lambda v: aten._to_copy.default(v["x"], non_blocking=1),
    ),
    ("aten._to_copy.default(x, 'cpu')", lambda v: aten._to_copy.default(v["x"], "cpu")),
    ("aten.copy_.default(x)", lambda v: aten.copy_.default(v["x"])),
    ("aten.copy_.default(x, src, 1)", lambda v: aten.copy_.default(v["x"], v["src"], 1)),
    ("aten.index.Tensor(x, mask)", lambda v: aten.index.Tensor(v["x"], v["x"] > 0)),
    ("OpOverload.__call__()", lambda v: OpOverload.__call__()),
    ("OpOverloadPacket.__call__()", lambda v: OpOverloadPacket.__call__()),
]

# In simulation, a copy to the host of a tensor that stands for device memory is a new
# tensor (as on a GPU), not the CPU tensor itself: an alias of it (docs/runtime.md). The
# program sees the same values, storage, dtype and strides; `result is x` differs, and the
# alias of a Parameter is a plain tensor.
ALIASING = {
    "to('cpu')",
    "to(device('cpu'))",
    "Parameter.to('cpu')",
    "Tensor.to(x, 'cpu')",
    "cpu()",
    "Parameter.cpu()",
    "leaf.cpu()",
}


def alias_instead_of_identity(audited: dict[str, Any], plain: dict[str, Any]) -> None:
    """The simulation's documented difference, and nothing more."""
    assert plain["identity"] and not audited["identity"]
    returned = {**audited["returned"], "type": plain["returned"]["type"]}
    assert returned == plain["returned"]
    rest = {"warnings", "torch functions seen", "inputs after"}
    assert {key: audited[key] for key in rest} == {key: plain[key] for key in rest}


CASES = TO_CALLS + OTHER_CALLS + OP_CALLS


@pytest.mark.parametrize("detection", sorted(AUDITS))
@pytest.mark.parametrize(("written", "call"), CASES, ids=[case[0] for case in CASES])
def test_each_call_form_behaves_as_without_the_audit(
    written: str, call: Call, detection: str
) -> None:
    plain = outcome(call, None)
    audited = outcome(call, AUDITS[detection])
    if detection == "simulation" and written in ALIASING:
        alias_instead_of_identity(audited, plain)
    else:
        assert audited == plain


def test_the_forms_cover_every_wrapped_callable() -> None:
    with sync_audit("record", simulate=True):
        wrapped = {(patch.owner, patch.name) for patch in _hooks._state.patches}
    covered = {
        (torch.Tensor, "to"),
        (torch.Tensor, "cuda"),
        (torch.Tensor, "cpu"),
        (torch.Tensor, "copy_"),
        (torch.Tensor, "tolist"),
        (torch.Tensor, "__repr__"),
        (torch, "from_numpy"),
        (torch.cuda, "synchronize"),
        (torch.accelerator, "synchronize"),
        (torch.cuda.Stream, "synchronize"),
        (torch.cuda.Event, "synchronize"),
        (torch.cuda.CUDAGraph, "capture_begin"),
        (torch.cuda.CUDAGraph, "capture_end"),
        (OpOverload, "__call__"),
        (OpOverloadPacket, "__call__"),
    }
    assert wrapped == covered


def _identity_of(func: Any) -> dict[str, Any]:
    try:
        signature: Any = str(inspect.signature(func))
    except (TypeError, ValueError) as error:
        signature = (type(error), str(error))
    return {
        "name": getattr(func, "__name__", None),
        "qualname": getattr(func, "__qualname__", None),
        "doc": getattr(func, "__doc__", None),
        "signature": signature,
    }


def test_wrappers_keep_name_doc_and_signature() -> None:
    with sync_audit("record", simulate=True):
        patches = list(_hooks._state.patches)
    assert patches
    for patch in patches:
        assert _identity_of(patch.replacement) == _identity_of(patch.original), patch.name
        assert patch.replacement.__wrapped__ is patch.original


# --- random combinations -------------------------------------------------------------

POOL = st.sampled_from(
    [
        None,
        True,
        False,
        0,
        1,
        -1,
        1.5,
        "cpu",
        "cuda",
        "meta",
        "cuda:0",
        "bogus",
        "float16",
        torch.float16,
        torch.float32,
        torch.int64,
        torch.bool,
        torch.device("cpu"),
        torch.device("meta"),
        torch.contiguous_format,
        torch.channels_last,
        torch.preserve_format,
        "<x>",
        "<other>",
        "<ints>",
    ]
)
KEYWORDS = st.sampled_from(
    ["device", "dtype", "non_blocking", "copy", "memory_format", "other", "src", "bogus"]
)


def _resolve(value: Any, given: Inputs) -> Any:
    if isinstance(value, str) and value.startswith("<"):
        return given[value.strip("<>")]
    return value


def _method_call(method: str, args: list[Any], kwargs: dict[str, Any]) -> Call:
    """``x.method(a0, a1, k=v)`` written out: the syntax programs use (not ``*args``)."""
    written = [f"a[{i}]" for i in range(len(args))] + [f"{key}=k[{key!r}]" for key in kwargs]
    direct = eval(f"lambda x, a, k: x.{method}({', '.join(written)})")

    def call(given: Inputs) -> Any:
        resolved = [_resolve(arg, given) for arg in args]
        named = {key: _resolve(value, given) for key, value in kwargs.items()}
        return direct(given["x"], resolved, named)

    return call


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    method=st.sampled_from(["to", "cuda", "cpu", "copy_", "tolist", "__repr__"]),
    args=st.lists(POOL, max_size=5),
    kwargs=st.dictionaries(KEYWORDS, POOL, max_size=3),
    detection=st.sampled_from(sorted(AUDITS)),
)
def test_random_call_forms_behave_as_without_the_audit(
    method: str, args: list[Any], kwargs: dict[str, Any], detection: str
) -> None:
    call = _method_call(method, args, kwargs)
    plain = outcome(call, None, with_mode=False)
    audited = outcome(call, AUDITS[detection], with_mode=False)
    if detection == "simulation" and plain.get("identity") and not audited.get("identity"):
        alias_instead_of_identity(audited, plain)
    else:
        assert audited == plain


@contextlib.contextmanager
def _compiling() -> Iterator[None]:
    flag = torch.compiler._is_compiling_flag  # type: ignore[attr-defined]
    torch.compiler._is_compiling_flag = True  # type: ignore[attr-defined]
    try:
        yield
    finally:
        torch.compiler._is_compiling_flag = flag  # type: ignore[attr-defined]


def test_wrappers_only_delegate_while_torch_compile_traces() -> None:
    x = torch.randn(3)
    with sync_audit("record", simulate=True) as audit, _compiling():
        x.cpu()
        x.to("cpu")
        x.tolist()
    assert audit.events == []


@pytest.mark.parametrize("detection", sorted(AUDITS))
def test_torch_compile_fullgraph_compiles_and_gives_the_same_result(detection: str) -> None:
    def step(x: torch.Tensor) -> torch.Tensor:
        y = x.to(copy=True, dtype=torch.float32, device=x.device)
        return (y.cpu() * 2).to(torch.float16)

    compiled = torch.compile(step, fullgraph=True, backend="eager")
    x = torch.randn(8)
    torch._dynamo.reset()
    expected = compiled(x)
    torch._dynamo.reset()
    with AUDITS[detection]():
        got = compiled(x)
    assert torch.equal(got, expected) and got.dtype == torch.float16
