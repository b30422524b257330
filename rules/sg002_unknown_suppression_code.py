"""SG002: a code in a suppression comment that is none of syncguard's."""

from __future__ import annotations

from syncguard.rule import Invalid, Valid
from syncguard.rules._suppression import SuppressionRule


class UnknownSuppressionCode(SuppressionRule):
    """Flags a code in ``# noqa: SG...`` or ``# syncguard: ignore[...]`` that names no
    syncguard rule: a typo such as ``SG1O1`` (letter O), a removed or future code
    (``SG999``), or another tool's code inside syncguard's own ``ignore[...]`` (ruff's
    RUF102 for syncguard's codes). Prefixes of real codes (``SG1``) are fine.

    Why it matters: such a code silences nothing, so the sync it was meant for is still
    reported, or worse, the author believes a line is vetted when it is not.

    How to fix: write the code you meant (the message suggests the closest one, and
    ``syncguard rule --all`` lists them); ``--fix`` removes the unknown codes.
    """

    code = "SG002"
    name = "unknown-suppression-code"
    message = "a suppression comment names a code syncguard does not have"

    VALID = [
        Valid(
            """
import torch

@torch.compile
def step(x):
    return x.item()  # noqa: SG1, E501
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch

@torch.compile
def step(x):
    return x.item()  # noqa: SG101, SG1O1
""",
            line=5,
            fixed="""
import torch

@torch.compile
def step(x):
    return x.item()  # noqa: SG101
""",
        ),
        Invalid(
            """
import torch

@torch.compile
def step(x):
    return x.tolist()  # syncguard: ignore[SG999]
""",
            line=5,
        ),
    ]
