"""What the suppression-hygiene rules (SG001-SG004) share: they judge comments, not ops."""

from __future__ import annotations

from syncguard.rule import Rule


class SuppressionRule(Rule):
    """A rule about ``# noqa`` / ``# syncguard: ignore[...]`` comments (reported by
    :mod:`syncguard.hygiene`): no op of its own, so no cost, graph break or host wait."""

    tokens = ("noqa", "syncguard")
    cost = "none of its own: it is about the comments that decide which syncs are reported"
    graph_break = False
    blocks_host = False
