"""Fuzzing the public entry points (issue 17): programs hypothesmith makes from Python's
grammar, engine-shaped programs of two modules from the generator below, and real
fixture files cut short, flipped and missing lines never raise and never give an internal
error; bad input is a located error.

Each test is bounded (a fixed number of examples, replayed from a fixed seed) so that the
module takes seconds in CI. ``SYNCGUARD_FUZZ_EXAMPLES=2000`` runs more of them, from a
random seed (the seed of a failure is printed with it).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import FIXTURES
from syncguard.cli import main
from syncguard.engine import LintResult, analyze_source, lint_files
from syncguard.facts import FileError, FileFacts
from syncguard.fixes import fix_paths
from syncguard.rules import all_rules

RULES = [rule() for rule in all_rules().values()]
_EXPLORE = os.environ.get("SYNCGUARD_FUZZ_EXAMPLES")


def bounded(examples: int) -> settings:
    """``examples`` examples (or SYNCGUARD_FUZZ_EXAMPLES), without deadline or database."""
    return settings(
        max_examples=int(_EXPLORE) if _EXPLORE else examples,
        deadline=None,
        derandomize=not _EXPLORE,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@contextlib.contextmanager
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="syncguard-fuzz-") as name:
        yield Path(name)


def assert_located(result: LintResult, bad: set[str] | None = None) -> None:
    """No internal error; every problem located, and only on the files in ``bad``."""
    for problem in result.problems:
        assert "internal error" not in problem.message, problem
        assert problem.line >= 1 and problem.column >= 1, problem
        assert bad is not None and problem.path in bad, problem


# ------------------------------------------------------- engine-shaped programs

_LEAVES = (
    "x", "lens", "mask", "n", "t", "out", "self.buf", "self.cache", "0", "1", "2.5", "None",
    "'cpu'", "x.device", "x.shape[0]", "torch.float32", "batch", "positions", "a", "b", "c",
)  # fmt: skip
_SYNCING = ("item", "tolist", "nonzero", "cpu", "numpy", "any", "all", "max", "sum")
_PLAIN = ("float", "clone", "contiguous", "view", "flatten", "size", "dim")
_CALLEES = (
    "torch.tensor", "torch.zeros", "torch.arange", "torch.cat", "torch.nonzero",
    "torch.where", "len", "int", "float", "bool", "print", "range", "sorted", "max",
    "helpers.gather", "helpers.pack", "gather", "self.project", "self.step", "_local",
    "torch.cuda.synchronize", "F.softmax", "self.runner", "Runner0",
)  # fmt: skip
_KEYWORDS = ("device", "dtype", "non_blocking", "dim", "pin_memory", "out")
_BINARY = ("+", "-", "*", "/", "//", "%", "@", "==", "<", ">", "and", "or", "&", "|")


def _receiver(expression: str) -> str:
    """``expression`` as the object of an attribute (``(0).item()``: ``0.item`` is a number)."""
    return f"({expression})" if expression[0].isdigit() else expression


def _formatted(expression: str) -> str:
    """An f-string showing ``expression``, in the quotes it does not use (before 3.12 an
    f-string cannot hold its own quotes); ``str(...)`` where it uses both."""
    for quote in ('"', "'"):
        if quote not in expression:
            return f"f{quote}{{ {expression} }} tokens{quote}"
    return f"str({expression})"


def _call(parts: tuple[str, list[str], list[tuple[str, str]]]) -> str:
    callee, args, keywords = parts
    return f"{callee}({', '.join([*args, *(f'{k}={v}' for k, v in keywords)])})"


def _compound(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    keyword = st.tuples(st.sampled_from(_KEYWORDS), inner)
    return st.one_of(
        st.tuples(inner, st.sampled_from(_SYNCING + _PLAIN)).map(
            lambda p: f"{_receiver(p[0])}.{p[1]}()"
        ),
        st.tuples(inner, st.sampled_from(_BINARY), inner).map(lambda p: f"({p[0]} {p[1]} {p[2]})"),
        st.tuples(
            st.sampled_from(_CALLEES),
            st.lists(inner, max_size=3),
            st.lists(keyword, max_size=2, unique_by=lambda k: k[0]),
        ).map(_call),
        st.tuples(inner, inner).map(lambda p: f"{p[0]}[{p[1]}]"),
        st.tuples(inner, inner).map(lambda p: f"{p[0]}[{p[1]}:]"),
        st.tuples(inner, inner, inner).map(lambda p: f"({p[0]} if {p[1]} else {p[2]})"),
        st.tuples(inner, st.sampled_from(_SYNCING)).map(lambda p: f"[v.{p[1]}() for v in {p[0]}]"),
        inner.map(lambda e: f"{{k: v for k, v in {_receiver(e)}.items()}}"),
        inner.map(lambda e: f"(lambda v: v.tolist())({e})"),
        inner.map(_formatted),
        inner.map(lambda e: f"{_receiver(e)}.to('cpu', non_blocking=True)"),
        inner.map(lambda e: f"(not {e})"),
        inner.map(lambda e: f"(*{e}, 1)"),
        st.tuples(inner, inner).map(lambda p: f"(({p[0]}, {p[1]}), {p[1]})"),
        inner.map(lambda e: f"helpers.pack(*{e}, **self.options)"),
    )


EXPRESSIONS = st.recursive(st.sampled_from(_LEAVES), _compound, max_leaves=5)
_TARGETS = (
    "n", "t", "out", "self.buf[0]", "self.buf[-2]", "self.buf[..., 3]", "self.cache[n]",
    "out[mask]", "self.count", "a, b",
    "(a, b), c", "a, (b, *rest)",
)  # fmt: skip
_DECORATORS = (
    "@torch.compile", "@torch.no_grad()", "@torch.inference_mode()", "@staticmethod",
    "@functools.lru_cache(maxsize=None)", "@register('step')", "@property",
)  # fmt: skip


class _Scope:
    """Where a statement goes: what it may say there."""

    def __init__(self, depth: int, loop: bool, asynchronous: bool) -> None:
        self.depth, self.loop, self.asynchronous = depth, loop, asynchronous


@st.composite
def block(draw: st.DrawFn, scope: _Scope) -> list[str]:
    """The lines (indented relative to the block) of 1 to 3 statements."""
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        lines.extend(draw(statement(scope)))
    return lines


def _indented(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


@st.composite
def statement(draw: st.DrawFn, scope: _Scope) -> list[str]:
    expr = draw(EXPRESSIONS)
    kinds = ["assign", "unpack", "augment", "expression", "return", "assert", "raise"]
    kinds += ["annotated"]
    if scope.loop:
        kinds += ["break", "continue"]
    if scope.asynchronous:
        kinds += ["await"]
    if scope.depth < 2:
        kinds += ["if", "for", "while", "with", "try", "def", "match", "walrus"]
    kind = draw(st.sampled_from(kinds))
    inner = _Scope(scope.depth + 1, scope.loop, scope.asynchronous)
    looping = _Scope(scope.depth + 1, True, scope.asynchronous)
    if kind == "assign":
        target = draw(st.sampled_from(_TARGETS))
        if target.startswith("self.buf[") and draw(st.booleans()):
            expr = draw(st.sampled_from(("0", "1.5", "n", "len(lens)")))  # a host scalar
        return [f"{target} = {expr}"]
    if kind == "unpack":  # the parts of what a helper returns, one of them used
        target = draw(st.sampled_from(_TARGETS[-3:]))
        callee = draw(st.sampled_from(("gather", "helpers.pack", "_local", "self.project")))
        args = ", ".join(draw(st.lists(EXPRESSIONS, min_size=1, max_size=2)))
        part = draw(st.sampled_from(("a", "b", "c")))
        use = draw(st.sampled_from((f"{part}.item()", f"gather({part})", f"print({part}[0])")))
        return [f"{target} = {callee}({args})", f"n = {use}"]
    if kind == "augment":
        return [f"{draw(st.sampled_from(('n', 't', 'self.count')))} += {expr}"]
    if kind == "annotated":
        return [f"n: {draw(st.sampled_from(('int', 'torch.Tensor', 'list[int]')))} = {expr}"]
    if kind in ("expression", "return", "assert"):
        return [f"{'' if kind == 'expression' else kind + ' '}{expr}"]
    if kind == "raise":
        return [f"raise ValueError({_formatted(expr)})"]
    if kind in ("break", "continue"):
        return [kind]
    if kind == "await":
        return [f"t = await helpers.fetch({expr})"]
    if kind == "walrus":
        return [f"if (w := {expr}) is not None:", *_indented(draw(block(inner)))]
    if kind == "if":
        lines = [f"if {expr}:", *_indented(draw(block(inner)))]
        if draw(st.booleans()):
            lines += ["else:", *_indented(draw(block(inner)))]
        return lines
    if kind == "for":
        iterable = draw(st.sampled_from((expr, f"range({expr})", f"zip({expr}, lens)")))
        target = "i, v" if iterable.startswith("zip") else "v"
        return [f"for {target} in {iterable}:", *_indented(draw(block(looping)))]
    if kind == "while":
        return [f"while {expr}:", *_indented(draw(block(looping))), "    break"]
    if kind == "with":
        manager = draw(st.sampled_from(("torch.no_grad()", "torch.cuda.stream(s)", "lock")))
        return [f"with {manager}:", *_indented(draw(block(inner)))]
    if kind == "try":
        return [
            "try:",
            *_indented(draw(block(inner))),
            "except (RuntimeError, ValueError) as error:",
            *_indented(draw(block(inner))),
            "finally:",
            "    n = 0",
        ]
    if kind == "match":
        return [
            f"match {expr}:",
            "    case 0 | 1:",
            *_indented(_indented(draw(block(inner)))),
            "    case [first, *rest]:",
            *_indented(_indented(draw(block(inner)))),
            "    case _:",
            "        pass",
        ]
    # a nested function, called where it is defined
    body = draw(block(_Scope(scope.depth + 1, False, False)))
    return ["def _inner(v, *args, k=1, **kwargs):", *_indented(body), f"t = _inner({expr})"]


@st.composite
def function(draw: st.DrawFn, name: str, method: bool) -> list[str]:
    asynchronous = draw(st.integers(0, 5)) == 0
    decorators = draw(st.lists(st.sampled_from(_DECORATORS), max_size=2, unique=True))
    if not method:
        decorators = [d for d in decorators if d not in ("@staticmethod", "@property")]
    params = "self, x, lens, mask" if method and "@staticmethod" not in decorators else "x, lens"
    if "@property" in decorators:
        params = "self"
    header = f"{'async ' if asynchronous else ''}def {name}({params}):"
    body = draw(block(_Scope(0, False, asynchronous)))
    return [*decorators, header, *_indented(body)]


@st.composite
def runner_class(draw: st.DrawFn, index: int) -> list[str]:
    lines = [f"class Runner{index}(nn.Module):"]
    lines += _indented(
        [
            "def __init__(self):",
            "    super().__init__()",
            "    self.buf = torch.zeros(16, device='cuda')",
            "    self.cache = {}",
        ]
    )
    for name in draw(st.lists(st.sampled_from(("project", "step", "helper")), unique=True)):
        lines += _indented(draw(function(name, method=True)))
    lines += _indented(draw(function("forward", method=True)))
    return lines


_HELPERS_HEAD = (
    "import torch\n"
    "from pkg import models  # an import cycle\n\n"
    "registry = {}\n\n\n"
    "def register(name):\n    return lambda f: registry.setdefault(name, f)\n\n\n"
)
_MODELS_HEAD = (
    "import functools\n"
    "import torch\n"
    "import torch.nn.functional as F\n"
    "from torch import nn\n"
    "from pkg import helpers\n"
    "from pkg.helpers import gather, register\n\n\n"
)
_STEP_LOOP = (
    "def main(loader):\n"
    "    model = Runner0()\n"
    "    for batch in loader:\n"
    "        out = model(batch, batch.lens, batch.mask)\n"
    "        print(out.item())\n"
)


@st.composite
def engine_tree(draw: st.DrawFn) -> dict[str, str]:
    """A package of two modules calling each other: runners and a step loop, helpers."""
    helpers = [_HELPERS_HEAD]
    for name in ("gather", "pack", "fetch", "_local"):
        helpers.append("\n".join(draw(function(name, method=False))) + "\n\n\n")
    models = [_MODELS_HEAD, "def _local(v):\n    return gather(v, v)\n\n\n"]
    for index in range(draw(st.integers(1, 2))):
        models.append("\n".join(draw(runner_class(index))) + "\n\n\n")
    models.append(_STEP_LOOP)
    return {
        "pkg/__init__.py": "",
        "pkg/helpers.py": "".join(helpers),
        "pkg/models.py": "".join(models),
    }


def write(root: Path, files: dict[str, bytes]) -> list[str]:
    for relative, data in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(data)
    return sorted(str(root / relative) for relative in files)


@bounded(25)
@given(engine_tree())
def test_engine_shaped_programs_are_analysed_linted_and_fixed(files: dict[str, str]) -> None:
    for relative, source in files.items():
        with warnings.catch_warnings():  # `assert (x, y)` and such: valid, if odd
            warnings.simplefilter("ignore", SyntaxWarning)
            compile(source, relative, "exec")  # the generator makes valid code only
        module = relative.removesuffix(".py").replace("/", ".").removesuffix(".__init__")
        facts = analyze_source(source, module, relative.endswith("__init__.py"), RULES)
        assert isinstance(facts, FileFacts), facts
    with folder() as root:
        paths = write(root, {relative: source.encode() for relative, source in files.items()})
        run = fix_paths(paths, unsafe=True, scope="all")
        assert_located(run.result)
        for path, text in run.fixed.items():
            ast.parse(text, path)  # a fixed file still compiles
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()) as err:
            code = main(["check", "-j", "1", "--no-cache", "--output-format", "json", str(root)])
        assert code in (0, 1), err.getvalue()
        json.loads(out.getvalue())


# ------------------------------------------------------- programs from the grammar


@bounded(40)
@given(hypothesmith.from_grammar())
@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # hypothesmith compiles what it makes
def test_programs_of_python_s_grammar_never_give_an_internal_error(source: str) -> None:
    with warnings.catch_warnings(record=True) as caught, folder() as root:
        warnings.simplefilter("always")
        facts = analyze_source(source, "m", False, RULES)
        paths = write(root, {"m.py": source.encode()})
        assert_located(lint_files(paths, scope="all"), set(paths))
    if isinstance(facts, FileError):  # code the grammar allows and the compiler refuses
        assert "internal error" not in facts.message and facts.line >= 1, facts
    assert [str(warning.message) for warning in caught] == []  # the code's are not shown


# ------------------------------------------------------- mutated fixture files

FIXTURE_FILES = sorted(p for p in FIXTURES.rglob("*.py") if p.stat().st_size > 200)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A fixture file, and that file with 1-3 mutations: cut short, a byte changed, a line
    deleted or repeated."""
    original = draw(st.sampled_from(FIXTURE_FILES)).read_bytes()
    data = original
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(("truncate", "flip", "delete", "repeat")))
        if kind in ("truncate", "flip"):
            at = draw(st.integers(0, max(len(data) - 1, 0)))
            if kind == "truncate":
                data = data[:at]
            else:
                data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
            continue
        lines = data.splitlines(keepends=True)
        if lines:
            at = draw(st.integers(0, len(lines) - 1))
            lines[at : at + 1] = [] if kind == "delete" else [lines[at]] * 2
        data = b"".join(lines)
    return original, data


