"""Which settings apply to which file, as in ruff: the nearest ``pyproject.toml`` with a
``[tool.syncguard]`` table above the file (or one ``--config`` file for every file), with the
command-line options applied on top of each.

Rule selection, ``per-file-ignores`` and ``exclude`` are per file. The analysis settings
(hot paths, scope) are project-wide, since one call graph joins every file: they come from
the config nearest the folder holding every linted path, and a config under it whose
analysis settings differ gets a note saying that they are not used.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from syncguard.config import (
    CONFIG_FILE,
    ConfigError,
    Selection,
    Settings,
    check_selectors,
    from_table,
    load,
    parse_codes,
    syncguard_table,
)
from syncguard.discovery import discover

# Settings of the whole run's analysis, taken from one config (see the module docstring).
ANALYSIS_SETTINGS = ("scope", "hot_functions", "cold_functions", "compiled_functions",
                     "host_parameters", "presets")  # fmt: skip


@dataclass(frozen=True)
class Overrides:
    """Command-line options, applied to the settings of every config."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    force_exclude: bool = False
    scope: str | None = None
    hot_functions: tuple[str, ...] = ()  # added to the config's

    def apply(self, settings: Settings) -> Settings:
        layer = None
        if self.select is not None or self.extend_select or self.ignore:
            layer = Selection(self.select, self.extend_select, self.ignore)
        return replace(
            settings,
            command_line=layer,
            force_exclude=settings.force_exclude or self.force_exclude,
            scope=self.scope or settings.scope,
            hot_functions=(*settings.hot_functions, *self.hot_functions),
        )


def overrides_of(options: Mapping[str, Any]) -> Overrides:
    """The overrides given by command-line ``options`` (``select``, ``extend_select``,
    ``ignore``, ``extend_ignore``: comma lists or None; ``force_exclude``, ``scope``,
    ``hot``); raises ConfigError for a bad or empty code list."""

    def codes(name: str) -> tuple[str, ...]:
        text = options.get(name)
        return () if text is None else parse_codes(text, "--" + name.replace("_", "-"))

    return Overrides(
        select=codes("select") if options.get("select") is not None else None,
        extend_select=codes("extend_select"),
        ignore=(*codes("ignore"), *codes("extend_ignore")),
        force_exclude=bool(options.get("force_exclude")),
        scope=options.get("scope"),
        hot_functions=tuple(options.get("hot") or ()),
    )


class ConfigTree:
    """The settings of every folder of a run, each config read once.

    ``known_codes`` checks each config's selectors as it is read; ``config_file`` (the
    ``--config`` option) is used for every file, its globs relative to the working
    directory (as in ruff, since such a file is often kept away from the code)."""

    def __init__(
        self,
        overrides: Overrides | None = None,
        known_codes: Sequence[str] = (),
        config_file: Path | None = None,
    ) -> None:
        self.overrides = overrides or Overrides()
        self.known_codes = tuple(known_codes)
        self.common_folder: str | None = None  # set by settings_for_paths
        self._folders: dict[str, Settings | ConfigError] = {}
        self._explicit = None
        if config_file is not None:
            self._explicit = self._prepare(load(config_file, anchor=os.getcwd()))

    def settings_for(self, folder: str) -> Settings:
        """The settings of the files in ``folder`` (absolute); raises the ConfigError of
        the config that governs it when that config is bad."""
        if self._explicit is not None:
            return self._explicit
        walked: list[str] = []
        current = folder
        found = self._folders.get(current)
        while found is None:
            found = self._read(current)
            if found is None:
                parent = os.path.dirname(current)
                if parent == current:
                    found = self._prepare(Settings())
                    break
                walked.append(current)
                current = parent
                found = self._folders.get(current)
        for each in (*walked, current):
            self._folders[each] = found
        if isinstance(found, ConfigError):
            raise found
        return found

    def settings_for_paths(self, paths: Sequence[str]) -> Settings:
        """The settings of the folder holding every one of ``paths``: the run's project-wide
        settings, which know how to find every other folder's."""
        folders = [
            absolute if os.path.isdir(absolute) else os.path.dirname(absolute)
            for absolute in map(os.path.abspath, paths or ["."])
        ]
        try:
            self.common_folder = os.path.commonpath(folders)
        except ValueError:  # on different drives (Windows)
            self.common_folder = os.getcwd()
        root = self.settings_for(self.common_folder)
        if self.known_codes:
            check_selectors(root, self.known_codes)
        return root

    def why(self, settings: Settings, folder: str) -> str:
        """Why ``settings`` apply to ``folder``, in words."""
        if self._explicit is not None:
            return "given with --config: used for every file, globs relative to the working folder"
        if settings.source is None:
            return f"no pyproject.toml with [tool.syncguard] at or above {_shown(folder)}: defaults"
        return f"the nearest pyproject.toml with [tool.syncguard] at or above {_shown(folder)}"

    def notes(self, root: Settings, folders: Sequence[str] | None = None) -> list[str]:
        """A note for each config found for the linted folders (or for ``folders`` only,
        absolute) whose analysis settings differ from ``root``'s, which are the ones used."""
        found = self._folders.values() if folders is None else map(self._governing, folders)
        configs = {s.source: s for s in found if isinstance(s, Settings)}
        notes = []
        for source, settings in sorted(configs.items(), key=lambda item: str(item[0])):
            differ = [
                name.replace("_", "-")
                for name in ANALYSIS_SETTINGS
                if getattr(settings, name) != getattr(root, name)
            ]
            if source is not None and source != root.source and differ:
                verb = "is" if len(differ) == 1 else "are"
                used = _shown(root.source) if root.source else "the defaults"
                common = _shown(self.common_folder or os.getcwd())
                notes.append(
                    f"{_shown(source)}: its {' and '.join(differ)} {verb} not used: analysis "
                    f"settings are project-wide, from {used} (the config of {common}, which "
                    "holds every linted path)"
                )
        return notes

    def _governing(self, folder: str) -> Settings | ConfigError:
        try:
            return self.settings_for(folder)
        except ConfigError as error:  # reported where its files are linted
            return error

    def _read(self, folder: str) -> Settings | ConfigError | None:
        """The settings of the config in ``folder`` (or its error); None when it has none."""
        candidate = os.path.join(folder, CONFIG_FILE)
        if not os.path.lexists(candidate) or os.path.isdir(candidate):
            return None
        try:
            found = syncguard_table(Path(candidate))
            if found is None:
                return None
            return self._prepare(from_table(Path(candidate), *found))
        except ConfigError as error:
            if error.path is None:  # a selection the command line leaves empty here
                return ConfigError(error.message, candidate)
            return error

    def _prepare(self, settings: Settings) -> Settings:
        settings = replace(self.overrides.apply(settings), tree=self)
        if self.known_codes:
            check_selectors(settings, self.known_codes, nested=True)
        return settings


