"""Attribution: which frames are the user's, and what the call at a frame's position is.

A sync is attributed to the innermost frame that belongs to neither torch nor the audit's
own modules (nor ``warnings``, pytest or pluggy, whose frames sit between a hook and the
user). Other modules of ``syncguard.runtime`` (the reference fixes, benchmarks) are user
code: their syncs are theirs.
The call at that frame is named from its source through ``co_positions`` (Python 3.11+):
``torch.nonzero()``, ``.item()``, ``int()``, ``bool()`` for ``if t:``, ``x[...]``.
"""

from __future__ import annotations

import ast
import bisect
import dis
import linecache
import os
import site
import sys
import sysconfig
import warnings
from dataclasses import dataclass
from functools import lru_cache
from types import CodeType, FrameType

from syncguard.runtime._events import (
    DATA_DEPENDENT_SHAPE,
    DEVICE_TO_HOST,
    EXPLICIT,
    HOST_TO_DEVICE,
    SCALAR_CONVERSION,
)

_RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
_AUDIT_MODULES = ("audit.py", "pytest_plugin.py", "verify.py")
_WARNINGS_FILE = os.path.abspath(warnings.__file__)
_FOREIGN_PACKAGES = ("torch", "_pytest", "pluggy")

_owner_cache: dict[str, str] = {}
_foreign_dirs: list[str] = []
_known_packages: set[str] = set()


# torch.compile's generated code is torch's: FX graph modules (``<eval_with_key>.N``) and
# the modules inductor writes into its cache folder.
_FX_GENERATED = "<eval_with_key>"
_INDUCTOR_CACHE = "torch._inductor.runtime.cache_dir_utils"


def _package_dirs() -> list[str]:
    """Folders of the foreign packages imported so far (torch, pytest, pluggy, inductor's
    generated code)."""
    if len(_known_packages) <= len(_FOREIGN_PACKAGES):
        for name in (*_FOREIGN_PACKAGES, _INDUCTOR_CACHE):
            module = sys.modules.get(name)
            if name in _known_packages or module is None:
                continue
            folder = _inductor_cache(module) if name == _INDUCTOR_CACHE else _folder(module)
            if folder:
                _known_packages.add(name)
                _foreign_dirs.append(folder + os.sep)
                _owner_cache.clear()
    return _foreign_dirs


def _folder(module: object) -> str:
    filename = getattr(module, "__file__", None)
    return os.path.dirname(os.path.abspath(filename)) if filename else ""


def _inductor_cache(module: object) -> str:
    try:
        return os.path.abspath(str(module.cache_dir()))  # type: ignore[attr-defined]
    except Exception:  # an unusable cache folder: inductor itself will say so
        return ""


@lru_cache(maxsize=1)
def _stdlib_dirs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the standard library's folders, the site-packages folders that may sit inside them)."""
    paths = sysconfig.get_paths()
    stdlib = {os.path.abspath(paths[key]) + os.sep for key in ("stdlib", "platstdlib")}
    packages = {os.path.abspath(paths[key]) + os.sep for key in ("purelib", "platlib")}
    packages.update(os.path.abspath(path) + os.sep for path in site.getsitepackages())
    return tuple(sorted(stdlib)), tuple(sorted(packages))


def _in_stdlib(path: str) -> bool:
    """The standard library (contextlib, functools, threading...) is never the user's line:
    a sync inside it is attributed to the user's frame that called into it."""
    stdlib, packages = _stdlib_dirs()
    return path.startswith(stdlib) and not path.startswith(packages)


def owner(filename: str) -> str:
    """``"syncguard"`` (the audit), ``"foreign"`` (torch, pytest, pluggy, the standard
    library, torch.compile's generated code) or ``"user"``."""
    dirs = _package_dirs()
    cached = _owner_cache.get(filename)
    if cached is not None:
        return cached
    path = os.path.abspath(filename) if filename[:1] not in ("<", "") else filename
    folder, name = os.path.split(path)
    audit_module = folder == _RUNTIME_DIR and (name.startswith("_") or name in _AUDIT_MODULES)
    if path == _WARNINGS_FILE or audit_module:
        result = "syncguard"
    elif (
        path.startswith(_FX_GENERATED)
        or any(path.startswith(folder) for folder in dirs)
        or _in_stdlib(path)
    ):
        result = "foreign"
    else:
        result = "user"
    _owner_cache[filename] = result
    return result


