"""The text edits of findings' fixes, for the outputs that show them (json, sarif).

Working out an edit applies the fix's LibCST codemod to the file and checks that the
file still parses: seconds for a tree's fixes. An edit depends only on the file's text
and on the fix, so edits are kept between runs in the cache folder, keyed by both: a run
over unchanged files shows its edits without loading LibCST or parsing a file.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from syncguard.facts import Edit, Fix, Span
from syncguard.project import Finding
from syncguard.reading import Unreadable, read_source

# Edits of files a run did not show that the pack keeps (about a hundred bytes each).
MAX_KEPT = 20_000
# One edit as stored: the span's four numbers and the new text.
_Stored = tuple[int, int, int, int, str]


class FixEdits:
    """The edits of the fixes of one run's findings in their files as they are now;
    with a cache ``folder``, read from and kept in it (call :meth:`save` at the end)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self._sources: dict[str, tuple[str, bytes] | None] = {}  # path -> (text, digest)
        self._kept: dict[bytes, tuple[_Stored, ...]] | None = None
        self._used: dict[bytes, tuple[_Stored, ...]] = {}
        self._computed = False

    def of(self, finding: Finding) -> tuple[Edit, ...]:
        """The text edits of ``finding``'s fix; () when it has none or it cannot be made."""
        fix = finding.fix
        if fix is None:
            return ()
        source = self._source(finding.path)
        if source is None:
            return ()
        text, digest = source
        key = hashlib.blake2b(digest + repr(fix).encode(), digest_size=16).digest()
        stored = self._used.get(key)
        if stored is None:
            stored = self._stored().get(key)
        if stored is None:
            stored = tuple(_stored(edit) for edit in _computed(text, fix))
            self._computed = True
        self._used[key] = stored
        return tuple(Edit(Span(*edit[:4]), edit[4]) for edit in stored)

    def save(self) -> None:
        """Keep the edits worked out in this run (and those of other runs, up to a cap)."""
        path = self._path()
        if path is None or not self._computed:
            return
        from syncguard.cache import kept_with, write_side_pack

        write_side_pack(path, kept_with(self._stored(), self._used, MAX_KEPT))

    def _source(self, path: str) -> tuple[str, bytes] | None:
        if path not in self._sources:
            try:
                text = read_source(path)
            except Unreadable:
                self._sources[path] = None
            else:
                digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass")).digest()
                self._sources[path] = (text, digest)
        return self._sources[path]

    def _stored(self) -> dict[bytes, tuple[_Stored, ...]]:
        if self._kept is None:
            path = self._path()
            self._kept = {}
            if path is not None:
                from syncguard.cache import _read_pack

                self._kept = {
                    key: value
                    for key, value in _read_pack(path).items()
                    if isinstance(key, bytes) and _well_formed(value)
                }
        return self._kept

    def _path(self) -> Path | None:
        if self.folder is None:
            return None
        from syncguard.cache import fingerprint  # the edits are those of this version

        return self.folder / f"edits-{fingerprint()}.pack"


def _computed(text: str, fix: Fix) -> tuple[Edit, ...]:
    from syncguard.fixes import fix_edits  # LibCST: only for edits not kept

    return fix_edits(text, fix)


def _stored(edit: Edit) -> _Stored:
    span = edit.span
    return (span.line, span.column, span.end_line, span.end_column, edit.text)


def _well_formed(value: object) -> bool:
    return isinstance(value, tuple) and all(
        isinstance(edit, tuple)
        and len(edit) == 5
        and all(isinstance(number, int) for number in edit[:4])
        and isinstance(edit[4], str)
        for edit in value
    )
