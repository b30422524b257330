"""SG103: a blocking copy of a device tensor to the host (``.cpu()``, ``.to("cpu")``)."""

from __future__ import annotations

import ast

from syncguard.facts import Fix
from syncguard.fixes import UNSAFE, add_keyword_fix, codemod_fix, replace_fix
from syncguard.rule import Context, Invalid, Rule, Valid
from syncguard.rules._ops import is_device_tensor, short


class CpuCopySync(Rule):
    """Flags ``x.cpu()``, ``x.to("cpu")`` / ``x.to(torch.device("cpu"))`` /
    ``x.to(device="cpu")`` without ``non_blocking=True``, and ``x.numpy(force=True)``,
    when ``x`` may live on the accelerator; and ``x.numpy()`` when ``x`` is known to be a
    device tensor (a plain ``.numpy()`` is normally called on host data).

    A device argument counts as the host when it is a ``"cpu..."`` string,
    ``torch.device("cpu")``, or a name that says ``cpu`` (``cpu_device``). A
    ``non_blocking`` given as a variable is trusted to be true.

    Why it syncs: a blocking device-to-host copy is ordered after every kernel
    queued before it, so the host waits for the whole queue to drain, then for the
    copy itself (``aten::_to_copy`` / ``copy_``).

    How to fix: take the values from host data you already keep (``seq_lens_cpu``);
    or copy with ``x.to("cpu", non_blocking=True)`` into pinned memory and read the
    result only after an event recorded behind the copy has completed, once per step
    and outside the hot loop. The autofix (unsafe) adds ``non_blocking=True``
    (``.cpu()`` becomes ``.to("cpu", non_blocking=True)``) where the copy is assigned
    for later use; code that reads it before an event has completed sees stale
    values. It is not offered where the result is used at once (``x.cpu().numpy()``).
    """

    code = "SG103"
    sweep_ops = ("extra:Tensor.cpu", "extra:Tensor.numpy", "extra:Tensor.to")
    name = "cpu-copy-sync"
    message = "a blocking device-to-host copy waits for all queued GPU work"
    tokens = ("cpu", "numpy")
    cost = "blocks until all queued GPU work drains: 30.54 ms with 30 ms queued (H200)"
    graph_break = False  # traced as ops under torch.compile: a sync, not a break

    VALID = [
        Valid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits, seq_lens_cpu, flag):
        ids = logits.argmax(-1)
        staged = ids.to("cpu", non_blocking=True)     # read after an event
        later = ids.to(device="cpu", non_blocking=flag)
        host = seq_lens_cpu.cpu()                     # already on the host
        arr = ids.to("cpu", non_blocking=True).numpy()
        lens = seq_lens_cpu.numpy()
        half = ids.to(torch.float16)                  # a dtype, not a device
        return staged, later, host, arr, lens, half
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.copied = torch.cuda.Event()

    def forward(self, logits):
        ids = logits.argmax(-1)
        self.ids_host = ids.cpu()
        self.copied.record()                 # read ids_host after this event
        return ids
""",
            line=11,
            fixed="""
import torch
from torch import nn

class Sampler(nn.Module):
    def __init__(self):
        super().__init__()
        self.copied = torch.cuda.Event()

    def forward(self, logits):
        ids = logits.argmax(-1)
        self.ids_host = ids.to("cpu", non_blocking=True)
        self.copied.record()                 # read ids_host after this event
        return ids
""",
        ),
        Invalid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits):
        staged = logits.to(torch.device("cpu"))
        return logits, staged
""",
            line=6,
            fixed="""
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits):
        staged = logits.to(torch.device("cpu"), non_blocking=True)
        return logits, staged
""",
        ),
        Invalid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits):
        return logits.argmax(-1).cpu().tolist()   # used at once: no autofix
