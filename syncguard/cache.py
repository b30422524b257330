"""The on-disk cache: per-file facts, and the findings of whole runs.

Layout of a cache folder (``.syncguard_cache/`` beside the config file, or
``--cache-dir``)::

    CACHEDIR.TAG                 tells backup tools to skip the folder
    .gitignore                   "*": the folder never shows up in git status
    facts-<fingerprint>-NN.pack  absolute path -> (content key, flags, facts, stamp), 16 shards
    index-<fingerprint>.pack     absolute path -> (content key, flags, facts' digests, stamp)
    runs-<fingerprint>.pack      run key -> findings of the project phase
    calls-<fingerprint>-<key>.pack  per file: where its calls resolve and its hot roots,
                                 for files whose interfaces and settings hash to <key>
    edits-<fingerprint>.pack     fixes' text edits by file text and fix (syncguard.fixedits)

The fingerprint covers the cache format, the Python version (``ast`` differs
between versions) and the source of syncguard and its rules, so a new version
or an edited rule never reads facts computed by another one. A facts entry is
used only when its content key (hash of the file's bytes, module name, package
flag) matches the file as it is now. To spare reading and hashing every file, a
file's key is also trusted while its stamp (see :func:`stamp_of`) is the one
stored with it. Packs are written atomically (a temporary
file, then ``os.replace``) and carry a checksum: a corrupt, truncated or foreign
pack is ignored and rebuilt.

Facts are encoded by :mod:`syncguard.codec`. While no file's *interface* changes,
where an unchanged file's calls resolve is read back instead of worked out again.
The project phase's results are kept by the digests of every file's facts, so an
edit that changes no fact (a comment) reuses them, and by the digests of their
shapes, so an edit that only moves lines carries them over (see
:mod:`syncguard.moves`).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import pickle
import sys
import zlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from syncguard._version import __version__
from syncguard.codec import (
    DIGEST_SIZE,
    CallFilter,
    Payload,
    codec_is_current,
    decode_facts,
    digest_of,
    encode_facts,
    header_of,
    interface_digest,
    interface_of,
    lines_in,
    prune_calls,
    shape_of,
)

__all__ = [
    "DIGEST_SIZE",
    "Cache",
    "CallFilter",
    "KnownFile",
    "Payload",
    "Stamp",
    "codec_is_current",
    "content_key",
    "decode_facts",
    "digest_of",
    "encode_facts",
    "header_of",
    "interface_digest",
    "interface_of",
    "lines_in",
    "prune_calls",
    "shape_of",
    "stamp_of",
]  # fmt: skip

CACHE_FOLDER = ".syncguard_cache"
FORMAT = 8
_MAGIC = b"syncguard-cache\n"
_CHECKSUM_SIZE = 16
_CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by syncguard.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)
_KEPT_FINGERPRINTS = 3  # packs of older syncguard versions kept (several installs side by side)
_KEPT_RUNS = 4  # results of distinct runs kept (e.g. `check .` and a pre-commit file list)
SHARDS = 16  # facts packs per fingerprint: an edit rewrites one, not all of them
_KEPT_CALL_GRAPHS = 2  # resolved calls of distinct sets of files (a tree, a file list)
# A file changed less than this long before it was read gets no stamp: a second write
# within the file system's timestamp granularity could leave size and times alike.
_RACY_NS = 2_000_000_000

# Where the calls of one file resolve: for each function with calls that do, its
# qualname, the positions of those calls in the encoded facts and their callees.
ResolvedCalls = tuple[tuple[str, tuple[int, ...], tuple[tuple[tuple[str, str], ...], ...]], ...]
# What the project phase worked out for one file that holds while no interface and
# no setting changes: its content key, where its calls resolve, and the functions
# that are hot roots by their class or by the configured globs (qualname -> reason).
KnownFile = tuple[bytes, ResolvedCalls, dict[str, str]]
# What identifies a file's content without reading it: size, mtime, ctime, inode, and
# the module name and package flag of its content key (see :func:`stamp_of`).
Stamp = tuple[int, int, int, int, str, bool]


# ---------------------------------------------------------------- fingerprint


@cache
def fingerprint() -> str:
    """A hash of everything besides a file's content that decides its facts."""
    from syncguard import rules

    digest = hashlib.blake2b(digest_size=8)
    digest.update(f"{FORMAT}|{__version__}|{sys.version_info[:2]}".encode())
    folders = [Path(__file__).parent, *map(Path, rules.__path__)]
    for folder in folders:
        for path in sorted(folder.glob("*.py")):
            digest.update(path.name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


def stamp_of(path: str, module: str, is_package: bool, now_ns: int) -> Stamp | None:
    """The stamp of the file at ``path``, taken before reading it at ``now_ns``
    (``time.time_ns()``); None if it cannot be trusted: no such file, or changed too
    shortly before (as git does for its index, a later write in the same clock tick
    would go unnoticed). A write changes the ctime, which no program can set back."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    if max(found.st_mtime_ns, found.st_ctime_ns) > now_ns - _RACY_NS:
        return None
    return (found.st_size, found.st_mtime_ns, found.st_ctime_ns, found.st_ino, module, is_package)


def content_key(data: bytes, module: str, is_package: bool) -> bytes:
    """The key of a file's facts: its bytes, module name and package flag (SHA-256, which
    CPUs with SHA extensions hash about twice as fast as BLAKE2)."""
    digest = hashlib.sha256(data)
    digest.update(f"\0{module}\0{is_package}".encode())
    return digest.digest()[:16]


# ---------------------------------------------------------------------- packs


def _checksum(body: bytes | memoryview) -> bytes:
    """Of a pack's body (SHA-256: hashed in hardware by most CPUs, the fastest here)."""
    return hashlib.sha256(body).digest()[:_CHECKSUM_SIZE]