@bounded(60)
@given(mutated())
def test_mutated_fixture_files_are_linted_or_a_located_error(pair: tuple[bytes, bytes]) -> None:
    original, data = pair
    with folder() as root:
        (root / "pkg").mkdir()
        paths = write(root, {"pkg/__init__.py": b"", "pkg/a.py": data, "pkg/b.py": original})
        result = lint_files(paths, scope="all")
        assert_located(result, {paths[1]})
        assert result.files == 3  # one bad file never stops the others
    try:
        source = data.decode()
    except UnicodeDecodeError:
        return
    facts = analyze_source(source, "pkg.a", False, RULES)
    if isinstance(facts, FileError):
        assert "internal error" not in facts.message and facts.line >= 1, facts


def test_the_fixtures_to_mutate_are_there() -> None:
    assert len(FIXTURE_FILES) >= 20


# ------------------------------------------------------- what fuzzing found


def test_a_part_of_a_part_of_a_helper_s_result_is_linted() -> None:
    """``(a, b), c = helper(x)`` crashed the project phase of the whole run (found in
    site-packages by benchmarks/lint_tree.py, then by the generator above)."""
    helpers = "def split(x):\n    return (x, x.sum()), x\n"
    models = (
        "import torch\nfrom pkg.helpers import split\n\n@torch.compile\ndef step(x):\n"
        "    (a, b), c = split(x)\n    return a.item() + c.item()\n"
    )
    with folder() as root:
        files = {"pkg/__init__.py": "", "pkg/helpers.py": helpers, "pkg/models.py": models}
        paths = write(root, {name: text.encode() for name, text in files.items()})
        result = lint_files(paths)
    assert result.problems == []
    assert [(f.code, f.span.line) for f in result.findings] == [("SG101", 7), ("SG101", 7)]


def test_an_empty_tuple_annotation_is_analysed() -> None:
    """``tuple[()]`` (hypothesis, typeshed) was an IndexError in the per-file phase."""
    source = "def f(x: tuple[()] | None) -> tuple[()]:\n    return ()\n"
    assert isinstance(analyze_source(source, "m", False, RULES), FileFacts)