""",
            line=6,
        ),
        Invalid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits: torch.Tensor):
        probs = logits.softmax(-1).to(device="cpu", non_blocking=False)
        return probs
""",
            line=6,
            fixed="""
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits: torch.Tensor):
        probs = logits.softmax(-1).to(device="cpu", non_blocking=True)
        return probs
""",
        ),
        Invalid(
            """
import torch
from torch import nn

class Sampler(nn.Module):
    def forward(self, logits: torch.Tensor, scores):
        return logits.numpy(force=True), scores.sigmoid().numpy()
""",
            line=6,
        ),
    ]

    def __init__(self) -> None:
        self._assigned: ast.expr | None = None  # right-hand side of the current assignment

    def visit_Assign(self, node: ast.Assign, ctx: Context) -> None:
        self._assigned = node.value

    def visit_AnnAssign(self, node: ast.AnnAssign, ctx: Context) -> None:
        self._assigned = node.value

    def visit_Call(self, node: ast.Call, ctx: Context) -> None:
        func = node.func
        if not isinstance(func, ast.Attribute) or ctx.qualified_name(func) is not None:
            return
        source = func.value
        # The non-blocking rewrite only makes sense where the result is kept for later
        # (``staged = x.cpu()``), not where it is read at once (``x.cpu().numpy()``).
        fixable = node is self._assigned
        if func.attr == "cpu" and not node.args:
            fix = _cpu_fix(node, ctx) if fixable and not node.keywords else None
            self._report(node, source, "`.cpu()` copies to the host and waits", ctx, fix)
        elif func.attr == "to" and _targets_host(node, ctx) and not _may_be_non_blocking(node):
            message = '`.to("cpu")` without `non_blocking=True` waits'
            self._report(node, source, message, ctx, _to_fix(node, ctx) if fixable else None)
        elif func.attr == "numpy" and not node.args:
            force = next((k.value for k in node.keywords if k.arg == "force"), None)
            if isinstance(force, ast.Constant) and force.value is True:
                self._report(node, source, "`.numpy(force=True)` copies to the host and waits", ctx)
            elif force is None and is_device_tensor(source, ctx):
                message = (
                    "`.numpy()` needs host data: a device tensor must be copied (and waited for)"
                )
                self._report(node, source, message, ctx)

    def _report(
        self,
        node: ast.Call,
        source: ast.expr,
        message: str,
        ctx: Context,
        fix: Fix | None = None,
    ) -> None:
        if ctx.in_loop:
            suggestion = "gather the values on the device and copy once after the loop"
        else:
            suggestion = (
                f"use host data you already keep (a `*_cpu` copy), or "
                f"`{short(ctx, source)}.to('cpu', non_blocking=True)` read after an event"
            )
        ctx.report(node, subject=source, suggestion=suggestion, message=message, fix=fix)


_FIX_DESCRIPTION = "copy with non_blocking=True (unsafe: read the result only after an event)"


def _cpu_fix(node: ast.Call, ctx: Context) -> Fix:
    """``x.cpu()`` -> ``x.to("cpu", non_blocking=True)``, keeping ``x``'s own text."""
    return codemod_fix(
        ctx, node, "call-method", UNSAFE, _FIX_DESCRIPTION, "to", '"cpu", non_blocking=True'
    )


def _to_fix(node: ast.Call, ctx: Context) -> Fix | None:
    """Add ``non_blocking=True``, or turn a literal ``non_blocking=False`` into it."""
    for keyword in node.keywords:
        if keyword.arg == "non_blocking":
            return replace_fix(ctx, keyword.value, "True", UNSAFE, _FIX_DESCRIPTION)
    if len(node.args) > 1:
        return None  # .to(device, dtype): keep the fix to plain calls
    return add_keyword_fix(ctx, node, "non_blocking", "True", UNSAFE, _FIX_DESCRIPTION)


def _targets_host(node: ast.Call, ctx: Context) -> bool:
    """``.to(...)`` whose device argument names the host."""
    target = next((k.value for k in node.keywords if k.arg == "device"), None)
    if target is None and node.args:
        target = node.args[0]
    if target is None:
        return False
    if isinstance(target, ast.Call) and ctx.qualified_name(target.func) == "torch.device":
        target = target.args[0] if target.args else target
    if isinstance(target, ast.Constant):
        return isinstance(target.value, str) and target.value.startswith("cpu")
    if isinstance(target, ast.Name):
        return "cpu" in target.id.lower().split("_")
    if isinstance(target, ast.Attribute):
        return "cpu" in target.attr.lower().split("_")
    return False


def _may_be_non_blocking(node: ast.Call) -> bool:
    """True unless the copy is certainly blocking (no ``non_blocking``, or a literal False)."""
    for keyword in node.keywords:
        if keyword.arg == "non_blocking":
            return not (isinstance(keyword.value, ast.Constant) and not keyword.value.value)
        if keyword.arg is None:
            return True  # **kwargs may carry it
    # Positional: .to(device, dtype, non_blocking) -- a flag after the device argument.
    for argument in node.args[1:]:
        if isinstance(argument, ast.Constant) and argument.value is True:
            return True
        if isinstance(argument, ast.Name) and "dtype" not in argument.id:
            return True
    return False