@dataclass(frozen=True)
class FrameInfo:
    """One frame of an event's stack."""

    path: str
    line: int
    end_line: int
    function: str
    module: str

    def describe(self) -> str:
        """``path:line in function``."""
        return f"{display_path(self.path)}:{self.line} in {self.function}"


def first_user_frame(frame: FrameType | None) -> FrameType | None:
    """The innermost frame at or above ``frame`` that is the user's."""
    while frame is not None and owner(frame.f_code.co_filename) != "user":
        frame = frame.f_back
    return frame


def frame_info(frame: FrameType) -> FrameInfo:
    """Path, lines, qualified function name and module of ``frame`` at its current position."""
    code = frame.f_code
    start, end = _lines(code, frame.f_lasti, frame.f_lineno or code.co_firstlineno)
    function = getattr(code, "co_qualname", code.co_name)
    module = frame.f_globals.get("__name__", "")
    return FrameInfo(code.co_filename, start, end, function, str(module))


def display_path(path: str) -> str:
    """``path`` relative to the working folder when inside it, with forward slashes."""
    if path.startswith("<"):
        return path
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return path
    chosen = path if relative.startswith("..") else relative
    return chosen.replace(os.sep, "/")


def _lines(code: CodeType, lasti: int, fallback: int) -> tuple[int, int]:
    positions = _positions(code, lasti)
    if positions is None or positions[0] is None:
        return fallback, fallback
    start = positions[0]
    return start, positions[1] or start


def _positions(
    code: CodeType, lasti: int
) -> tuple[int | None, int | None, int | None, int | None] | None:
    table = _position_table(code)
    index = lasti // 2
    if table is None or not 0 <= index < len(table):
        return None
    return table[index]


@lru_cache(maxsize=2048)
def _position_table(
    code: CodeType,
) -> tuple[tuple[int | None, int | None, int | None, int | None], ...] | None:
    positions = getattr(code, "co_positions", None)
    return tuple(positions()) if positions is not None else None


@lru_cache(maxsize=2048)
def _opcode_table(code: CodeType) -> tuple[list[int], list[str]]:
    offsets: list[int] = []
    names: list[str] = []
    for instruction in dis.get_instructions(code):
        offsets.append(instruction.offset)
        names.append(instruction.opname)
    return offsets, names


def _opname(code: CodeType, lasti: int) -> str:
    offsets, names = _opcode_table(code)
    index = bisect.bisect_right(offsets, lasti) - 1
    return names[index] if index >= 0 else ""


@dataclass(frozen=True)
class CallSite:
    """The operation a frame is executing, as written in its source."""

    op: str
    kind: str
    callee: str = ""
    source: str = ""
    node: ast.AST | None = None


_BUILTIN_KINDS = {
    **dict.fromkeys(
        ["int", "float", "bool", "complex", "range", "max", "min", "sum", "round", "abs"],
        SCALAR_CONVERSION,
    ),
    **dict.fromkeys(["print", "str", "repr", "format"], DEVICE_TO_HOST),
}
_METHOD_KINDS = {
    **dict.fromkeys(
        ["item", "is_nonzero", "equal", "allclose", "__bool__", "__int__", "__float__"],
        SCALAR_CONVERSION,
    ),
    **dict.fromkeys(["tolist", "cpu", "numpy"], DEVICE_TO_HOST),
    **dict.fromkeys(
        [
            "nonzero",
            "argwhere",
            "where",
            "masked_select",
            "unique",
            "unique_consecutive",
            "repeat_interleave",
            "bincount",
            "histc",
            "one_hot",
            "index_put",
            "index_put_",
            "masked_scatter",
        ],
        DATA_DEPENDENT_SHAPE,
    ),
    **dict.fromkeys(
        ["tensor", "as_tensor", "asarray", "new_tensor", "from_numpy", "cuda", "copy_"],
        HOST_TO_DEVICE,
    ),
    "synchronize": EXPLICIT,
}
_JUMPS = ("POP_JUMP", "JUMP_IF", "TO_BOOL", "UNARY_NOT")
_FORMATS = ("FORMAT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE")


