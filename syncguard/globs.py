"""Globs over qualified names (``pkg.*Runner.step``), compiled once per setting."""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable

Matcher = Callable[[str], object]  # a compiled glob's ``match``


def matches(name: str, patterns: tuple[str, ...]) -> str | None:
    """The first glob of ``patterns`` that matches ``name``."""
    if not patterns:
        return None
    any_match, each = compiled_globs(patterns)
    if any_match(name) is None:  # one regex for all: most names match none
        return None
    for pattern, match in each:
        if match(name):
            return pattern
    return None


@functools.lru_cache(maxsize=32)
def compiled_globs(
    patterns: tuple[str, ...],
) -> tuple[Matcher, tuple[tuple[str, Matcher], ...]]:
    """A matcher for any of ``patterns``, and one for each."""
    translated = [fnmatch.translate(pattern) for pattern in patterns]
    any_match = re.compile("|".join(f"(?:{regex})" for regex in translated)).match
    return any_match, tuple(
        (pattern, re.compile(regex).match)
        for pattern, regex in zip(patterns, translated, strict=True)
    )