def _read_pack(path: Path) -> dict[Any, Any]:
    """The dict stored at ``path``; empty when missing, corrupt or foreign."""
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    header = len(_MAGIC) + _CHECKSUM_SIZE
    if len(data) < header or not data.startswith(_MAGIC):
        return {}
    body = memoryview(data)[header:]
    if _checksum(body) != data[len(_MAGIC) : header]:
        return {}
    try:
        loaded = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def kept_with(stored: dict[Any, Any], used: dict[Any, Any], cap: int) -> dict[Any, Any]:
    """What a side pack keyed by content keeps: this run's ``used`` entries, with the
    ``stored`` ones of other runs while both fit under ``cap`` entries (a run over part of
    the tree keeps the rest; entries of edited or deleted files are only dead weight,
    dropped once over the cap)."""
    return {**stored, **used} if len(stored) + len(used) <= cap else used


def write_side_pack(path: Path, content: dict[Any, Any]) -> None:
    """Store a pack beside the facts cache when its folder exists; a write that fails is
    left alone (the facts cache warns when it cannot write)."""
    if path.parent.is_dir():
        with contextlib.suppress(OSError):
            _write_pack(path, content)


def _write_pack(path: Path, content: dict[Any, Any]) -> None:
    """Store ``content`` at ``path`` atomically; raises OSError."""
    import tempfile  # ~10 ms of imports, and a run with nothing new to keep writes nothing

    body = marshal.dumps(content)
    checksum = _checksum(body)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(_MAGIC + checksum)
            stream.write(body)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


