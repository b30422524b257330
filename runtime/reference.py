"""Reference fixes for two per-step patterns of LLM inference engines, beside the naive code.

1. Token-to-request mapping. The naive form has every attention backend rebuild the same
   mapping from ``query_start_loc_cpu`` each step, pin a fresh host tensor and copy it.
   :class:`StepMetadata` builds it once per step, writes it through a persistent pinned
   stage into a caller-owned persistent buffer (a fixed address, so CUDA-graph safe) and
   hands the same view to every consumer. :func:`token_to_req_indices_device` does it on
   the device with no host work at all.
2. Chunk indices for chunked linear attention. The naive form reads the device
   ``cu_seqlens`` back (``.tolist()``) inside the kernel wrapper and copies the result up
   from pageable memory: the host waits for all queued GPU work, every step.
   :func:`prepare_chunk_indices` / :func:`prepare_chunk_offsets` compute the same from
   ``cu_seqlens_cpu`` in the metadata builder; :func:`write_chunk_metadata` moves them once
   through the pinned stage; :func:`prepare_chunk_indices_device` is sync-free on the device
   given a static bound on the number of chunks.

Every host-to-device copy and pinned allocation made here is counted in :data:`counters`,
so benchmarks and tests can check the work per step by design rather than by sampling.
This module imports torch and numpy; ``syncguard.runtime`` does not import it eagerly.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

__all__ = [
    "CHUNK_SIZE",
    "MAPPING_DTYPE",
    "PinnedStagePool",
    "StepMetadata",
    "TransferCounters",
    "chunked_linear_attention",
    "counters",
    "max_chunks_bound",
    "naive_prepare_chunk_indices",
    "naive_prepare_chunk_offsets",
    "naive_token_to_req_indices",
    "prepare_chunk_indices",
    "prepare_chunk_indices_device",
    "prepare_chunk_offsets",
    "stage_pool",
    "token_to_req_indices_device",
    "write_chunk_metadata",
]

CHUNK_SIZE = 64
"""Tokens per chunk of the chunked linear attention (one name instead of literal 64s)."""

MAPPING_DTYPE = torch.int32
"""dtype of every token-to-request mapping built here."""

CHUNK_INDEX_DTYPE = torch.int64
"""dtype of chunk indices and chunk offsets."""

_STAGE_SLOTS = 2
_MIN_STAGE_ELEMENTS = 256
_MAX_VIEWS_PER_SLOT = 64


@dataclasses.dataclass
class TransferCounters:
    """Host-side work done by this module, counted where it happens.

    ``host_to_device_copies`` counts copies into CUDA tensors; ``pinned_allocations`` every
    page-locked host allocation (fresh per call in the naive code, the stages here);
    ``stage_allocations`` every (re)allocation of a stage, pinned or not; ``stage_waits``
    the times a stage was still being read by an earlier copy when it was needed again.
    """

    host_to_device_copies: int = 0
    pinned_allocations: int = 0
    stage_allocations: int = 0
    stage_waits: int = 0

    def reset(self) -> None:
        """Set every counter back to zero."""
        for field in dataclasses.fields(self):
            setattr(self, field.name, 0)

    def snapshot(self) -> dict[str, int]:
        """The counters as a plain dict."""
        return dataclasses.asdict(self)


counters = TransferCounters()


def _count_upload(destination: torch.Tensor) -> None:
    if destination.is_cuda:
        counters.host_to_device_copies += 1


class _StageSlot:
    """One persistent host buffer, its views by length, and the event of its last copy."""

    __slots__ = ("copy_done", "host", "host_array", "views")

    def __init__(self) -> None:
        self.host: torch.Tensor | None = None
        self.host_array: np.ndarray | None = None  # a numpy view of ``host``
        self.views: dict[int, torch.Tensor] = {}  # host[:n] by n, made once per length
        self.copy_done: torch.Event | None = None  # recorded after each copy to a GPU

    def view(self, numel: int) -> torch.Tensor:
        """``host[:numel]``, cached: slicing a tensor costs about as much as a small op."""
        view = self.views.get(numel)
        if view is None:
            assert self.host is not None
            if len(self.views) >= _MAX_VIEWS_PER_SLOT:
                self.views.clear()
            view = self.views[numel] = self.host[:numel]
        return view


class _StageRing:
    """The slots of one (dtype, device) key, used in turn."""

    __slots__ = ("next", "slots")

    def __init__(self, size: int) -> None:
        self.slots = [_StageSlot() for _ in range(size)]
        self.next = 0


class PinnedStagePool:
    """Persistent host staging buffers, shared by all steps and keyed by dtype and device.

    Each key owns a ring of ``slots`` buffers, allocated on first use and grown (to the
    next power of two) only when a step needs more room, so steady-state steps allocate
    nothing. Buffers are pinned only when the destination is a CUDA tensor. A slot is
    rewritten only after the copy that last read it has run: an event recorded after each
    copy (``torch.Event``, whose ``record`` and ``query`` stay in C++) is queried, without
    blocking, when the ring comes back to the slot. With two slots the host can prepare
    step N+1 while the copy of step N is still queued, and waits only when it runs two
    steps ahead of the GPU (counted in ``counters.stage_waits``).
    """

    def __init__(self, slots: int = _STAGE_SLOTS) -> None:
        self._slots = slots
        self._rings: dict[tuple[torch.dtype, torch.device], _StageRing] = {}

    def upload(
        self, destination: torch.Tensor, numel: int, values: np.ndarray, padding: int = 0
    ) -> None:
        """Copy ``values`` (flattened), then ``padding`` up to ``numel`` elements, into
        ``destination`` through a stage.

        ``destination`` is contiguous; its first ``numel`` elements (flattened) are written.
        """
        key = (destination.dtype, destination.device)
        ring = self._rings.get(key)
        if ring is None:
            ring = self._rings[key] = _StageRing(self._slots)
        slot = ring.slots[ring.next]
        ring.next = (ring.next + 1) % len(ring.slots)
        copy_done = slot.copy_done
        if copy_done is not None and not copy_done.query():
            counters.stage_waits += 1
            copy_done.synchronize()
        host_array = slot.host_array
        if host_array is None or host_array.size < numel:
            host_array = self._grow(slot, destination, numel)
        count = values.size
        if count > numel:
            raise ValueError(f"{count} values do not fit in the {numel} elements to upload")
        host_array[:count] = values.reshape(-1) if values.ndim != 1 else values
        if count < numel:
            host_array[count:numel] = padding
        if destination.dim() != 1:
            destination = destination.view(-1)
        if destination.numel() != numel:
            destination = destination[:numel]
        destination.copy_(slot.view(numel), non_blocking=True)
        if destination.is_cuda:
            counters.host_to_device_copies += 1
            if copy_done is None:
                copy_done = slot.copy_done = torch.Event(destination.device)
            if destination.get_device() == torch._C._cuda_getDevice():
                copy_done.record()  # on the current stream of the current device, in C++
            else:  # the copy ran on the current stream of the destination's device
                copy_done.record(torch.cuda.current_stream(destination.device))

    @staticmethod
    def _grow(slot: _StageSlot, destination: torch.Tensor, numel: int) -> np.ndarray:
        pinned = destination.is_cuda
        capacity = max(_MIN_STAGE_ELEMENTS, 1 << max(numel - 1, 0).bit_length())
        slot.host = torch.empty(capacity, dtype=destination.dtype, pin_memory=pinned)
        slot.host_array = slot.host.numpy()
        slot.views.clear()
        counters.stage_allocations += 1
        if pinned:
            counters.pinned_allocations += 1
        return slot.host_array


stage_pool = PinnedStagePool()
"""The process-wide stage pool used by :class:`StepMetadata` and :func:`write_chunk_metadata`."""


# ---------------------------------------------------------------------------------------
# Input validation
# ---------------------------------------------------------------------------------------


def _is_integer_dtype(dtype: torch.dtype) -> bool:
    return not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)


_INTEGER_DTYPES = frozenset(
    value
    for value in vars(torch).values()
    if isinstance(value, torch.dtype) and _is_integer_dtype(value)
)


def _check_offsets_shape(offsets: torch.Tensor, name: str) -> None:
    """Checks that need no data (and therefore no sync): a 1-D integer tensor, not empty."""
    if not isinstance(offsets, torch.Tensor):
        raise ValueError(f"{name} must be a tensor, got {type(offsets).__name__}")
    if offsets.dim() != 1:
        raise ValueError(f"{name} must be 1-D, got shape {tuple(offsets.shape)}")
    if offsets.dtype not in _INTEGER_DTYPES:
        raise ValueError(f"{name} must have an integer dtype, got {offsets.dtype}")
    if offsets.numel() == 0:
        raise ValueError(f"{name} must hold at least the leading 0, got an empty tensor")


def _host_offsets(
    offsets: Any, name: str, *, check_order: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Validate cumulative offsets held on the host: (offsets, lengths) as numpy arrays.

    A constant number of numpy calls whatever the batch size: it runs every step. With
    ``check_order=False`` the caller checks that no length is negative itself (see
    :func:`_token_requests`).
    """
    if isinstance(offsets, torch.Tensor):
        if not offsets.is_cpu:
            raise ValueError(
                f"{name} is on {offsets.device}; pass the host copy (reading a device "
                "tensor back blocks until all queued GPU work is done)"
            )
        _check_offsets_shape(offsets, name)
        array = offsets.numpy()
    else:
        array = np.asarray(offsets)
        if array.dtype.kind not in "iu":
            raise ValueError(f"{name} must have an integer dtype, got {array.dtype}")
        if array.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
        if array.size == 0:
            raise ValueError(f"{name} must hold at least the leading 0, got an empty array")
    if array.dtype.kind == "u":  # differences of unsigned values wrap around
        array = array.astype(np.int64)
    if array[0] != 0:
        raise ValueError(f"{name} must start at 0, got {int(array[0])}")
    lengths = array[1:] - array[:-1]
    if check_order and lengths.size and np.minimum.reduce(lengths) < 0:
        raise _order_error(array, lengths, name)
    return array, lengths


