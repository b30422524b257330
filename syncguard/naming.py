"""What names say about data: ``lens_cpu`` is host data, ``config`` a settings object,
``keep_mask`` a boolean mask, ``pinned`` page-locked memory, ``cpu_attn`` code for the CPU."""

from __future__ import annotations

import ast
import functools
import re

from syncguard.values import BOOL, PINNED, TENSOR, Place, Value

_HOST_SUFFIXES = ("_cpu", "_np", "_host", "_numpy")
_HOST_PREFIXES = ("cpu_", "np_", "host_")
_CONFIG_WORDS = frozenset({"config", "cfg", "configs", "conf"})
# Words that, next to "cpu" in a module or class name, say the code moves data to a device.
_DEVICE_WORDS = frozenset(
    {"gpu", "cuda", "device", "devices", "offload", "offloading", "accelerator", "xpu", "npu",
     "hpu", "tpu", "transfer", "swap", "h2d", "d2h"}
)  # fmt: skip


@functools.lru_cache(maxsize=4096)  # pure, asked of the same few names all through a file
def is_host_name(name: str) -> bool:
    """True for names that say their value lives on the host (``x_cpu``, ``cpu_x``...)
    or is a configuration object (``config``, ``engine_config``, ``cfg``)."""
    return (
        name.endswith(_HOST_SUFFIXES)
        or name.startswith(_HOST_PREFIXES)
        or "cpu" in name.lower().split("_")  # seq_lens_cpu_upper_bound
        or is_pinned_name(name)
        or is_config_name(name)
    )


def says_cpu(name: str) -> bool:
    """True for a module or class name that says its code runs on the CPU (``cpu_attn``,
    ``CPUWorker``), not one that moves data to or from a device (``CpuGpuBuffer``,
    ``cpu_offload``)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    words = set(re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", spaced).lower().split("_"))
    return "cpu" in words and not words & _DEVICE_WORDS


def is_config_name(name: str) -> bool:
    """True for names that say they hold settings (``config``, ``parallel_config``, ``cfg``):
    a Python object on the host, and so is everything read from it."""
    return name.lower().rpartition("_")[2] in _CONFIG_WORDS


def names_config(node: ast.expr) -> bool:
    """``config``, ``self.model_config``, ``engine_config.parallel_config``: a settings object."""
    name = node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")
    return is_config_name(name)


def is_pinned_name(name: str) -> bool:
    """True for names that say they hold page-locked host memory (``pinned``, ``x_pinned``)."""
    return "pinned" in name.lower().split("_")


def is_mask_name(name: str) -> bool:
    """True for names that say they hold a boolean mask (``mask``, ``keep_mask``, ``masks``)."""
    return any(word in ("mask", "masks") for word in name.lower().split("_"))


@functools.lru_cache(maxsize=4096)
def named_tags(name: str) -> frozenset[str]:
    """Tags a name promises by itself: a mask is boolean, a pinned buffer is a pinned tensor,
    ``lens_cpu`` / ``x_np`` are host arrays (data, so it stays host data under other names)."""
    if is_pinned_name(name):
        return frozenset((PINNED, TENSOR))
    if is_mask_name(name):
        return frozenset((BOOL,))
    if is_host_name(name) and not is_config_name(name):
        return frozenset((TENSOR,))
    return frozenset()


def as_named(name: str, value: Value) -> Value:
    """``value`` bound to ``name``: a host name keeps host data, and an untagged value gets
    the tags the name promises (a ``mask`` is boolean, a ``pinned`` buffer page-locked)."""
    if is_host_name(name) and value.place is not Place.DEVICE:
        value = Value(Place.HOST, frozenset(), value.tags)
    if not value.kinds:
        tags = named_tags(name)
        if tags:
            value = value.with_tags(*tags)
    return value


# Words in the name of what is stepped (``optimizer.step()``, ``self.scaler.step(opt)``)
# and of what is called as a model (``model(batch)``, ``self.policy(obs)``).
_STEPPER_WORDS = frozenset({"optimizer", "optimizers", "optim", "opt", "scaler"})
_MODEL_WORDS = frozenset(
    {"model", "models", "module", "net", "network", "policy", "transformer", "encoder", "decoder"}
)
# First words of method names that act on a model rather than name one.
_VERBS = frozenset(
    {
        "register",
        "load",
        "get",
        "set",
        "build",
        "make",
        "create",
        "init",
        "prepare",
        "wrap",
        "replace",
        "add",
        "remove",
        "save",
        "apply",
        "update",
        "to",
        "from",
        "is",
        "has",
        "run",
    }
)
# First words of a function name that say it moves data to the CPU (``to_cpu``, ``copy_cpu``).
_MOVING_VERBS = frozenset(
    {"to", "move", "copy", "as", "offload", "transfer", "send", "fetch", "get", "load", "save",
     "sync", "pin", "stage", "gather", "d2h"}
)  # fmt: skip


def cpu_version(name: str) -> bool:
    """``fill_indices_cpu``, ``_attention_ref_cpu``: the CPU version of a function, which
    runs on host data (not ``to_cpu``, which moves data there)."""
    words = name.lower().strip("_").split("_")
    return len(words) > 1 and words[-1] == "cpu" and words[0] not in _MOVING_VERBS


def last_name(node: ast.expr) -> str:
    """``model`` for ``self.model`` or ``model``, ``model_parts`` for
    ``self.model_parts[0]``; "" for anything else."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def _words(name: str) -> set[str]:
    return set(name.lower().split("_"))


def names_model(name: str) -> bool:
    """``model``, ``draft_model``, ``model_parts``, ``encoder``: the name of a model, not
    of a method that acts on one (``register_module``, ``load_model``, ``_parent_module``)."""
    words = name.lower().strip("_").split("_")
    if len(words) == 1 or words[0] in ("model", "models"):
        return words[0] in _MODEL_WORDS
    return words[-1] in ("model", "models") and words[0] not in _VERBS


def names_stepper(node: ast.expr) -> bool:
    """``optimizer``, ``self.scaler``, ``opts[0]``: the name of what ``.step()`` steps."""
    return bool(_STEPPER_WORDS & _words(last_name(node)))
