"""Telling CUDA streams and events apart from other objects with the same methods."""

from __future__ import annotations

import ast

from syncguard.rule import Context
from syncguard.values import EVENT, STREAM

# Classes whose methods take the stream or event as ``self`` when called unbound.
_UNBOUND = {
    "torch.cuda.Stream": "stream",
    "torch.cuda.Event": "event",
    "torch.Stream": "stream",
    "torch.Event": "event",
}


def handle_kind(receiver: ast.expr, ctx: Context) -> str | None:
    """``"stream"`` or ``"event"`` when ``receiver`` is (probably) one, else None.

    Known from the analysis: ``torch.cuda.Stream()``, ``current_stream()``,
    ``torch.cuda.Event()``, ``stream.record_event()`` and attributes set from them in
    ``__init__``. Otherwise the receiver's own name decides (``copy_stream``,
    ``self.done_event``), unless the value is known to be a plain host object such as
    a ``threading.Event()`` -- those never have a CUDA ``synchronize``.
    """
    value = ctx.value(receiver)
    if STREAM in value.tags:
        return "stream"
    if EVENT in value.tags:
        return "event"
    if value.on_host:
        return None
    word = _last_identifier(receiver).lower()
    if "stream" in word:
        return "stream"
    if "event" in word:
        return "event"
    return None


def unbound_kind(func: ast.expr, ctx: Context, method: str) -> str | None:
    """``"stream"``/``"event"`` for ``torch.cuda.Stream.<method>`` / ``Event.<method>``."""
    qualified = ctx.qualified_name(func) or ""
    owner, _, name = qualified.rpartition(".")
    return _UNBOUND.get(owner) if name == method else None


def _last_identifier(node: ast.expr) -> str:
    """``copy_stream`` for ``self.copy_stream``, ``streams[i]`` or ``get_stream()``."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            return node.attr
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return ""