def _order_error(array: np.ndarray, lengths: np.ndarray, name: str) -> ValueError:
    at = int(np.argmax(lengths < 0))
    return ValueError(
        f"{name} must be non-decreasing; it drops from {int(array[at])} to "
        f"{int(array[at + 1])} at index {at + 1}"
    )


def _check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _check_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


def _check_buffer(
    buffer: Any,
    name: str,
    dtype: torch.dtype,
    shape_ok: Callable[[torch.Tensor], bool],
    needed: str,
    device: torch.device | None,
) -> None:
    if not isinstance(buffer, torch.Tensor):
        raise ValueError(f"{name} must be a tensor, got {type(buffer).__name__}")
    if device is not None and buffer.device != device:
        raise ValueError(f"{name} is on {buffer.device}, expected {device}")
    if buffer.dtype != dtype:
        raise ValueError(f"{name} must have dtype {dtype}, got {buffer.dtype}")
    if not buffer.is_contiguous():
        raise ValueError(f"{name} must be contiguous")
    if not shape_ok(buffer):
        raise ValueError(f"{name} has shape {tuple(buffer.shape)}, needs {needed}")


# ---------------------------------------------------------------------------------------
# 1. Token-to-request mapping
# ---------------------------------------------------------------------------------------


_request_ids = np.arange(1024, dtype=np.int32)  # grown by _token_requests when needed


