"""``[tool.syncguard]`` in pyproject.toml: read with a TOML parser, validated, its path globs
anchored at its folder, merged with command-line options.

Which config applies to which file (the nearest one above it) is
:mod:`syncguard.hierarchy`'s business; this module reads one config.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from syncguard.reading import Unreadable, position, read_bytes

CONFIG_FILE = "pyproject.toml"  # the file a folder's config is read from
SCOPES = ("hot", "all")
_CODE_SELECTOR = re.compile(r"^SG[0-9]{0,3}$")
_TOML_POSITION = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)$")


class ConfigError(Exception):
    """A configuration problem: located in its file (``path:line:col: message``), or
    naming the command-line option it comes from."""

    def __init__(self, message: str, path: str | None = None, line: int = 1, column: int = 1):
        super().__init__(message)
        self.message, self.path, self.line, self.column = message, path, line, column

    def __str__(self) -> str:
        if self.path is None:
            return self.message
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


class Folders(Protocol):
    """Where the settings of each folder come from (:class:`syncguard.hierarchy.ConfigTree`)."""

    def settings_for(self, folder: str) -> Settings: ...

    def notes(self, root: Settings, folders: Sequence[str] | None = None) -> list[str]: ...


@dataclass(frozen=True)
class Selection:
    """One layer of rule selection, as ruff layers its config and command line: the codes
    of ``select`` (None: those the layer below selects) and ``extend_select``, less those
    of ``ignore``; the longest matching prefix decides, ``ignore`` winning a tie."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def decide(self, code: str, below: bool) -> bool:
        chosen = (*(self.select or ()), *self.extend_select)
        selected = max((len(p) for p in chosen if code.startswith(p)), default=-1)
        ignored = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        if selected < 0 and ignored < 0:
            return below if self.select is None else False
        return selected > ignored


@dataclass(frozen=True)
class Settings:
    """Everything that configures one lint run, as one config file (or the defaults) says,
    with the command-line options applied."""

    select: tuple[str, ...] = ("SG",)  # with the file's extend-select
    ignore: tuple[str, ...] = ()  # with the file's extend-ignore
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    force_exclude: bool = False  # exclude applies to paths named on the command line too
    hot_functions: tuple[str, ...] = ()
    cold_functions: tuple[str, ...] = ()
    compiled_functions: tuple[str, ...] = ()
    host_parameters: tuple[str, ...] = ()
    presets: tuple[str, ...] = ("auto",)  # framework presets (syncguard.presets)
    scope: str = "hot"
    require_reason: bool = False  # a suppression without ``-- reason`` is a finding (SG004)
    source: Path | None = None  # the pyproject.toml these settings came from
    # The folder that the path globs (exclude, per-file-ignores) are relative to: the
    # config file's; None: the working directory at the time of matching.
    anchor: str | None = None
    command_line: Selection | None = None  # --select / --extend-select / --ignore
    # Where the settings of other folders come from (the nearest config above each).
    tree: Folders | None = field(default=None, compare=False, repr=False)

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def selects(self, code: str) -> bool:
        """True when ``code`` is selected and not ignored (longest matching prefix wins),
        in this config and then on the command line."""
        chosen = Selection(self.select, (), self.ignore).decide(code, False)
        if self.command_line is not None:
            chosen = self.command_line.decide(code, chosen)
        return chosen

    def for_folder(self, folder: str) -> Settings:
        """The settings for files in ``folder``: those of the nearest config above it when
        this run looks configs up per folder (raises ConfigError when that config is bad),
        else these."""
        return self.tree.settings_for(folder) if self.tree is not None else self

    def reports(self, path: str, code: str) -> bool:
        """True when a finding of ``code`` in the file at ``path`` is reported: the settings
        of its folder select the code and no ``per-file-ignores`` glob matching it ignores it."""
        here = self.for_folder(os.path.dirname(os.path.abspath(path)))
        return here.selects(code) and not here._per_file_ignored(path, code)

    def excludes(self, path: str) -> bool:
        """True when an ``exclude`` glob matches ``path`` (a file or a folder)."""
        return bool(self.exclude) and _matches_any(self._relative(path), self.exclude)

    def notes(self, folders: Sequence[str] | None = None) -> list[str]:
        """What a run with these project-wide settings should say about its configuration:
        the configs under the linted paths (or of ``folders`` only) whose analysis settings
        differ (and are unused)."""
        return self.tree.notes(self, folders) if self.tree is not None else []

    def _per_file_ignored(self, path: str, code: str) -> bool:
        relative = None
        for pattern, codes in self.per_file_ignores:
            if any(code.startswith(prefix) for prefix in codes):
                relative = relative or self._relative(path)
                if _matches_any(relative, (pattern,)):
                    return True
        return False

    def _relative(self, path: str) -> tuple[str, str | None]:
        """(absolute posix path, posix path relative to the anchor or None if outside it)."""
        absolute = os.path.abspath(path)
        anchor = self.anchor or os.getcwd()
        try:
            relative = os.path.relpath(absolute, anchor)
        except ValueError:  # another drive (Windows)
            relative = os.pardir
        inside = relative != os.pardir and not relative.startswith(os.pardir + os.sep)
        return absolute.replace(os.sep, "/"), relative.replace(os.sep, "/") if inside else None