class Cache:
    """The facts and run results of one cache folder, for one lint run.

    Nothing here raises on a bad cache: unreadable or corrupt data is a miss,
    and a failed write becomes one message in :attr:`warnings`.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.warnings: list[str] = []
        self._runs_path = folder / f"runs-{fingerprint()}.pack"
        self._index_path = folder / f"index-{fingerprint()}.pack"
        # Per shard, read when first asked: absolute path -> (content key, ignore-file
        # flag, error flag, facts, the file's stamp when it was read or None).
        self._shards: list[dict[str, tuple[bytes, bool, bool, Payload, Stamp | None]] | None]
        self._shards = [None] * SHARDS
        # Per file, beside the shards and small: (content key, ignore-file flag, error
        # flag, the digests that start its facts (see :func:`header_of`), stamp). A run
        # whose findings are all kept reads only this.
        self._index: dict[str, tuple[bytes, bool, bool, bytes, Stamp | None]] = {
            path: entry
            for path, entry in _read_pack(self._index_path).items()
            if isinstance(path, str) and isinstance(entry, tuple) and len(entry) == 5
        }
        self._index_dirty = False
        self._dirty: set[int] = set()
        self._runs: dict[bytes, tuple[bytes, bytes, bytes]] | None = None
        self._resolved: dict[bytes, dict[str, KnownFile]] = {}
        self._absolute_paths: dict[str, str] = {}
        self._cwd = os.getcwd()

    def _absolute(self, path: str) -> str:
        """``os.path.abspath(path)``, worked out once per path (asked several times a run)."""
        found = self._absolute_paths.get(path)
        if found is None:
            found = self._absolute_paths[path] = _absolute(path, self._cwd)
        return found

    def _shard(self, shard: int) -> dict[str, tuple[bytes, bool, bool, Payload, Stamp | None]]:
        """The entries of ``shard``, read from its pack the first time."""
        entries = self._shards[shard]
        if entries is None:
            entries = self._shards[shard] = {
                path: entry
                for path, entry in _read_pack(self._shard_path(shard)).items()
                if isinstance(path, str) and isinstance(entry, tuple) and len(entry) == 5
            }
        return entries

    def _note(self, absolute: str, entry: tuple[bytes, bool, bool, Payload, Stamp | None]) -> None:
        """Keep the index entry of the file at ``absolute`` in step with its facts."""
        key, ignored, error, payload, stamp = entry
        self._index[absolute] = (key, ignored, error, header_of(payload), stamp)
        self._index_dirty = True

    def _shard_path(self, shard: int) -> Path:
        return self.folder / f"facts-{fingerprint()}-{shard:02d}.pack"

    def entry(self, path: str, key: bytes) -> tuple[bool, bool, Payload] | None:
        """(ignore-file flag, error flag, encoded facts) of the file at ``path`` if cached
        for ``key``."""
        absolute = self._absolute(path)
        entry = self._shard(shard_of(absolute)).get(absolute)
        if entry is None or entry[0] != key or not isinstance(entry[3], bytes):
            return None
        return bool(entry[1]), bool(entry[2]), entry[3]

    def indexed(self, path: str, key: bytes) -> tuple[bool, bool, bytes] | None:
        """(ignore-file flag, error flag, :func:`header_of` its facts) of the file at
        ``path`` if the index has it for ``key``: what a run key needs, without reading
        the facts (:meth:`entry` reads them, and may still miss)."""
        entry = self._index.get(self._absolute(path))
        if entry is None or entry[0] != key or not isinstance(entry[3], bytes):
            return None
        return bool(entry[1]), bool(entry[2]), entry[3]

    def trusted_key(self, path: str, stamp: Stamp) -> bytes | None:
        """The content key stored for the file at ``path`` if it was stored with
        ``stamp`` (the file is then as it was: no need to read it)."""
        entry = self._index.get(self._absolute(path))
        if entry is None or entry[4] != stamp or not isinstance(entry[0], bytes):
            return None
        return entry[0]

    def store(
        self,
        path: str,
        key: bytes,
        ignored: bool,
        error: bool,
        payload: Payload,
        stamp: Stamp | None,
    ) -> None:
        """Remember the encoded facts of the file at ``path``, read when it had ``stamp``."""
        absolute = self._absolute(path)
        shard = shard_of(absolute)
        self._shard(shard)[absolute] = entry = (key, ignored, error, payload, stamp)
        self._note(absolute, entry)
        self._dirty.add(shard)

    def restamp(self, path: str, stamp: Stamp | None) -> None:
        """Note that the file at ``path``, its facts found by content key, has ``stamp``."""
        absolute = self._absolute(path)
        shard = shard_of(absolute)
        entry = self._shard(shard).get(absolute)
        if entry is not None and (entry[4] != stamp or absolute not in self._index):
            self._shard(shard)[absolute] = entry = (*entry[:4], stamp)
            self._note(absolute, entry)
            self._dirty.add(shard)

    def forget(self, path: str) -> None:
        """Drop the entry of ``path`` (it could not be decoded)."""
        absolute = self._absolute(path)
        shard = shard_of(absolute)
        if self._index.pop(absolute, None) is not None:
            self._index_dirty = True
        if self._shard(shard).pop(absolute, None) is not None:
            self._dirty.add(shard)

    def findings(self, run_key: bytes) -> list[Any] | None:
        """The project-phase findings of an identical earlier run, if kept."""
        entry = self._run_entries().get(run_key)
        return _findings_in(entry[0]) if entry is not None else None

    def moved_findings(self, shape_key: bytes) -> tuple[bytes, list[Any]] | None:
        """The facts digests (joined) and the findings of an earlier run over files of the
        same shapes (see :mod:`syncguard.moves`), if kept."""
        for blob, shape, digests in self._run_entries().values():
            findings = _findings_in(blob) if shape == shape_key else None
            if findings is not None:
                return digests, findings
        return None

    def store_findings(
        self, run_key: bytes, findings: list[Any], shape_key: bytes = b"", digests: bytes = b""
    ) -> None:
        """Keep the findings of this run, with the shape key and the facts digests of its
        files (and those of a few recent other runs)."""
        runs = {  # an earlier run of the same shapes is superseded by this one
            key: entry
            for key, entry in self._run_entries().items()
            if key != run_key and not (shape_key and entry[1] == shape_key)
        }
        kept = dict(list(runs.items())[-(_KEPT_RUNS - 1) :]) if _KEPT_RUNS > 1 else {}
        kept[run_key] = (pickle.dumps(findings, pickle.HIGHEST_PROTOCOL), shape_key, digests)
        self._runs = kept
        self._save(self._runs_path, kept)

    def _run_entries(self) -> dict[bytes, tuple[bytes, bytes, bytes]]:
        if self._runs is None:
            self._runs = {
                key: entry
                for key, entry in _read_pack(self._runs_path).items()
                if isinstance(entry, tuple)
                and len(entry) == 3
                and all(isinstance(part, bytes) for part in entry)
            }
        return self._runs

    def previous(self, path: str) -> Payload | None:
        """The encoded facts stored for the file at ``path``, whatever its content was."""
        absolute = self._absolute(path)
        entry = self._shard(shard_of(absolute)).get(absolute)
        return entry[3] if entry is not None and isinstance(entry[3], bytes) else None

    def known_files(self, interface_key: bytes) -> dict[str, KnownFile]:
        """Per file path: what an earlier run over files whose interfaces (and the
        settings) hash to ``interface_key`` stored; empty if none."""
        found = self._resolved.get(interface_key)
        if found is None:
            found = self._resolved[interface_key] = {
                path: entry
                for path, entry in _read_pack(self._calls_path(interface_key)).items()
                if isinstance(path, str)
                and isinstance(entry, tuple)
                and len(entry) == 3
                and isinstance(entry[0], bytes)
                and isinstance(entry[1], tuple)
                and isinstance(entry[2], dict)
            }
        return found

    def store_known_files(self, interface_key: bytes, entries: dict[str, KnownFile]) -> None:
        """Keep what the project phase worked out for a set of files (and for one other
        set)."""
        path = self._calls_path(interface_key)
        self._resolved[interface_key] = entries
        self._save(path, entries)
        graphs = sorted(
            self.folder.glob(f"calls-{fingerprint()}-*.pack"),
            key=lambda found: (found == path, _modified(found)),
            reverse=True,
        )
        for old in graphs[_KEPT_CALL_GRAPHS:]:
            with contextlib.suppress(OSError):
                old.unlink()

    def interface(self, path: str) -> bytes | None:
        """The interface digest of the facts stored for the file at ``path``, whatever
        its content was then (a guess at its interface now); None unless those were
        facts of a linted file."""
        absolute = self._absolute(path)
        entry = self._shard(shard_of(absolute)).get(absolute)
        if entry is None or entry[1] or entry[2] or not isinstance(entry[3], bytes):
            return None
        return interface_of(entry[3])

    def drop_known_files(self) -> None:
        """Let go of what :meth:`known_files` read (large, and no longer needed)."""
        self._resolved.clear()

    def _calls_path(self, interface_key: bytes) -> Path:
        return self.folder / f"calls-{fingerprint()}-{interface_key.hex()}.pack"

    def save(self, linted: Iterable[str]) -> None:
        """Write back the shards that changed; forget files that no longer exist."""
        seen = {self._absolute(path) for path in linted}
        # Every file with facts is in the index, unless a run stopped between writing
        # the shards and the index: the shards already read are looked through too.
        known = set(self._index).union(*(entries for entries in self._shards if entries))
        for path in known:
            if path not in seen and not os.path.exists(path):
                self.forget(path)
        for shard in sorted(self._dirty):
            self._save(self._shard_path(shard), self._shard(shard))
        if self._index_dirty:  # after the shards: an index never names facts not written
            self._save(self._index_path, self._index)
        self._dirty.clear()
        self._index_dirty = False

    def _save(self, path: Path, content: dict[Any, Any]) -> None:
        if self.warnings:
            return  # already failed once: one warning per run is enough
        try:
            prepare_folder(self.folder)
            _write_pack(path, content)
            _drop_old_packs(self.folder)
        except OSError as error:
            self.warnings.append(
                f"cannot write the cache in {self.folder}: {error.strerror or error} "
                "(linting works without it; --no-cache silences this)"
            )


def _absolute(path: str, cwd: str) -> str:
    """``os.path.abspath(path)`` in ``cwd``, sparing the normalisation of paths that need
    none (those the walk of a folder yields)."""
    joined = path if os.path.isabs(path) else f"{cwd}{os.sep}{path}"
    if os.sep != "/" or "//" in joined or "/." in joined or joined.endswith("/"):
        return os.path.normpath(joined)
    return joined


def _findings_in(blob: bytes) -> list[Any] | None:
    try:
        findings = pickle.loads(blob)
    except Exception:
        return None
    return findings if isinstance(findings, list) else None


def shard_of(path: str) -> int:
    """The pack that holds the facts of the file at absolute ``path``."""
    return zlib.crc32(path.encode("utf-8", "surrogateescape")) % SHARDS


def prepare_folder(folder: Path) -> None:
    """Create ``folder`` with its ``CACHEDIR.TAG`` and ``.gitignore``; raises OSError."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (("CACHEDIR.TAG", _CACHEDIR_TAG), (".gitignore", "*\n")):
        marker = folder / name
        if not marker.exists():
            marker.write_text(text, encoding="utf-8")


def _modified(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0  # removed meanwhile by another run


def _drop_old_packs(folder: Path) -> None:
    """Remove the packs of all but the few most recently written fingerprints."""
    written: dict[str, float] = {}
    packs: list[tuple[Path, str]] = []
    kinds = ("facts", "index", "runs", "calls", "edits")  # edits: syncguard.fixedits
    for pack in (p for kind in kinds for p in folder.glob(f"{kind}-*.pack")):
        stamp = pack.stem.split("-")[1]
        try:
            modified = pack.stat().st_mtime
        except OSError:
            continue  # removed meanwhile by another run
        written[stamp] = max(written.get(stamp, 0.0), modified)
        packs.append((pack, stamp))
    recent = sorted(written, key=written.__getitem__, reverse=True)[:_KEPT_FINGERPRINTS]
    for pack, stamp in packs:
        if stamp not in recent:
            with contextlib.suppress(OSError):
                pack.unlink()
