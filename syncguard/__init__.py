"""syncguard: find and prove away GPU host-device synchronizations in PyTorch code.

Importing this package is cheap and never imports torch or libcst: the
``hot`` and ``cold`` markers below are meant to be used in model code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from syncguard._version import __version__

__all__ = ["__version__", "cold", "hot"]

F = TypeVar("F", bound=Callable[..., object])


def hot(func: F) -> F:
    """Mark ``func`` as a hot path: the linter reports syncs in it and its callees."""
    return func


def cold(func: F) -> F:
    """Mark ``func`` as cold: the linter does not propagate hotness into it."""
    return func
