"""SG001: a suppression comment that silences nothing."""

from __future__ import annotations

from syncguard.rule import Invalid, Valid
from syncguard.rules._suppression import SuppressionRule


class UnusedSuppression(SuppressionRule):
    """Flags a syncguard code in a ``# noqa:`` or ``# syncguard: ignore[...]`` comment, or
    a bare ``# syncguard: ignore``, that silences no finding of the run (ruff's RUF100 for
    syncguard's codes). A bare ``# noqa`` and other tools' codes (``# noqa: E501``) are
    left alone: they may be theirs. The suppression pass reports it, not a visit of the code.

    Why it matters: a suppression outlives the sync it was written for. Once the
    ``.item()`` is gone, the stale ``# noqa: SG101`` still silences the next sync
    someone adds to that line, and readers take it as a sign the line syncs.

    How to fix: remove the code (``--fix`` does, keeping the rest of the comment), or the
    whole comment when nothing else is left in it. A suppression used only with
    ``--scope all`` counts as unused in the default hot scope: lint with the scope you
    wrote it for.
    """

    code = "SG001"
    name = "unused-suppression"
    message = "a suppression comment silences nothing"

    VALID = [
        Valid(
            """
import torch

@torch.compile
def step(x, n):
    a = x.item()  # noqa: SG101
    b = n + 1  # noqa: E501
    return a + b  # noqa
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch

@torch.compile
def step(x, n):
    return n + 1  # noqa: SG101
""",
            line=5,
            fixed="""
import torch

@torch.compile
def step(x, n):
    return n + 1
""",
        ),
        Invalid(
            """
import torch

@torch.compile
def step(x):
    return x.item()  # noqa: SG101, SG102, E501
""",
            line=5,
            fixed="""
import torch

@torch.compile
def step(x):
    return x.item()  # noqa: SG101, E501
""",
        ),
        Invalid(
            """
def helper(n):
    return n + 1  # syncguard: ignore -- was a sync
""",
            line=2,
        ),
    ]
