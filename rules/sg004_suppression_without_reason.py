"""SG004: a suppression comment without a reason."""

from __future__ import annotations

from syncguard.rule import Invalid, Valid
from syncguard.rules._suppression import SuppressionRule


class SuppressionWithoutReason(SuppressionRule):
    """Flags a suppression of syncguard codes with no ``-- reason`` after it, when
    reasons are required: ``require-reason = true`` in ``[tool.syncguard]``,
    ``--require-reason``, or ``--select SG004`` by its full code (a prefix such as the
    default ``SG`` does not turn it on).

    Why it matters: a silenced sync still costs its stall every step. The reason
    (``-- once per step, after the sampler``) is what a reviewer checks and what tells
    the next reader whether the trade-off still holds.

    How to fix: say why after the codes: ``# syncguard: ignore[SG101] -- once per step``
    or ``# noqa: SG101 -- read once, after the sampler``.
    """

    code = "SG004"
    name = "suppression-without-reason"
    message = "a suppression comment gives no reason"

    VALID = [
        Valid(
            """
import torch

@torch.compile
def step(x):
    return x.item()  # syncguard: ignore[SG101] -- once per step, after the sampler
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch

@torch.compile
def step(x):
    return x.item()  # noqa: SG101
""",
            line=5,
        ),
    ]