def show(paths: Sequence[str], settings: Settings, files: bool, resolved: bool) -> int:
    """``--show-files`` (the files that would be linted, one a line) and ``--show-settings``
    (see :func:`show_settings`) on stdout; the paths that cannot be linted on stderr.
    Returns the exit code: 2 when some path cannot be linted, else 0."""
    found, problems = discover(paths, settings)
    if files:
        sys.stdout.write("".join(f"{path}\n" for path in found))
    if resolved:
        tree = settings.tree
        known = tree.known_codes if isinstance(tree, ConfigTree) else ()
        sys.stdout.write(show_settings(settings, found, known))
        sys.stdout.write(_presets_in_force(found, settings))
    for path, error in problems:
        sys.stderr.write(f"{path}:{error.line}:{error.column}: {error.message}\n")
    return 2 if problems else 0


def _presets_in_force(files: Sequence[str], settings: Settings) -> str:
    """The framework presets the analysis of ``files`` applies, and why (see
    :mod:`syncguard.presets`)."""
    from syncguard.engine import build_project
    from syncguard.presets import describe

    project, _ = build_project(files, settings=settings)
    lines = describe(project.presets) or ["none"]
    return "\n# Presets in force\n" + "".join(f"#   {line}\n" for line in lines)


def show_settings(root: Settings, files: Sequence[str], known_codes: Sequence[str]) -> str:
    """``--show-settings``: the run's analysis settings, then the settings of each group of
    ``files`` under one config; each with its config file and why it applies."""
    tree = root.tree if isinstance(root.tree, ConfigTree) else None
    why = tree.why if tree is not None else (lambda settings, folder: "given to the library")
    common = tree.common_folder if tree is not None and tree.common_folder else os.getcwd()
    lines = [
        "# Analysis settings (project-wide)",
        f"#   config: {_shown(root.source)}",
        f"#   why: {why(root, common)}, the folder holding every linted path",
    ]
    lines += [_setting(name, getattr(root, name)) for name in ANALYSIS_SETTINGS]
    groups: dict[int, tuple[Settings, list[str]]] = {}
    for path in files:
        here = root.for_folder(os.path.dirname(os.path.abspath(path)))
        groups.setdefault(id(here), (here, []))[1].append(path)
    for settings, members in groups.values():
        example = ", ".join(members[:3]) + (", ..." if len(members) > 3 else "")
        lines += [
            "",
            f"# Settings of {len(members)} file{'s' * (len(members) != 1)}: {example}",
            f"#   config: {_shown(settings.source)}",
            f"#   why: {why(settings, os.path.dirname(os.path.abspath(members[0])))}",
            f"#   globs relative to: {_shown(settings.anchor or os.getcwd())}",
        ]
        lines += [_setting(name, getattr(settings, name)) for name in _PER_FILE]
        if settings.command_line is not None:
            options = settings.command_line
            given = {"select": options.select, "extend-select": options.extend_select}
            lines.append(f"command-line = {_toml({**given, 'ignore': options.ignore})}")
        reported = [code for code in known_codes if settings.selects(code)]
        lines.append(_setting("reported", reported))
    return "\n".join(lines) + "\n"


_PER_FILE = ("select", "ignore", "per_file_ignores", "exclude", "force_exclude")


def _setting(name: str, value: object) -> str:
    if name == "per_file_ignores" and isinstance(value, tuple):
        value = {pattern: list(codes) for pattern, codes in value}
    return f"{name.replace('_', '-')} = {_toml(value)}"


def _toml(value: object) -> str:
    """``value`` written as TOML (strings, booleans, lists and tables of them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, dict):
        items = [f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items() if v is not None]
        return "{ " + ", ".join(items) + " }" if items else "{}"
    return json.dumps(str(value))


def _shown(path: str | Path | None) -> str:
    """``path`` relative to the working folder when it is inside it, else absolute."""
    if path is None:
        return "none"
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith(os.pardir) else relative
