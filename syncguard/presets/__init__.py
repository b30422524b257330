"""Framework presets: what a framework's own code says is hot, cold or host data, as data.

A preset is a TOML file in this folder (``vllm.toml``, ``transformers.toml``...) naming
the release it was read against, the modules that give the framework away, and entries,
each with the code that justifies it (``cite``: ``path:line`` in that release) and why::

    name = "transformers"
    release = "transformers 5.24.0"
    detect = ["transformers"]

    [[hot-methods]]
    entry = "transformers.Trainer:training_step"
    cite = "transformers/trainer.py:1917"
    why = "the inner training loop calls it for every batch"

Entry kinds are the settings of ``[tool.syncguard]`` they add to: ``hot-functions``,
``hot-methods``, ``cold-functions``, ``compiled-functions`` and ``host-parameters``;
``host-classes``, globs over classes (as imported) that prepare inputs on the host, such as
a framework's input processors: a module only their methods build runs on the CPU; and
``device-parameters``, ``FUNCTION:PARAM`` globs over parameters (``**kwargs`` included)
that the framework's runner fills with device data, such as the multimodal inputs it
moves to the GPU before calling a model's encoder: syncs on them are reported in those
functions when hot, as on a hot root's parameters, unless ``host-parameters`` names them.

``presets = [...]`` in ``[tool.syncguard]`` chooses them: names of presets, and ``auto``
(the default) for every preset whose framework the linted tree imports or is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache

from syncguard.config import toml_parser
from syncguard.hotness import HotSettings

AUTO = "auto"
# Entry kind -> the field of :class:`~syncguard.hotness.HotSettings` it adds to.
KINDS = {
    "hot-functions": "hot_functions",
    "hot-methods": "hot_methods",
    "cold-functions": "cold_functions",
    "compiled-functions": "compiled_functions",
    "host-parameters": "host_parameters",
    "device-parameters": "device_parameters",
    "host-classes": "host_classes",
}
_CITATION = re.compile(r"^[\w./-]+\.py:\d+$")


class PresetError(Exception):
    """A preset that cannot be read, or a name that is none."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One entry of a preset: what it adds, and the code that justifies it."""

    kind: str  # a key of KINDS
    pattern: str
    cite: str  # path:line in the release
    why: str


@dataclass(frozen=True, slots=True)
class Preset:
    name: str
    summary: str
    release: str  # the release the citations refer to
    detect: tuple[str, ...]  # top-level modules: imported, or linted, the preset applies
    entries: tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class Active:
    """A preset in force for a run, and why."""

    preset: Preset
    reason: str


@cache
def available() -> dict[str, Preset]:
    """Every preset shipped with syncguard, by name."""
    from importlib import resources  # imports tempfile (~10 ms): only runs that read presets

    found: dict[str, Preset] = {}
    folder = resources.files(__name__)
    for item in sorted(folder.iterdir(), key=lambda item: item.name):
        if item.name.endswith(".toml"):
            preset = parse(item.read_text(encoding="utf-8"), item.name)
            found[preset.name] = preset
    return found


def parse(text: str, where: str) -> Preset:
    """The preset a TOML text describes; raises PresetError naming ``where``."""
    tomllib = toml_parser()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PresetError(f"{where}: invalid TOML: {error}") from None
    try:
        entries = []
        for kind in data:
            if kind in ("name", "summary", "release", "detect"):
                continue
            if kind not in KINDS:
                raise PresetError(f"{where}: unknown entry kind `{kind}`")
            for item in data[kind]:
                entry = Entry(kind, str(item["entry"]), str(item["cite"]), str(item["why"]))
                if not _CITATION.match(entry.cite) or not entry.why.strip():
                    raise PresetError(f"{where}: `{entry.pattern}` needs a path:line cite and why")
                entries.append(entry)
        return Preset(
            str(data["name"]),
            str(data.get("summary", "")),
            str(data["release"]),
            tuple(str(module) for module in data["detect"]),
            tuple(entries),
        )
    except (KeyError, TypeError) as error:
        raise PresetError(f"{where}: missing or malformed {error}") from None


def check_names(requested: Sequence[str]) -> None:
    """Raise PresetError for a requested name that is neither ``auto`` nor a preset."""
    known = available()
    for name in requested:
        if name != AUTO and name not in known:
            raise PresetError(
                f"unknown preset {name!r} (known: {', '.join([AUTO, *sorted(known)])})"
            )


def select(
    requested: Sequence[str], modules: Iterable[str], imports: Iterable[str]
) -> list[Active]:
    """The presets in force for a tree whose files are the ``modules`` (dotted names)
    and import ``imports`` (dotted names): those ``requested`` by name, and with ``auto``
    those whose framework the tree is (one of its modules) or imports; in name order."""
    known = available()
    chosen: dict[str, str] = {}
    for name in requested:
        if name in known:
            chosen[name] = "named in the presets setting"
    if AUTO in requested:
        tops_linted = _tops(modules)
        tops_imported = _tops(imports)
        for name, preset in known.items():
            if name in chosen:
                continue
            for module in preset.detect:
                if module in tops_linted:
                    chosen[name] = f"the linted tree is {module} (module {tops_linted[module]})"
                    break
                if module in tops_imported:
                    chosen[name] = f"the linted tree imports {tops_imported[module]}"
                    break
    return [Active(known[name], chosen[name]) for name in sorted(chosen)]


def _tops(names: Iterable[str]) -> dict[str, str]:
    """Top-level package -> the first (sorted) dotted name under it."""
    found: dict[str, str] = {}
    for name in sorted(set(names)):
        found.setdefault(name.partition(".")[0], name)
    return found


def apply(settings: HotSettings, active: Sequence[Active]) -> HotSettings:
    """``settings`` (a :class:`~syncguard.hotness.HotSettings`) with the entries of the
    ``active`` presets added after its own, each labelled with its preset."""
    if not active:
        return settings
    added: dict[str, list[str]] = {field: [] for field in KINDS.values()}
    origins = list(settings.origins)
    for each in active:
        for entry in each.preset.entries:
            added[KINDS[entry.kind]].append(entry.pattern)
            origins.append((entry.pattern, f"preset {each.preset.name}"))
    changes = {
        field: (*getattr(settings, field), *patterns)
        for field, patterns in added.items()
        if patterns
    }
    return replace(settings, origins=tuple(origins), **changes)


def describe(active: Sequence[Active]) -> list[str]:
    """One line per preset in force: its name, release and why it applies."""
    return [f"{each.preset.name} ({each.preset.release}): {each.reason}" for each in active]
