"""``[tool.syncguard]`` in pyproject.toml, validated, merged with command-line options."""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

SCOPES = ("hot", "all")
# Per-step functions of common inference engines, hot out of the box; the
# ``hot-functions`` setting adds to these and ``cold-functions`` can remove them.
DEFAULT_HOT_FUNCTIONS = (
    "*MetadataBuilder.build",
    "*MetadataBuilder.build_for_cudagraph_capture",
    "*AttnBackend.init_forward_metadata",
    "*Backend.init_forward_metadata",
    "*ModelRunner.execute_model",
    "*ModelRunner._prepare_inputs",
)
_CODE_SELECTOR = re.compile(r"^SG[0-9]{0,3}$")


class ConfigError(Exception):
    """A configuration problem, with the file and key it concerns in the message."""


@dataclass(frozen=True)
class Settings:
    """Everything that configures one lint run."""

    select: tuple[str, ...] = ("SG",)
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    hot_functions: tuple[str, ...] = DEFAULT_HOT_FUNCTIONS
    cold_functions: tuple[str, ...] = ()
    compiled_functions: tuple[str, ...] = ()
    host_parameters: tuple[str, ...] = ()
    scope: str = "hot"
    require_reason: bool = False  # a suppression without ``-- reason`` is a finding (SG004)
    source: Path | None = None  # the pyproject.toml these settings came from

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def selects(self, code: str) -> bool:
        """True when ``code`` is selected and not ignored (longest matching prefix wins)."""
        selected = max((len(p) for p in self.select if code.startswith(p)), default=-1)
        ignored = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        return selected >= 0 and selected > ignored

    def reports(self, path: str, code: str) -> bool:
        """True when a finding of ``code`` in the file at ``path`` is reported: the code
        is selected, and no ``per-file-ignores`` glob matching the path ignores it."""
        return self.selects(code) and not self._per_file_ignored(path, code)

    def _per_file_ignored(self, path: str, code: str) -> bool:
        posix = path.replace(os.sep, "/")
        for pattern, codes in self.per_file_ignores:
            matched = fnmatch.fnmatchcase(posix, pattern) or fnmatch.fnmatchcase(
                os.path.basename(posix), pattern
            )
            if matched and any(code.startswith(prefix) for prefix in codes):
                return True
        return False


def _string_list(key: str, value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {value!r}")
    return tuple(value)


def _codes(key: str, value: Any, where: str) -> tuple[str, ...]:
    codes = tuple(code.strip().upper() for code in _string_list(key, value, where))
    for code in codes:
        if not _CODE_SELECTOR.match(code):
            raise ConfigError(
                f"{where}: `{key}` has {code!r}, not a rule code or prefix like SG1 or SG101"
            )
    return codes


def _per_file_ignores(key: str, value: Any, where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: `{key}` must be a table of glob = [codes], got {value!r}")
    return tuple(
        (pattern, _codes(f"{key}.{pattern}", codes, where)) for pattern, codes in value.items()
    )


def _scope(key: str, value: Any, where: str) -> str:
    if value not in SCOPES:
        raise ConfigError(f"{where}: `{key}` must be one of {', '.join(SCOPES)}, got {value!r}")
    return str(value)


def _flag(key: str, value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{where}: `{key}` must be true or false, got {value!r}")
    return value


_KEYS: dict[str, tuple[str, Callable[[str, Any, str], Any]]] = {
    "select": ("select", _codes),
    "ignore": ("ignore", _codes),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "exclude": ("exclude", _string_list),
    "hot-functions": ("hot_functions", _string_list),
    "cold-functions": ("cold_functions", _string_list),
    "compiled-functions": ("compiled_functions", _string_list),
    "host-parameters": ("host_parameters", _string_list),
    "scope": ("scope", _scope),
    "require-reason": ("require_reason", _flag),
}


def parse_codes(text: str, option: str) -> tuple[str, ...]:
    """A comma list of codes from the command line (``--select SG1,SG201``)."""
    return _codes(option, [part for part in text.split(",") if part.strip()], "command line")


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above ``start`` with a ``[tool.syncguard]`` table."""
    directory = start if start.is_dir() else start.parent
    for folder in (directory, *directory.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if re.search(r"^\s*\[tool\.syncguard[\].]", text, re.M):
                return candidate
    return None


def load(path: Path | None) -> Settings:
    """Settings from ``path`` (a pyproject.toml); defaults when ``path`` is None."""
    if path is None:
        return Settings()
    where = str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}: config file not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{where}: cannot read config file: {error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{where}: invalid TOML: {error}") from None
    table = data.get("tool", {}).get("syncguard", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: [tool.syncguard] must be a table")
    values: dict[str, Any] = {"source": path}
    for key, value in table.items():
        if key not in _KEYS:
            known = ", ".join(sorted(_KEYS))
            raise ConfigError(f"{where}: unknown key `{key}` in [tool.syncguard] (known: {known})")
        attribute, convert = _KEYS[key]
        values[attribute] = convert(key, value, where)
    if "hot_functions" in values:
        values["hot_functions"] = (*DEFAULT_HOT_FUNCTIONS, *values["hot_functions"])
    return Settings(**values)


def check_selectors(settings: Settings, known_codes: Sequence[str]) -> None:
    """Fail on a selector that matches no rule (a typo would silently lint nothing)."""
    where = str(settings.source) if settings.source else "command line"
    selectors = [*settings.select, *settings.ignore]
    selectors += [code for _, codes in settings.per_file_ignores for code in codes]
    for selector in selectors:
        if not any(code.startswith(selector) for code in known_codes):
            raise ConfigError(f"{where}: no rule matches {selector!r}")