def _token_requests(starts: np.ndarray, lengths: np.ndarray, name: str) -> np.ndarray:
    """The request index of each scheduled token (``int32``), from validated offsets.

    Also the order check of offsets read with ``check_order=False``: numpy's ``repeat``
    rejects negative lengths, so the check costs no numpy call of its own.
    """
    global _request_ids
    ids = _request_ids
    if ids.size < lengths.size:
        ids = _request_ids = np.arange(lengths.size, dtype=np.int32)
    try:
        return ids[: lengths.size].repeat(lengths)
    except ValueError:
        raise _order_error(starts, lengths, name) from None


def _check_num_tokens(num_tokens: Any, actual: int) -> int:
    if type(num_tokens) is int and num_tokens >= actual:
        return num_tokens
    if num_tokens is None:
        return actual
    padded = _check_count(num_tokens, "num_tokens")
    if padded < actual:
        raise ValueError(f"num_tokens={padded} is smaller than the {actual} scheduled tokens")
    return padded


class StepMetadata:
    """Per-step common attention metadata, built once and shared by every backend.

    ``query_start_loc_cpu`` is the host copy of the cumulative query offsets (what the
    scheduler already has); ``query_start_loc`` the device copy, if any, which fixes the
    device that mapping buffers must live on; ``num_tokens`` the padded token count (a
    CUDA-graph batch size), defaulting to the scheduled tokens. Construction validates the
    offsets and computes the request of each token on the host (one numpy ``repeat``, which
    is also the order check); the first :meth:`token_to_req_indices` copies it to the device.
    """

    __slots__ = (
        "_buffer",
        "_requests",
        "_token_to_req",
        "builds",
        "num_actual_tokens",
        "num_reqs",
        "num_tokens",
        "query_start_loc",
        "query_start_loc_cpu",
    )

    def __init__(
        self,
        query_start_loc_cpu: Any,
        query_start_loc: torch.Tensor | None = None,
        num_tokens: int | None = None,
    ) -> None:
        name = "query_start_loc_cpu"
        starts, lengths = _host_offsets(query_start_loc_cpu, name, check_order=False)
        self._requests = _token_requests(starts, lengths, name)
        if query_start_loc is not None:
            _check_offsets_shape(query_start_loc, "query_start_loc")
            if query_start_loc.numel() != starts.size:
                raise ValueError(
                    f"query_start_loc has {query_start_loc.numel()} entries but "
                    f"query_start_loc_cpu has {starts.size}"
                )
        self.query_start_loc_cpu = query_start_loc_cpu
        self.query_start_loc = query_start_loc
        self.num_reqs = starts.size - 1
        self.num_actual_tokens = int(starts[-1])
        self.num_tokens = _check_num_tokens(num_tokens, self.num_actual_tokens)
        self.builds = 0
        self._buffer: torch.Tensor | None = None
        self._token_to_req: torch.Tensor | None = None

    def token_to_req_indices(self, buffer: torch.Tensor) -> torch.Tensor:
        """The request index of every token, in ``buffer[:num_tokens]`` (padding is 0).

        The first call builds it on the host and copies it once; every later call returns
        the same view. ``buffer`` is the caller's persistent ``int32`` buffer.
        """
        if self._token_to_req is not None:
            if buffer is not self._buffer and (
                not isinstance(buffer, torch.Tensor)
                or buffer.data_ptr() != self._token_to_req.data_ptr()
            ):
                raise ValueError(
                    "this step's mapping was already built into another buffer; "
                    "pass the same persistent buffer to every consumer"
                )
            return self._token_to_req
        num_tokens = self.num_tokens
        self._check_mapping_buffer(buffer, num_tokens)
        view = buffer if buffer.numel() == num_tokens else buffer[:num_tokens]
        stage_pool.upload(view, num_tokens, self._requests)
        self.builds += 1
        self._buffer = buffer
        self._token_to_req = view
        return view

    def _check_mapping_buffer(self, buffer: Any, num_tokens: int) -> None:
        if not isinstance(buffer, torch.Tensor):
            raise ValueError(f"buffer must be a tensor, got {type(buffer).__name__}")
        if self.query_start_loc is not None and buffer.device != self.query_start_loc.device:
            raise ValueError(
                f"buffer is on {buffer.device}, expected {self.query_start_loc.device}"
            )
        if buffer.dtype != MAPPING_DTYPE:
            raise ValueError(f"buffer must have dtype {MAPPING_DTYPE}, got {buffer.dtype}")
        if buffer.dim() != 1 or buffer.numel() < num_tokens:
            raise ValueError(
                f"buffer has shape {tuple(buffer.shape)}, needs a 1-D tensor of at least "
                f"num_tokens={num_tokens} elements"
            )
        if not buffer.is_contiguous():
            raise ValueError("buffer must be contiguous")