def _matches_any(where: tuple[str, str | None], patterns: tuple[str, ...]) -> bool:
    """True when a path glob matches the path: a glob without ``/`` matches any part of the
    path below the anchor (a folder or the file's name), one with ``/`` the path relative
    to the anchor or a folder it is in (``/...`` the absolute path); ``**/`` may match
    nothing. ``*`` matches across ``/``, as in ruff and fnmatch."""
    absolute, relative = where
    part, below, anywhere = _compiled(patterns)
    if part is not None:
        parts = relative.split("/") if relative else [absolute.rpartition("/")[2]]
        if any(part.match(name) for name in parts):
            return True
    if below is not None and relative is not None and below.match(relative):
        return True
    return anywhere is not None and anywhere.match(absolute) is not None


@functools.lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, ...]:
    """The globs of :func:`_matches_any` as three patterns: of a part of the path, of the
    path relative to the anchor (or a folder it is in), of the absolute path."""
    groups: tuple[list[str], list[str], list[str]] = ([], [], [])
    for pattern in patterns:
        pattern = pattern.removeprefix("./").rstrip("/") or "."
        if "/" not in pattern:
            groups[0].append(fnmatch.translate(pattern))
            continue
        group = groups[2] if pattern.startswith("/") else groups[1]
        for glob in {pattern, pattern[3:] if pattern.startswith("**/") else pattern}:
            body = re.sub(r"\\[Zz]$", "", fnmatch.translate(glob))  # ends the match
            group.append(body + r"(?:/.*)?\Z")
    return tuple(re.compile("|".join(group)) if group else None for group in groups)


# ------------------------------------------------------------------ reading a config


@dataclass
class _Origin:
    """Where values come from, to locate an error in them: a config file (its text), or
    the command line."""

    path: str | None = None
    text: str = ""

    def error(self, message: str, key: str | None = None) -> ConfigError:
        if self.path is None:
            return ConfigError(message)
        line, column = _key_position(self.text, key) if key else (1, 1)
        return ConfigError(message, self.path, line, column)


def _key_position(text: str, key: str) -> tuple[int, int]:
    """Best effort: (line, column) of ``key`` in the ``[tool.syncguard]`` part of ``text``
    (a TOML parser keeps no positions): the first key of that name, in any spelling
    (bare, quoted, dotted, in an inline table), from the line naming the table on."""
    lines = text.splitlines()
    name = re.escape(key.partition(".")[0])
    pattern = re.compile(rf"(?:^|[\s.{{,])(?P<key>{name}|\"{name}\"|'{name}')\s*[=.]")
    start = next((n for n, line in enumerate(lines) if "syncguard" in line), 0)
    for number in (*range(start, len(lines)), *range(start)):
        match = pattern.search(lines[number])
        if match:
            return number + 1, match.start("key") + 1
    return (start + 1, 1) if lines else (1, 1)


