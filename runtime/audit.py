"""``sync_audit``: find the host-device syncs a code path really performs.

Use it as a context manager (``with sync_audit("record") as audit:``) or a decorator
(``@sync_audit`` / ``@sync_audit("warn", allow=[...])``). Each active audit lives in a
ContextVar, so other threads (and code outside the block) are not audited; nested audits
all see the syncs of the inner block, each judging them with its own mode and allow-list.
Detection (see ``docs/runtime.md``): on CUDA, ``set_sync_debug_mode`` warnings plus
syncguard's own checks of explicit synchronizes and copies; without CUDA (or with
``simulate=True``), a dispatch mode reporting the aten ops that would sync on a GPU.
This module does not import torch; an audit imports it when it starts.
"""

from __future__ import annotations

import functools
import inspect
import json
import linecache
import os
import sys
import warnings
import weakref
from collections.abc import AsyncGenerator, Callable, Generator, Iterable
from contextvars import ContextVar
from dataclasses import asdict, dataclass, replace
from types import FrameType, TracebackType
from typing import Any, TypeVar, overload

from syncguard.runtime import _boundary
from syncguard.runtime._events import SyncError, SyncEvent, SyncWarning
from syncguard.runtime._frames import (
    CallSite,
    FrameInfo,
    call_site,
    first_user_frame,
    frame_info,
    owner,
)
from syncguard.runtime._policy import allowed_by, parse_allow, suppressed_by
from syncguard.runtime._report import render, summarize

MODES = ("raise", "warn", "record")
ENV_VAR = "SYNCGUARD_AUDIT"
_STACK_LIMIT = 64

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(eq=False)
class _Activation:
    """One audit active in one context: a ``with`` block, one decorated call, or one step
    of a decorated generator. It refers to its audit weakly, so that an audit never exited
    can still be garbage-collected (and release what it holds)."""

    audit_ref: weakref.ref[SyncAudit]
    mode: str
    frame_id: int  # the frame whose callers are outside the block (0: none)
    simulated: bool
    lease: Any  # _hooks.Lease
    where: tuple[str, int]  # where it was entered, for the never-exited warning
    live: bool = True


ACTIVE: ContextVar[tuple[_Activation, ...]] = ContextVar("syncguard_audits", default=())


def _check_mode(mode: object, source: str) -> str:
    if mode not in MODES:
        raise ValueError(f"{source}: mode must be 'raise', 'warn' or 'record', got {mode!r}")
    return str(mode)


# On POSIX ``os.environ`` keeps its bytes in ``_data``, updated by every assignment: a
# dict lookup there takes 0.1 µs, against 0.6 µs for ``os.environ.get`` (1.7 µs when the
# variable is unset, through a KeyError). Elsewhere the public lookup is used.
_ENV_DATA = getattr(os.environ, "_data", None) if os.name == "posix" else None
_ENV_KEY: Any = ENV_VAR.encode() if isinstance(_ENV_DATA, dict) else ENV_VAR
_env_parsed: tuple[object, str] = (None, "")


def env_mode(coded: str) -> str | None:
    """The mode a decorated call runs in: ``SYNCGUARD_AUDIT`` if set, else ``coded``.

    ``None`` means "off": the call runs unaudited.
    """
    global _env_parsed
    raw = _ENV_DATA.get(_ENV_KEY) if isinstance(_ENV_DATA, dict) else os.environ.get(ENV_VAR)
    if not raw:
        return coded
    if raw is not _env_parsed[0]:
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        value = text.strip().lower()
        if value != "off":
            _check_mode(value, f"environment variable {ENV_VAR}={value!r} (or 'off')")
        _env_parsed = (raw, value)
    return None if _env_parsed[1] == "off" else _env_parsed[1]


_cuda_available: bool | None = None


def _cuda() -> bool:
    global _cuda_available
    if _cuda_available is None:
        import torch

        _cuda_available = bool(torch.cuda.is_available())
    return _cuda_available


