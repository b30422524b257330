"""What an audit reports: one :class:`SyncEvent` per blocking call, and its exceptions."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

DEVICE_TO_HOST = "device-to-host"
HOST_TO_DEVICE = "host-to-device"
DATA_DEPENDENT_SHAPE = "data-dependent-shape"
EXPLICIT = "explicit"
SCALAR_CONVERSION = "scalar-conversion"

KINDS = (DEVICE_TO_HOST, HOST_TO_DEVICE, DATA_DEPENDENT_SHAPE, EXPLICIT, SCALAR_CONVERSION)


@dataclass(frozen=True)
class SyncEvent:
    """One blocking call, attributed to the innermost frame outside torch and syncguard.

    ``op`` names the call as written at the call site (``torch.nonzero()``, ``.item()``,
    ``bool()`` for ``if t:``); ``detail`` says what detected it (an aten op in simulation,
    ``set_sync_debug_mode`` on CUDA, or a syncguard check such as a pageable copy).
    ``stack`` lists ``path:line in function`` entries, innermost first.
    """

    kind: str
    op: str
    path: str
    line: int
    function: str
    stack: tuple[str, ...]
    module: str = ""
    detail: str = ""
    simulated: bool = False
    allowed_by: str = field(default="", compare=False)

    @property
    def site(self) -> str:
        """``path:line`` of the call."""
        return f"{self.path}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary of every field."""
        data = asdict(self)
        data["stack"] = list(self.stack)
        return data


class SyncError(RuntimeError):
    """Raised by ``sync_audit(mode="raise")`` at the first sync that is not allowed."""

    def __init__(self, event: SyncEvent) -> None:
        self.event = event
        lines = [
            f"host-device sync in audited code: {event.op} ({event.kind}, {event.detail})",
            f"  at {event.site} in {event.function}",
        ]
        lines.extend(f"    {entry}" for entry in event.stack[:6])
        super().__init__("\n".join(lines))


class SyncWarning(UserWarning):
    """Emitted by ``sync_audit(mode="warn")`` for each sync, pointing at the user's line."""