def token_to_req_indices_device(query_start_loc: torch.Tensor, num_tokens: int) -> torch.Tensor:
    """Device-only mapping: no host work, no sync (``searchsorted`` against the offsets).

    Tokens at or past ``query_start_loc[-1]`` (padding) map to 0, as in :class:`StepMetadata`.
    Offsets are not checked for order here: that would need their values on the host.
    """
    _check_offsets_shape(query_start_loc, "query_start_loc")
    num_tokens = _check_count(num_tokens, "num_tokens")
    tokens = torch.arange(num_tokens, device=query_start_loc.device, dtype=query_start_loc.dtype)
    request = torch.searchsorted(query_start_loc[1:], tokens, right=True, out_int32=True)
    return torch.where(tokens < query_start_loc[-1], request, 0)


def naive_token_to_req_indices(
    query_start_loc_cpu: Any, buffer: torch.Tensor, num_tokens: int | None = None
) -> torch.Tensor:
    """The per-consumer rebuild this module replaces: numpy repeat, fresh pinned tensor, copy."""
    starts, lengths = _host_offsets(query_start_loc_cpu, "query_start_loc_cpu")
    actual = int(starts[-1])
    padded = _check_num_tokens(num_tokens, actual)
    _check_buffer(
        buffer,
        "buffer",
        MAPPING_DTYPE,
        lambda b: b.dim() == 1 and b.numel() >= padded,
        f"a 1-D tensor of at least num_tokens={padded} elements",
        None,
    )
    mapping = np.repeat(np.arange(lengths.size, dtype=np.int32), lengths)
    host = torch.from_numpy(mapping)
    if buffer.device.type == "cuda":
        host = host.pin_memory()
        counters.pinned_allocations += 1
    buffer[:actual].copy_(host, non_blocking=True)
    _count_upload(buffer)
    buffer[actual:padded].zero_()
    return buffer[:padded]