def _string_list(key: str, value: Any, origin: _Origin) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise origin.error(f"`{key}` must be a list of strings, got {value!r}", key)
    return tuple(value)


def _codes(key: str, value: Any, origin: _Origin) -> tuple[str, ...]:
    codes = tuple(code.strip().upper() for code in _string_list(key, value, origin))
    for code in codes:
        if not _CODE_SELECTOR.match(code):
            raise origin.error(
                f"`{key}` has {code!r}, not a rule code or prefix like SG1 or SG101", key
            )
    return codes


def _per_file_ignores(
    key: str, value: Any, origin: _Origin
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise origin.error(f"`{key}` must be a table of glob = [codes], got {value!r}", key)
    return tuple(
        (pattern, _codes(f"{key}.{pattern}", codes, origin)) for pattern, codes in value.items()
    )


def _scope(key: str, value: Any, origin: _Origin) -> str:
    if value not in SCOPES:
        raise origin.error(f"`{key}` must be one of {', '.join(SCOPES)}, got {value!r}", key)
    return str(value)


def _presets(key: str, value: Any, origin: _Origin) -> tuple[str, ...]:
    from syncguard.presets import PresetError, check_names

    names = _string_list(key, value, origin)
    try:
        check_names(names)
    except PresetError as error:
        raise origin.error(f"`{key}` has an {error}", key) from None
    return names


def _flag(key: str, value: Any, origin: _Origin) -> bool:
    if not isinstance(value, bool):
        raise origin.error(f"`{key}` must be true or false, got {value!r}", key)
    return value


_KEYS: dict[str, tuple[str, Callable[[str, Any, _Origin], Any]]] = {
    "select": ("select", _codes),
    "extend-select": ("extend_select", _codes),
    "ignore": ("ignore", _codes),
    "extend-ignore": ("extend_ignore", _codes),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _string_list),
    "force-exclude": ("force_exclude", _flag),
    "hot-functions": ("hot_functions", _string_list),
    "cold-functions": ("cold_functions", _string_list),
    "compiled-functions": ("compiled_functions", _string_list),
    "host-parameters": ("host_parameters", _string_list),
    "presets": ("presets", _presets),
    "scope": ("scope", _scope),
    "require-reason": ("require_reason", _flag),
}


def parse_codes(text: str, option: str) -> tuple[str, ...]:
    """A comma list of codes from the command line (``--select SG1,SG201``); an empty one
    (``--select ,``) is an error: it would lint nothing and pass."""
    codes = _codes(option, [part for part in text.split(",") if part.strip()], _Origin())
    if not codes:
        raise ConfigError(f"`{option}` needs at least one rule code or prefix, got {text!r}")
    return codes


