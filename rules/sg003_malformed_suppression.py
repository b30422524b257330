"""SG003: a ``# noqa`` comment without its colon."""

from __future__ import annotations

from syncguard.rule import Invalid, Valid
from syncguard.rules._suppression import SuppressionRule


class MalformedSuppression(SuppressionRule):
    """Flags ``# noqa SG101`` (codes without the colon) and ``# noqa:`` with no code
    after it, and ``# syncguard: ignore[]`` with an empty list.

    Why it matters: flake8 reads ``# noqa SG101`` as a bare ``# noqa`` that silences
    every code on the line, ruff ignores it with a warning; syncguard follows ruff, so
    the comment silences nothing and the line is reported, with this warning saying why.
    A malformed ``# noqa`` that names no syncguard code (``# noqa E501``) belongs to
    another linter and is left to it.

    How to fix: put the colon in: ``# noqa: SG101`` (``--fix`` does).
    """

    code = "SG003"
    name = "malformed-suppression"
    message = "a malformed suppression comment silences nothing"

    VALID = [
        Valid(
            """
import torch

@torch.compile
def step(x):
    return x.item()  # noqa: SG101
"""
        ),
        Valid(
            """
import torch

@torch.compile
def step(x):
    return x + 1  # noqa E501 -- another linter's comment, for that linter to judge
"""
        ),
    ]
    INVALID = [
        Invalid(
            """
import torch

@torch.compile
def step(x):
    return x.item()  # noqa SG101
""",
            line=5,
            fixed="""
import torch

@torch.compile
def step(x):
    return x.item()  # noqa: SG101
""",
        ),
    ]
