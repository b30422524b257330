"""Runtime companion: audit the host-device syncs a code path really performs.

``sync_audit`` (context manager and decorator), its events and errors, and
``mark_host`` for simulation. Importing this package does not import torch; an audit
imports it when it starts. The reference fixes live in ``syncguard.runtime.reference``.
"""

from syncguard.runtime._events import KINDS, SyncError, SyncEvent, SyncWarning
from syncguard.runtime.audit import ENV_VAR, MODES, SyncAudit, mark_host, sync_audit

__all__ = [
    "ENV_VAR",
    "KINDS",
    "MODES",
    "SyncAudit",
    "SyncError",
    "SyncEvent",
    "SyncWarning",
    "mark_host",
    "sync_audit",
]