def toml_parser() -> ModuleType:
    """The TOML parser, imported when a TOML file is read (a run without a config file
    spares its imports)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib
    return tomllib


def syncguard_table(path: Path) -> tuple[dict[str, Any], str] | None:
    """The ``[tool.syncguard]`` table of the TOML file at ``path`` (in any TOML spelling:
    a header, dotted keys, an inline table) and the file's text; None when it has none.
    Raises a located ConfigError when the file cannot be read, is not UTF-8 or not TOML,
    or its ``tool`` or ``tool.syncguard`` is not a table."""
    where = str(path)
    try:
        data = read_bytes(where)
    except Unreadable as unreadable:
        error = unreadable.error
        raise ConfigError(error.message, where, error.line, error.column) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line, column = position(data, error.start)
        raise ConfigError(f"not UTF-8 as TOML must be: {error}", where, line, column) from None
    tomllib = toml_parser()
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        message, line, column = _toml_error(error, text)
        raise ConfigError(f"invalid TOML: {message}", where, line, column) from None
    origin = _Origin(where, text)
    table: Any = document
    for key, name in (("tool", "tool"), ("syncguard", "tool.syncguard")):
        table = table.get(key)
        if table is None:
            return None
        if not isinstance(table, dict):
            kind = type(table).__name__
            raise origin.error(f"`{name}` must be a table, got a {kind}", key)
    return table, text


def _toml_error(error: Exception, text: str) -> tuple[str, int, int]:
    """(message, line, column) of a TOML parse error, from its attributes (Python 3.14)
    or the position its message ends with."""
    message = str(getattr(error, "msg", "") or error)
    match = _TOML_POSITION.search(message)
    line, column = getattr(error, "lineno", None), getattr(error, "colno", None)
    if match:
        message = message[: match.start()]
        if line is None and match.group(1):
            line, column = int(match.group(1)), int(match.group(2))
    if line is None or column is None:  # at the end of the document
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
    return message, line, column


def load(path: Path | None, anchor: str | None = None) -> Settings:
    """Settings from ``path`` (a pyproject.toml with a ``[tool.syncguard]`` table); the
    defaults when ``path`` is None. Path globs are relative to ``anchor`` (default: the
    file's folder). Raises a located ConfigError on any problem."""
    if path is None:
        return Settings(anchor=anchor)
    found = syncguard_table(path)
    if found is None:
        raise ConfigError("no [tool.syncguard] table in this file", str(path))
    return from_table(path, *found, anchor=anchor)


def from_table(path: Path, table: dict[str, Any], text: str, anchor: str | None = None) -> Settings:
    """Settings from the ``[tool.syncguard]`` ``table`` read from ``path`` (whose ``text``
    locates errors); see :func:`load`."""
    origin = _Origin(str(path), text)
    values: dict[str, Any] = {
        "source": path,
        "anchor": anchor or os.path.dirname(os.path.abspath(path)),
    }
    for key, value in table.items():
        if key not in _KEYS:
            import difflib  # only for this message

            close = difflib.get_close_matches(key, _KEYS, n=1)
            hint = f"did you mean `{close[0]}`?" if close else f"known: {', '.join(_KEYS)}"
            raise origin.error(f"unknown key `{key}` in [tool.syncguard]; {hint}", key)
        attribute, convert = _KEYS[key]
        values[attribute] = convert(key, value, origin)
    values["select"] = (*values.get("select", ("SG",)), *values.pop("extend_select", ()))
    values["ignore"] = (*values.get("ignore", ()), *values.pop("extend_ignore", ()))
    return Settings(**values)


def check_selectors(
    settings: Settings, known_codes: Sequence[str], *, nested: bool = False
) -> None:
    """Fail on a selector that matches no rule (a typo would silently lint nothing) and on
    a selection that leaves no rule to report (``select = []``, ``--select ,``, everything
    ignored): a run that lints nothing must not pass. A ``nested`` config (one for some
    of the run's folders) may be left no rule by the command line, not by itself."""

    def fail(message: str, key: str) -> ConfigError:
        if key.startswith("--") or settings.source is None:
            return ConfigError(message)
        found = syncguard_table(settings.source)
        return _Origin(str(settings.source), found[1] if found else "").error(message, key)

    options = settings.command_line or Selection()
    selectors = {
        "select": settings.select,
        "ignore": settings.ignore,
        "per-file-ignores": tuple(c for _, codes in settings.per_file_ignores for c in codes),
        "--select": options.select or (),
        "--extend-select": options.extend_select,
        "--ignore": options.ignore,
    }
    for key, codes in selectors.items():
        for selector in codes:
            if not any(code.startswith(selector) for code in known_codes):
                raise fail(f"`{key}`: no rule matches {selector!r}", key)
    if any(settings.selects(code) for code in known_codes):
        return
    in_file = replace(settings, command_line=None)
    if settings.command_line is not None and any(in_file.selects(c) for c in known_codes):
        if nested:
            return
        raise fail("--select / --extend-select / --ignore leave no rule to report", "--select")
    key = "select" if not settings.select else "ignore"
    raise fail(f"`{key}` leaves no rule to report", key)