# ---------------------------------------------------------------------------------------
# 2. Chunk indices for chunked linear attention
# ---------------------------------------------------------------------------------------


def max_chunks_bound(num_tokens: int, num_seqs: int, chunk_size: int = CHUNK_SIZE) -> int:
    """A static upper bound on the chunks of ``num_seqs`` sequences holding ``num_tokens``."""
    num_tokens = _check_count(num_tokens, "num_tokens")
    num_seqs = _check_count(num_seqs, "num_seqs")
    chunk_size = _check_positive_int(chunk_size, "chunk_size")
    return min(num_tokens, (num_tokens + num_seqs * (chunk_size - 1)) // chunk_size)


def _chunk_counts(lengths: np.ndarray, chunk_size: int) -> np.ndarray:
    return -(-lengths.astype(np.int64) // chunk_size)


def _chunk_layout(cu_seqlens: Any, chunk_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices [num_chunks, 2], offsets [num_seqs + 1]) as int64 numpy, from host offsets."""
    chunk_size = _check_positive_int(chunk_size, "chunk_size")
    counts = _chunk_counts(_host_offsets(cu_seqlens, "cu_seqlens")[1], chunk_size)
    offsets = np.zeros(counts.size + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    sequence = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    chunk = np.arange(offsets[-1], dtype=np.int64) - offsets[sequence]
    return np.stack([sequence, chunk], axis=1), offsets


def prepare_chunk_indices(cu_seqlens: Any, chunk_size: int = CHUNK_SIZE) -> torch.Tensor:
    """Rows of (sequence index in the batch, chunk index within it), on the host.

    ``cu_seqlens`` is the host copy (a CPU tensor or numpy array). Zero-length sequences
    get no rows and keep the sequence index of the later ones unchanged.
    """
    indices, _ = _chunk_layout(cu_seqlens, chunk_size)
    return torch.from_numpy(indices)


def prepare_chunk_offsets(cu_seqlens: Any, chunk_size: int = CHUNK_SIZE) -> torch.Tensor:
    """Cumulative chunk counts, ``[num_seqs + 1]``, on the host."""
    _, offsets = _chunk_layout(cu_seqlens, chunk_size)
    return torch.from_numpy(offsets)


def write_chunk_metadata(
    cu_seqlens_cpu: Any,
    indices_buffer: torch.Tensor,
    offsets_buffer: torch.Tensor,
    chunk_size: int = CHUNK_SIZE,
) -> int:
    """Compute chunk indices and offsets on the host and copy them into persistent buffers.

    ``indices_buffer`` is ``[max_chunks, 2]``; rows past the real chunks are set to -1.
    ``offsets_buffer`` is 1-D with at least ``num_seqs + 1`` entries; entries past the real
    sequences repeat the total (empty padding sequences). Both are ``int64`` on one device
    and keep their addresses, so a CUDA graph can read them. Returns the number of chunks.
    """
    indices, offsets = _chunk_layout(cu_seqlens_cpu, chunk_size)
    _check_buffer(
        indices_buffer,
        "indices_buffer",
        CHUNK_INDEX_DTYPE,
        lambda b: b.dim() == 2 and b.shape[1] == 2 and b.shape[0] >= len(indices),
        f"[max_chunks >= {len(indices)}, 2]",
        None,
    )
    _check_buffer(
        offsets_buffer,
        "offsets_buffer",
        CHUNK_INDEX_DTYPE,
        lambda b: b.dim() == 1 and b.numel() >= offsets.size,
        f"a 1-D tensor of at least {offsets.size} elements",
        indices_buffer.device,
    )
    stage_pool.upload(indices_buffer, indices_buffer.numel(), indices, -1)
    stage_pool.upload(offsets_buffer, offsets_buffer.numel(), offsets, int(offsets[-1]))
    return len(indices)


def prepare_chunk_indices_device(
    cu_seqlens: torch.Tensor, chunk_size: int, max_chunks: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Chunk indices padded with -1 rows to ``max_chunks``, and chunk offsets, on the device.

    Sync-free: the output shape depends only on ``max_chunks``. The values of
    ``cu_seqlens`` (start at 0, non-decreasing, at most ``max_chunks`` chunks) are checked
    eagerly with a ``ValueError`` when the tensor is on the CPU; on an accelerator they are
    checked by ``torch._assert_async``, which never blocks the host but, on failure, aborts
    the device context at the next synchronization (a device-side assert) instead of
    raising here. Shape and dtype errors are always a ``ValueError``.
    """
    _check_offsets_shape(cu_seqlens, "cu_seqlens")
    chunk_size = _check_positive_int(chunk_size, "chunk_size")
    max_chunks = _check_count(max_chunks, "max_chunks")
    on_host = cu_seqlens.device.type == "cpu"
    if on_host:
        host_lengths = _host_offsets(cu_seqlens, "cu_seqlens")[1]
        total = int(_chunk_counts(host_lengths, chunk_size).sum())
        if total > max_chunks:
            raise ValueError(f"max_chunks={max_chunks} is too small: the batch has {total} chunks")
    bounds = cu_seqlens.to(CHUNK_INDEX_DTYPE)
    lengths = bounds[1:] - bounds[:-1]
    counts = (lengths + (chunk_size - 1)).div(chunk_size, rounding_mode="floor")
    offsets = torch.cat([bounds.new_zeros(1), counts.cumsum(0)])
    rows = torch.arange(max_chunks, device=bounds.device, dtype=CHUNK_INDEX_DTYPE)
    sequence = torch.searchsorted(offsets[1:], rows, right=True)
    chunk = rows - offsets.index_select(0, sequence)
    indices = torch.where((rows < offsets[-1]).unsqueeze(1), torch.stack([sequence, chunk], 1), -1)
    if not on_host:
        well_formed = (bounds[0] == 0) & (lengths >= 0).all() & (offsets[-1] <= max_chunks)
        torch._assert_async(well_formed)
    return indices, offsets


def naive_prepare_chunk_indices(
    cu_seqlens: torch.Tensor, chunk_size: int = CHUNK_SIZE
) -> torch.Tensor:
    """As found in kernel wrappers: ``.tolist()`` on the device offsets, one ``arange`` per
    sequence on the host, and a copy up from pageable memory (two syncs per call).

    The sequence index is written per sequence, not derived with ``eq(0).cumsum(0) - 1``,
    so the result is correct (and comparable) with zero-length sequences.
    """
    _check_offsets_shape(cu_seqlens, "cu_seqlens")
    chunk_size = _check_positive_int(chunk_size, "chunk_size")
    lengths = _host_offsets(np.asarray(cu_seqlens.tolist(), dtype=np.int64), "cu_seqlens")[1]
    rows = [
        torch.stack([torch.full((count,), sequence), torch.arange(count)], 1)
        for sequence, count in enumerate(_chunk_counts(lengths, chunk_size).tolist())
    ]
    indices = torch.cat(rows) if rows else torch.empty(0, 2, dtype=CHUNK_INDEX_DTYPE)
    _count_upload(cu_seqlens)
    return indices.to(cu_seqlens.device)


def naive_prepare_chunk_offsets(
    cu_seqlens: torch.Tensor, chunk_size: int = CHUNK_SIZE
) -> torch.Tensor:
    """As found in kernel wrappers: the leading 0 is ``new_tensor([0])``, a blocking copy."""
    _check_offsets_shape(cu_seqlens, "cu_seqlens")
    chunk_size = _check_positive_int(chunk_size, "chunk_size")
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).to(CHUNK_INDEX_DTYPE)
    counts = (lengths + (chunk_size - 1)).div(chunk_size, rounding_mode="floor")
    _count_upload(cu_seqlens)
    return torch.cat([cu_seqlens.new_tensor([0], dtype=CHUNK_INDEX_DTYPE), counts]).cumsum(0)


def chunked_linear_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    cu_seqlens: torch.Tensor,
    chunk_indices: torch.Tensor | None = None,
    chunk_offsets: torch.Tensor | None = None,
    chunk_size: int = CHUNK_SIZE,
) -> torch.Tensor:
    """Causal linear attention over packed sequences: ``o_t = sum_{s<=t} (q_t . k_s) v_s``.

    ``q``, ``k``: ``[num_tokens, d]``, ``v``: ``[num_tokens, d_v]``, ``cu_seqlens`` on their
    device. Computed chunk by chunk: a causal product inside each chunk plus the running
    ``k^T v`` state of the earlier chunks of the same sequence. Pass ``chunk_indices`` /
    ``chunk_offsets`` precomputed by the metadata builder (rows of -1 are padding); when
    absent they are computed here with :func:`prepare_chunk_indices_device` and the static
    bound :func:`max_chunks_bound`, so no path through this function syncs.
    """
    _check_offsets_shape(cu_seqlens, "cu_seqlens")
    chunk_size = _check_positive_int(chunk_size, "chunk_size")
    if q.dim() != 2 or k.shape != q.shape or v.dim() != 2 or v.shape[0] != q.shape[0]:
        raise ValueError(
            "expected q, k of shape [num_tokens, d] and v of shape [num_tokens, d_v], got "
            f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}"
        )
    num_tokens, num_seqs = q.shape[0], cu_seqlens.numel() - 1
    if cu_seqlens.device.type == "cpu":
        total = int(_host_offsets(cu_seqlens, "cu_seqlens")[0][-1])
        if total > num_tokens:
            raise ValueError(f"cu_seqlens ends at {total} but q holds only {num_tokens} tokens")
    if chunk_indices is None or chunk_offsets is None:
        bound = max_chunks_bound(num_tokens, num_seqs, chunk_size)
        computed = prepare_chunk_indices_device(cu_seqlens, chunk_size, bound)
        chunk_indices = computed[0] if chunk_indices is None else chunk_indices
        chunk_offsets = computed[1] if chunk_offsets is None else chunk_offsets
    if chunk_indices.dim() != 2 or chunk_indices.shape[1] != 2:
        raise ValueError(f"chunk_indices must be [num_chunks, 2], got {tuple(chunk_indices.shape)}")
    if chunk_offsets.dim() != 1 or chunk_offsets.numel() < num_seqs + 1:
        raise ValueError(
            f"chunk_offsets must be 1-D with at least {num_seqs + 1} entries, "
            f"got {tuple(chunk_offsets.shape)}"
        )
    if num_tokens == 0 or chunk_indices.shape[0] == 0:
        return v.new_zeros(v.shape)

    bounds = cu_seqlens.to(CHUNK_INDEX_DTYPE)
    sequence, chunk = chunk_indices[:, 0], chunk_indices[:, 1]
    real_row = sequence >= 0
    sequence = sequence.clamp(min=0)
    starts = bounds.index_select(0, sequence) + chunk * chunk_size
    ends = bounds.index_select(0, sequence + 1)
    positions = starts.unsqueeze(1) + torch.arange(chunk_size, device=q.device)
    valid = real_row.unsqueeze(1) & (positions < ends.unsqueeze(1))
    rows, width = positions.shape

    def gather(x: torch.Tensor) -> torch.Tensor:
        picked = x.index_select(0, torch.where(valid, positions, 0).reshape(-1))
        return picked.view(rows, width, -1) * valid.unsqueeze(2).to(x.dtype)

    q_chunks, k_chunks, v_chunks = gather(q), gather(k), gather(v)
    chunk_states = torch.einsum("rcd,rce->rde", k_chunks, v_chunks)
    earlier = chunk_states.cumsum(0) - chunk_states
    first_row = chunk_offsets.index_select(0, sequence)
    carried = earlier - earlier.index_select(0, first_row)
    scores = torch.einsum("rcd,rsd->rcs", q_chunks, k_chunks).tril()
    chunk_out = scores @ v_chunks + torch.einsum("rcd,rde->rce", q_chunks, carried)

    out = v.new_zeros(num_tokens + 1, v.shape[1])
    target = torch.where(valid, positions, num_tokens).reshape(-1, 1).expand(-1, v.shape[1])
    out.scatter_(0, target, chunk_out.reshape(-1, v.shape[1]))
    return out[:num_tokens]