class SyncAudit:
    """Records (and, by mode, warns about or raises on) syncs in its blocks or calls."""

    def __init__(
        self,
        mode: str = "raise",
        *,
        simulate: bool | None = None,
        allow: Iterable[str] | str = (),
        first_only: bool = False,
        include_torch_frames: bool = False,
        respect_suppressions: bool = True,
    ) -> None:
        self.mode = _check_mode(mode, "sync_audit")
        if simulate not in (None, True, False):
            raise ValueError(f"sync_audit: simulate must be None, True or False, got {simulate!r}")
        self.simulate = simulate
        self.allow = parse_allow(allow)
        self.first_only = first_only
        self.include_torch_frames = include_torch_frames
        self.respect_suppressions = respect_suppressions
        self.events: list[SyncEvent] = []
        self.allowed: list[SyncEvent] = []
        self._first_seen: set[str] = set()
        self._detection = ""
        self._live: list[_Activation] = []
        weakref.finalize(self, _abandon, self._live, self.mode)

    def __repr__(self) -> str:
        return f"<SyncAudit mode={self.mode} events={len(self.events)}>"

    @property
    def count(self) -> int:
        """Number of syncs recorded and not allowed."""
        return len(self.events)

    @property
    def detection(self) -> str:
        """How syncs were detected (set when the audit first runs)."""
        return self._detection or "not run yet"

    def clear(self) -> None:
        """Forget recorded events and the sites ``first_only`` has already allowed."""
        self.events.clear()
        self.allowed.clear()
        self._first_seen.clear()

    def report(self, *, rich: bool | None = None) -> str:
        """The syncs grouped by call site, then the allowed ones, as a table.

        ``rich=None`` draws rich tables when standard output is a terminal and plain text
        otherwise; ``True`` / ``False`` choose.
        """
        title = f"syncguard sync audit ({self.mode})"
        return render(title, self.events, self.allowed, self.detection, rich=rich)

    def to_json(self) -> str:
        """The events, allowed events and per-site counts as a JSON document."""
        sites = []
        for row in summarize(self.events):
            entry = asdict(row)
            entry["site"] = row.site
            del entry["note"]
            sites.append(entry)
        document = {
            "mode": self.mode,
            "detection": self.detection,
            "count": self.count,
            "sites": sites,
            "events": [event.to_dict() for event in self.events],
            "allowed": [event.to_dict() for event in self.allowed],
        }
        return json.dumps(document, indent=2)

    # --- activation ------------------------------------------------------------------

    def __enter__(self) -> SyncAudit:
        self._activate(self.mode, sys._getframe(1))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Leave the block: this context's activation, else the latest one (another thread or
        task may exit an audit it did not enter)."""
        mine = [item for item in ACTIVE.get() if item.live and item.audit_ref() is self]
        activation = mine[-1] if mine else (self._live[-1] if self._live else None)
        if activation is not None:
            _deactivate(activation, self._live)

    def __call__(self, func: F) -> F:
        """Decorate ``func``: each call runs under this audit (see ``SYNCGUARD_AUDIT``).

        A generator (or async generator) function is audited while its body runs, step by
        step: the audit is not active while the generator is suspended at a ``yield``.
        """
        if not callable(func):
            raise TypeError(f"sync_audit: can only decorate a callable, got {func!r}")
        if inspect.isasyncgenfunction(func):
            wrapper: Any = self._audited_async_generator(func)
        elif inspect.isgeneratorfunction(func):
            wrapper = self._audited_generator(func)
        elif inspect.iscoroutinefunction(func):
            wrapper = self._audited_coroutine(func)
        else:

            @functools.wraps(func)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                mode = env_mode(self.mode)
                if mode is None:
                    return func(*args, **kwargs)
                activation = self._activate(mode, sys._getframe(0))
                try:
                    return func(*args, **kwargs)
                finally:
                    _deactivate(activation, self._live)

        wrapper.audit = self
        return wrapper  # type: ignore[no-any-return]

    def _audited_coroutine(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        async def audited_coroutine(*args: Any, **kwargs: Any) -> Any:
            mode = env_mode(self.mode)
            if mode is None:
                return await func(*args, **kwargs)
            activation = self._activate(mode, sys._getframe(0))
            try:
                return await func(*args, **kwargs)
            finally:
                _deactivate(activation, self._live)

        return audited_coroutine

    def _audited_generator(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def audited_generator(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
            mode = env_mode(self.mode)
            if mode is None:
                return (yield from func(*args, **kwargs))
            frame = sys._getframe(0)
            inner = func(*args, **kwargs)
            sent: Any = None
            thrown: BaseException | None = None
            while True:
                activation = self._activate(mode, frame)
                try:
                    item = inner.send(sent) if thrown is None else inner.throw(thrown)
                except StopIteration as stop:
                    return stop.value
                finally:
                    thrown = None
                    _deactivate(activation, self._live)
                try:
                    sent = yield item
                except GeneratorExit:
                    activation = self._activate(mode, frame)
                    try:
                        inner.close()
                    finally:
                        _deactivate(activation, self._live)
                    raise
                except BaseException as error:
                    thrown = error

        return audited_generator

    def _audited_async_generator(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        async def audited_async_generator(*args: Any, **kwargs: Any) -> AsyncGenerator[Any, Any]:
            mode = env_mode(self.mode)
            frame = sys._getframe(0)
            inner = func(*args, **kwargs)
            sent: Any = None
            thrown: BaseException | None = None
            while True:
                activation = None if mode is None else self._activate(mode, frame)
                try:
                    if thrown is None:
                        item = await inner.asend(sent)
                    else:
                        item = await inner.athrow(thrown)
                except StopAsyncIteration:
                    return
                finally:
                    thrown = None
                    if activation is not None:
                        _deactivate(activation, self._live)
                try:
                    sent = yield item
                except GeneratorExit:
                    activation = None if mode is None else self._activate(mode, frame)
                    try:
                        await inner.aclose()
                    finally:
                        if activation is not None:
                            _deactivate(activation, self._live)
                    raise
                except BaseException as error:
                    thrown = error

        return audited_async_generator

    def _activate(self, mode: str, frame: FrameType | None) -> _Activation:
        from syncguard.runtime import _hooks

        available = _cuda()
        simulated = (not available) if self.simulate is None else bool(self.simulate)
        self._detection = _describe_detection(simulated, available, self.simulate)
        lease = _hooks.acquire(cuda=not simulated, simulated=simulated)
        try:
            where = (frame.f_code.co_filename, frame.f_lineno) if frame else ("<unknown>", 0)
            activation = _Activation(
                weakref.ref(self), mode, id(frame) if frame else 0, simulated, lease, where
            )
            self._live.append(activation)
            ACTIVE.set((*ACTIVE.get(), activation))
        except BaseException:
            _hooks.release(lease)
            raise
        return activation

    # --- judging -----------------------------------------------------------------------

    def _judge(self, mode: str, event: SyncEvent, frames: list[FrameInfo]) -> bool:
        """Record ``event``; True when this audit must raise for it."""
        reason = allowed_by(self.allow, frames)
        if not reason and self.respect_suppressions:
            reason = suppressed_by(frames)
        if not reason and self.first_only and event.site not in self._first_seen:
            self._first_seen.add(event.site)
            reason = "first_only"
        if reason:
            self.allowed.append(replace(event, allowed_by=reason))
            return False
        self.events.append(event)
        if mode == "warn":
            warnings.warn_explicit(
                f"host-device sync: {event.op} ({event.kind}, {event.detail}) in {event.function}",
                SyncWarning,
                event.path,
                event.line,
                module=event.module or None,
            )
        return mode == "raise"


def _describe_detection(simulated: bool, available: bool, requested: bool | None) -> str:
    if simulated:
        why = "requested" if requested else "CUDA is not available"
        return (
            f"simulation ({why}): aten ops that would sync if the tensors lived on a GPU,"
            " explicit synchronizes"
        )
    if not available:
        return "CUDA requested but not available: explicit synchronizes and copies only"
    return "CUDA: set_sync_debug_mode warnings, explicit synchronizes, blocking and pageable copies"


@overload
def sync_audit(mode: F) -> F: ...


@overload
def sync_audit(
    mode: str = "raise",
    *,
    simulate: bool | None = None,
    allow: Iterable[str] | str = (),
    first_only: bool = False,
    include_torch_frames: bool = False,
    respect_suppressions: bool = True,
) -> SyncAudit: ...


def sync_audit(mode: Any = "raise", **options: Any) -> Any:
    """An audit (context manager and decorator); bare ``@sync_audit`` audits in raise mode."""
    if callable(mode):
        if options:
            raise TypeError("sync_audit: pass options as sync_audit(mode, ...), then decorate")
        return SyncAudit()(mode)
    return SyncAudit(mode, **options)


def mark_host(tensor: Any) -> Any:
    """Tell simulation that ``tensor`` is host memory (``cu_seqlens_cpu``); returns it."""
    from syncguard.runtime._simulate import HOST_TENSORS

    HOST_TENSORS.add(tensor)
    return tensor


def _deactivate(activation: _Activation, live: list[_Activation]) -> None:
    """End ``activation`` (once), from any thread or task; restores torch after the last."""
    if not activation.live:
        return
    from syncguard.runtime import _hooks

    activation.live = False
    try:
        if activation in live:
            live.remove(activation)
        current = ACTIVE.get()
        if activation in current:
            ACTIVE.set(tuple(item for item in current if item is not activation))
    finally:
        _hooks.release(activation.lease)


def _abandon(live: list[_Activation], mode: str) -> None:
    """Finalizer of an audit: release the activations it never exited, with a warning."""
    for activation in list(live):
        path, line = activation.where
        warnings.warn_explicit(
            f"sync_audit({mode!r}) entered here was never exited; syncguard restored torch"
            " (patches, sync debug mode) when the audit was garbage-collected or at"
            " interpreter exit",
            RuntimeWarning,
            path,
            line,
        )
        _deactivate(activation, live)


# --- delivery from the detectors -----------------------------------------------------


def deliver(
    kind: str | None,
    detail: str,
    *,
    simulated: bool,
    exempt: Callable[[CallSite], bool] | None = None,
) -> bool:
    """Hand one sync signal to the audits of this context; False when none listens.

    ``kind=None`` takes the kind from the call site. Signals that come from the same
    user-level call as the previous one are merged into its event. Raises SyncError when
    an audit in raise mode does not allow the sync.
    """
    listeners = [item for item in ACTIVE.get() if item.live and (item.simulated or not simulated)]
    if not listeners:
        return False
    start = sys._getframe(1)
    user = first_user_frame(start)
    if user is None or _boundary.same_call(user):
        return True
    site = call_site(user)
    if exempt is not None and exempt(site):
        return True
    _boundary.start_call(user)
    audits = [(item, item.audit_ref()) for item in _unique(listeners)]
    with_torch = any(audit.include_torch_frames for _, audit in audits if audit is not None)
    attributed = _innermost_outside_syncguard(start) if with_torch else user
    chain = _frames_from(attributed, [item.frame_id for item in listeners])
    info = frame_info(attributed)
    shown = [frame for frame in chain if with_torch or owner(frame.f_code.co_filename) == "user"]
    event = SyncEvent(
        kind=kind or site.kind,
        op=site.op if site.source else detail,
        path=info.path,
        line=info.line,
        function=info.function,
        stack=tuple(frame_info(frame).describe() for frame in shown),
        module=info.module,
        detail=detail,
        simulated=simulated,
    )
    raising = None
    for activation, audit in audits:
        frames = _policy_frames(chain, activation.frame_id)
        if audit is not None and audit._judge(activation.mode, event, frames):
            raising = event
    if raising is not None:
        raise SyncError(raising)
    return True


def simulating() -> bool:
    """True when a simulated audit is active in this context."""
    return any(item.live and item.simulated for item in ACTIVE.get())


def mentions_cpu() -> bool:
    """True when the user's call being executed names ``cpu`` (``x.to("cpu")``)."""
    user = first_user_frame(sys._getframe(1))
    if user is None:
        return False
    text = call_site(user).source or linecache.getline(user.f_code.co_filename, user.f_lineno)
    return "cpu" in text


