"""Where data lives: the value lattice shared by the analysis and every rule.

A :class:`Value` says where an expression's data lives (``HOST``, ``DEVICE``,
``UNKNOWN`` or ``PARAM`` -- "on the host exactly when these parameters are")
plus a few tags about what kind of value it is (a boolean mask, a pinned host
tensor, a Python sequence...). Rules treat ``DEVICE`` and ``UNKNOWN`` alike as
"may be on the accelerator"; ``PARAM`` values are resolved per call site by the
project phase.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Place(enum.IntEnum):
    """Where a value lives, ordered from most to least known-host."""

    HOST = 0
    PARAM = 1
    UNKNOWN = 2
    DEVICE = 3


# Tags describing what a value is, independent of where it lives.
BOOL = "bool"  # a boolean tensor (mask) or Python bool
PINNED = "pinned"  # a host tensor in page-locked memory
PAGEABLE = "pageable"  # a host tensor known to be in ordinary (pageable) memory
PYSEQ = "pyseq"  # a Python list / tuple / set / dict
NDARRAY = "ndarray"  # a numpy array (host memory; mixed with a device tensor only as 0-d)
SCALAR = "scalar"  # a Python number (int, float)
TENSOR = "tensor"  # known to be a tensor (created by torch)
INDEX = "index"  # an integer index tensor (long / int)
STREAM = "stream"  # an accelerator stream object (torch.cuda.Stream, current_stream())
EVENT = "event"  # an accelerator event object (torch.cuda.Event, Stream.record_event())
GRAD_SCALER = "grad-scaler"  # an enabled gradient scaler for an accelerator (torch.amp)
FUSED = "fused"  # an object a torch constructor built with ``fused=True`` (a fused optimizer)
OPAQUE = "opaque"  # a host list that was also given values of unknown kind (``xs.append(f())``)
# Literal constants, so that a call's arguments say which branches of the callee they take.
NONE = "none"  # the constant None
FALSY = "falsy"  # a false constant other than None (False, "")
TRUTHY = "truthy"  # a true constant (True, "x"); a number is tagged ``num:<value>``
NOT_NONE = "not-none"  # an argument that cannot be None (a computed value, see analysis)
CPU = "cpu"  # the device "cpu" (or torch.device("cpu")): data sent there stays on the host
# An argument that is the caller's own parameter, unchanged; its ``params`` name it (even
# when the parameter is known to be on the host).
FORWARDED = "forwarded"
# ``field:<qualified class>.<attribute>``: read from a parameter annotated with a class of
# another module; the project phase knows whether that class declares the field host data.
FIELD_PREFIX = "field:"
# ``result:<qualified function>``: what a call of a function of another module returns;
# the project phase knows whether that function returns host data.
RESULT_PREFIX = "result:"
# ``key:<name>``: read from a mapping or an object under that name (``inputs["grid_thw"]``,
# ``batch.grid_thw``); ``host-parameters`` globs name such data as they name parameters.
KEY_PREFIX = "key:"
_PROVENANCE = (FIELD_PREFIX, RESULT_PREFIX, KEY_PREFIX)


@dataclass(frozen=True, slots=True)
class Value:
    """Placement and tags of one expression."""

    place: Place
    params: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()

    @property
    def on_host(self) -> bool:
        return self.place is Place.HOST

    @property
    def may_be_device(self) -> bool:
        return self.place is not Place.HOST

    @property
    def kinds(self) -> frozenset[str]:
        """The tags saying what the value is, less where it was read from."""
        if not self.tags:
            return self.tags
        return frozenset(t for t in self.tags if not t.startswith(_PROVENANCE))

    @property
    def provenance(self) -> frozenset[str]:
        """The tags saying where the value was read from (see :meth:`placement`)."""
        if not self.tags:
            return self.tags
        return frozenset(t for t in self.tags if t.startswith(_PROVENANCE))

    def with_tags(self, *tags: str) -> Value:
        return Value(self.place, self.params, self.tags | frozenset(tags))

    def without_tags(self) -> Value:
        return Value(self.place, self.params) if self.tags else self

    def placement(self) -> Value:
        """Where the value lives, as a sync site records it: the field it was read from,
        the function that returned it or the name of the item it is (see
        :data:`FIELD_PREFIX`, :data:`RESULT_PREFIX`, :data:`KEY_PREFIX`) is kept for the
        project phase to place."""
        fields = frozenset(tag for tag in self.tags if tag.startswith(_PROVENANCE))
        return Value(self.place, self.params, fields) if self.tags != fields else self


def maybe_device_tensor(value: Value) -> bool:
    """True when ``value`` is known to be a tensor that may live on the accelerator:
    tagged as a tensor or an index tensor (never a Python number or sequence).

    Python conversions (``int(x)``, ``if x:``) are only syncs for such values: an
    untagged ``x``, even one derived from device data by an opaque call, might just
    as well be a Python number, and a ``BOOL`` value without the tensor tag may be a
    Python bool (``mode == "greedy"`` on a parameter).
    """
    if PYSEQ in value.tags or not value.may_be_device:
        return False
    return bool(value.tags & {TENSOR, INDEX})


HOST = Value(Place.HOST)
DEVICE = Value(Place.DEVICE)
UNKNOWN = Value(Place.UNKNOWN)


def param(name: str) -> Value:
    """The value of parameter ``name`` whose placement depends on the caller."""
    return Value(Place.PARAM, frozenset((name,)))


def tuple_part(value: Value, index: int) -> Value:
    """Part ``index`` of a tuple whose parts are not shown (``a, b = f()``, or ``g(*parts)``
    with ``parts = f()``): where the whole lives, or that part of a function's result for
    the project phase to place. The parts of an opaque call's result made on a device may
    be host metadata: unknown."""
    place = value.place
    if place is Place.DEVICE and PYSEQ not in value.tags:
        place = Place.UNKNOWN
    # A part of a part (``(a, b), c = f()``) is not placed: only whole results have parts.
    parts = frozenset(
        f"{tag}#{index}" for tag in value.tags if tag.startswith(RESULT_PREFIX) and "#" not in tag
    )
    return Value(place, value.params if place is Place.PARAM else frozenset(), parts)


def join(*values: Value) -> Value:
    """Placement of a value computed from all of ``values`` (tags are dropped)."""
    place = Place.HOST
    params: frozenset[str] = frozenset()
    for value in values:
        if value.place > place:
            place = value.place
        if value.place is Place.PARAM:
            params |= value.params
    return Value(place, params if place is Place.PARAM else frozenset())
