"""Helpers of the runtime tests: a snapshot of everything an audit may change in torch,
and a check after every test that no audit was left holding it."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from syncguard.runtime import _hooks, sync_audit

# What the first audit imports may add warning filters, once per process: start one before
# any test takes a snapshot.
with sync_audit("record", simulate=True):
    torch.ones(1).tolist()


def torch_state() -> dict[str, Any]:
    """Everything an audit may patch, arm or push, to compare before and after."""
    return {
        "tensor": {
            name: vars(torch.Tensor).get(name)
            for name in ("to", "cpu", "cuda", "copy_", "tolist", "__repr__")
        },
        "synchronize": torch.cuda.synchronize,
        "accelerator": torch.accelerator.synchronize,
        "stream": vars(torch.cuda.Stream).get("synchronize"),
        "event": vars(torch.cuda.Event).get("synchronize"),
        "capture": [vars(torch.cuda.CUDAGraph).get(n) for n in ("capture_begin", "capture_end")],
        "from_numpy": torch.from_numpy,
        "op calls": [
            vars(c).get("__call__") for c in (torch._ops.OpOverload, torch._ops.OpOverloadPacket)
        ],
        "showwarning": warnings.showwarning,
        "filters": list(warnings.filters),
        "dispatch_modes": torch._C._len_torch_dispatch_stack(),
        "trace": sys.gettrace(),
        "debug_mode": torch.cuda.get_sync_debug_mode() if torch.cuda.is_available() else None,
    }


@pytest.fixture
def snapshot() -> Callable[[], dict[str, Any]]:
    """The :func:`torch_state` function."""
    return torch_state


@pytest.fixture(autouse=True)
def _no_audit_left_behind() -> Iterator[None]:
    yield
    assert not _hooks.installed(), "an audit was left active by this test"
    assert torch._C._len_torch_dispatch_stack() == 0


def _shared_helpers() -> None:
    """Test modules outside this folder import ``REPO``, ``FIXTURES`` and ``run_cli`` with
    ``from conftest import ...``; conftest files outside packages share that module name, so
    once this one is loaded the name is this module's: it offers the helpers too."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "_tests_conftest", Path(__file__).resolve().parent.parent / "conftest.py"
    )
    assert spec is not None and spec.loader is not None
    shared = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shared)
    globals().update(REPO=shared.REPO, FIXTURES=shared.FIXTURES, run_cli=shared.run_cli)


_shared_helpers()
