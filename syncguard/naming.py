"""What names say about data: ``lens_cpu`` is host data, ``config`` a settings object,
``keep_mask`` a boolean mask, ``pinned`` page-locked memory, ``cpu_attn`` code for the CPU."""

from __future__ import annotations

import ast
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