def _unique(listeners: list[_Activation]) -> list[_Activation]:
    """One activation per audit (the innermost): a recursive decorated call counts once."""
    seen: dict[int, _Activation] = {}
    for activation in listeners:
        seen[id(activation.audit_ref())] = activation
    return list(seen.values())


def _innermost_outside_syncguard(frame: FrameType | None) -> FrameType:
    start = frame
    while frame is not None and owner(frame.f_code.co_filename) == "syncguard":
        frame = frame.f_back
    return frame or start  # type: ignore[return-value]


def _frames_from(frame: FrameType | None, stops: list[int]) -> list[FrameType]:
    """Frames from ``frame`` outwards, up to the outermost activation's frame (by id)."""
    remaining = {stop for stop in stops if stop}
    chain: list[FrameType] = []
    while frame is not None and len(chain) < _STACK_LIMIT:
        chain.append(frame)
        if remaining:
            remaining.discard(id(frame))
            if not remaining:
                break
        frame = frame.f_back
    return chain


def _policy_frames(chain: list[FrameType], stop: int) -> list[FrameInfo]:
    """The user frames of ``chain`` inside one activation (allow-lists, suppressions)."""
    frames = []
    for frame in chain:
        if owner(frame.f_code.co_filename) == "user":
            frames.append(frame_info(frame))
        if id(frame) == stop:
            break
    return frames


__all__ = [
    "ENV_VAR",
    "MODES",
    "SyncAudit",
    "SyncError",
    "SyncEvent",
    "SyncWarning",
    "mark_host",
    "sync_audit",
]