def call_site(frame: FrameType) -> CallSite:
    """Name and likely kind of the operation ``frame`` is executing."""
    code = frame.f_code
    opname = _opname(code, frame.f_lasti)
    source = _source_segment(code.co_filename, _positions(code, frame.f_lasti))
    node = _parse(source)
    if opname.startswith(_JUMPS):
        return CallSite("bool()", SCALAR_CONVERSION, "bool", source, node)
    if opname.startswith(_FORMATS):
        return CallSite("format()", SCALAR_CONVERSION, "format", source, node)
    if isinstance(node, ast.Call):
        return _describe_call(node, source)
    if isinstance(node, ast.Subscript) or "SUBSCR" in opname:
        return _describe_subscript(node, opname, source)
    label = opname.lower() or "<unknown>"
    return CallSite(label, SCALAR_CONVERSION, "", source, node)


def _describe_call(node: ast.Call, source: str) -> CallSite:
    func = node.func
    if isinstance(func, ast.Name):
        kind = _BUILTIN_KINDS.get(func.id, _METHOD_KINDS.get(func.id, SCALAR_CONVERSION))
        return CallSite(f"{func.id}()", kind, func.id, source, node)
    if isinstance(func, ast.Attribute):
        receiver = _dotted(func.value)
        op = _aten_op(f"{receiver}.{func.attr}")
        if op:  # torch.ops.aten.nonzero.default(x), aten.nonzero(x): named in full
            kind = _METHOD_KINDS.get(op, SCALAR_CONVERSION)
            return CallSite(f"{receiver}.{func.attr}()", kind, op, source, node)
        label = f"{receiver}.{func.attr}()" if receiver in _MODULE_NAMES else f".{func.attr}()"
        if func.attr == "to":
            kind = DEVICE_TO_HOST if "cpu" in source else HOST_TO_DEVICE
        else:
            kind = _METHOD_KINDS.get(func.attr, SCALAR_CONVERSION)
        return CallSite(label, kind, func.attr, source, node)
    return CallSite("call()", SCALAR_CONVERSION, "", source, node)


_MODULE_NAMES = {
    "torch",
    "torch.cuda",
    "torch.linalg",
    "torch.nn.functional",
    "F",
    "np",
    "numpy",
    "torch.distributions",
    "torch.accelerator",
}


def _describe_subscript(node: ast.AST | None, opname: str, source: str) -> CallSite:
    value = _dotted(node.value) if isinstance(node, ast.Subscript) else ""
    storing = opname.startswith("STORE")
    label = f"{value or ''}[...]" + (" = ..." if storing else "")
    constant_index = isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
    kind = HOST_TO_DEVICE if storing and constant_index else DATA_DEPENDENT_SHAPE
    return CallSite(label, kind, "[]", source, node)


def _aten_op(dotted: str) -> str:
    """``nonzero`` for ``torch.ops.aten.nonzero.default`` or ``aten.nonzero``; "" otherwise."""
    parts = dotted.split(".")
    if "aten" not in parts[:-1]:
        return ""
    return parts[parts.index("aten") + 1]


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""


def _source_segment(
    filename: str, positions: tuple[int | None, int | None, int | None, int | None] | None
) -> str:
    if positions is None:
        return ""
    start, end, start_col, end_col = positions
    if start is None or end is None or start_col is None or end_col is None:
        return ""
    lines = linecache.getlines(filename)
    if end > len(lines):
        return ""
    chunk = [line.encode() for line in lines[start - 1 : end]]
    if len(chunk) == 1:
        chunk[0] = chunk[0][start_col:end_col]
    else:
        chunk[0] = chunk[0][start_col:]
        chunk[-1] = chunk[-1][:end_col]
    return b"".join(chunk).decode(errors="replace").strip()


@lru_cache(maxsize=1024)
def _parse(source: str) -> ast.AST | None:
    if not source:
        return None
    for text in (source, f"({source})"):
        try:
            return ast.parse(text, mode="eval").body
        except SyntaxError:
            continue
    return None
