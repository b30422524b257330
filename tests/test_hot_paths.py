"""What is hot, and how hotness and hidden syncs travel through calls."""

from __future__ import annotations

import textwrap

from syncguard.config import Settings
from syncguard.testing import lint_snippet, lint_tree


def lines(result, code: str | None = None) -> list[int]:
    return sorted(f.span.line for f in result.findings if code is None or f.code == code)


def test_forward_of_nn_module_is_hot_and_plain_functions_are_not() -> None:
    result = lint_snippet(
        """
        import torch
        from torch import nn

        def summarize(x):
            return x.item()

        class Model(nn.Module):
            def forward(self, x):
                return x.sum().item()
        """
    )
    assert lines(result) == [9]
    assert result.findings[0].hot == "forward"


def test_unresolvable_base_counts_as_module_but_a_plain_class_does_not() -> None:
    result = lint_snippet(
        """
        from somewhere import Base

        class Layer(Base):
            def forward(self, x):
                return x.item()

        class Plain:
            def forward(self, x):
                return x.item()
        """
    )
    assert lines(result) == [5]


def test_inheritance_within_the_tree_makes_forward_hot() -> None:
    result = lint_tree(
        {
            "pkg/__init__.py": "",
            "pkg/base.py": """
                import torch.nn as nn
                class Base(nn.Module):
                    pass
                """,
            "pkg/layer.py": """
                from .base import Base
                class Layer(Base):
                    def forward(self, x):
                        return x.tolist()
                """,
        }
    )
    assert [(f.path, f.span.line) for f in result.findings] == [("pkg/layer.py", 4)]


def test_autograd_function_forward_and_backward_are_hot() -> None:
    result = lint_snippet(
        """
        import torch

        class Op(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.nonzero()

            @staticmethod
            def backward(ctx, grad):
                return grad.item()
        """
    )
    assert lines(result) == [6, 10]
    assert {f.hot for f in result.findings} == {
        "autograd.Function.forward",
        "autograd.Function.backward",
    }


def test_decorators_markers_and_compile_calls_make_roots() -> None:
    result = lint_snippet(
        """
        import torch
        import syncguard
        from syncguard import hot

        @torch.compile(dynamic=True)
        def a(x):
            return x.item()

        @torch.jit.script
        def b(x):
            return x.item()

        @syncguard.hot
        def c(x):
            return x.item()

        @hot
        def d(x):
            return x.item()

        def e(x):  # syncguard: hot
            return x.item()

        def f(x):
            return x.item()

        compiled_f = torch.compile(f)

        def cold(x):
            return x.item()
        """
    )
    assert lines(result) == [7, 11, 15, 19, 22, 25]
    reasons = {f.span.line: f.hot for f in result.findings}
    assert reasons[7] == "torch.compile"
    assert reasons[11] == "torch.jit.script"
    assert reasons[15] == reasons[19] == "@syncguard.hot"
    assert reasons[22] == "# syncguard: hot"
    assert reasons[25] == "torch.compile"


def test_compiled_functions_say_graph_break() -> None:
    result = lint_snippet(
        """
        import torch

        @torch.compile
        def step(x):
            return x.item()
        """
    )
    assert "graph break" in result.findings[0].message


def test_hot_functions_glob_from_settings() -> None:
    source = """
        class FlashMetadataBuilder:
            def build(self, common):
                return common.seq_lens.tolist()

        class Runner:
            def step(self, x):
                return x.tolist()
        """
    assert lines(lint_snippet(source)) == []  # nothing says these run per step
    settings = Settings(hot_functions=("example.Runner.step",))
    assert lines(lint_snippet(source, settings=settings)) == [7]
    # An engine importing vllm gets the vllm preset: its metadata builders are hot...
    engine = "import vllm\n" + textwrap.dedent(source)
    assert lines(lint_snippet(engine)) == [5]
    assert lint_snippet(engine).findings[0].hot == "preset vllm: *MetadataBuilder.build"
    # ... unless the settings turn the preset off, or cool what it heats.
    assert lines(lint_snippet(engine, settings=Settings(presets=()))) == []
    cold = Settings(cold_functions=("*MetadataBuilder.build",))
    assert lines(lint_snippet(engine, settings=cold)) == []


def test_hotness_propagates_to_self_methods_module_functions_and_nested_defs() -> None:
    result = lint_snippet(
        """
        import torch
        from torch import nn

        def helper(n):
            buf = torch.ones(4, device="cuda")
            return buf.sum().item()

        class Model(nn.Module):
            def forward(self, x):
                def inner():
                    return x.nonzero()
                rows = inner()
                return self._post(x) + helper(3)

            def _post(self, x):
                return x.tolist()
        """
    )
    # _post's .tolist() is on its parameter: reported where forward passes device data.
    assert lines(result) == [6, 11, 13]
    by_line = {f.span.line: f for f in result.findings}
    assert [str(step) for step in by_line[13].chain] == [
        "example.py:13 example.Model.forward",
        "example.py:16 example.Model._post",
    ]
    assert by_line[6].hot == "called from example.Model.forward"
    assert [str(step) for step in by_line[6].chain] == [
        "example.py:13 example.Model.forward",
        "example.py:6 example.helper",
    ]


def test_inherited_methods_resolve_through_self() -> None:
    result = lint_tree(
        {
            "pkg/__init__.py": "",
            "pkg/base.py": """
                import torch
                class Mixin:
                    def read(self, x):
                        return self.buf.item()
                    def __init__(self):
                        self.buf = torch.zeros(1, device="cuda")
                """,
            "pkg/model.py": """
                from torch import nn
                from pkg.base import Mixin
                class Model(Mixin, nn.Module):
                    def forward(self, x):
                        return self.read(x)
                """,
        }
    )
    assert [(f.path, f.span.line) for f in result.findings] == [("pkg/base.py", 4)]


def test_cross_module_calls_import_forms_and_decorated_helpers() -> None:
    result = lint_tree(
        {
            "eng/__init__.py": "",
            "eng/ops/__init__.py": "",
            "eng/ops/idx.py": """
                import torch

                @torch.no_grad()
                def cached(n):
                    return torch.arange(n, device="cuda").tolist()

                def plain(n):
                    return torch.ones(n, device="cuda").sum().item()

                def third(n):
                    return torch.ones(n, device="cuda").nonzero()
                """,
            "eng/model.py": """
                from torch import nn
                import eng.ops.idx as idx
                from eng.ops.idx import cached
                from .ops import idx as rel

                class Model(nn.Module):
                    def forward(self, x):
                        return cached(3), idx.plain(2), rel.third(1)
                """,
        }
    )
    assert [(f.path, f.span.line) for f in result.findings] == [
        ("eng/ops/idx.py", 5),
        ("eng/ops/idx.py", 8),
        ("eng/ops/idx.py", 11),
    ]


def test_memoised_helpers_run_once_per_argument_set() -> None:
    # lru_cache(device): the window is built and copied once per device, not per step.
    result = lint_snippet(
        """
        import functools
        from functools import lru_cache
        import torch
        from torch import nn

        @lru_cache(maxsize=4)
        def hann_window(n, device):
            return torch.hann_window(n).to(device)

        @functools.cache
        def offsets(n):
            return torch.arange(n, device="cuda").tolist()

        class Frontend(nn.Module):
            def forward(self, x):
                return x * hann_window(400, x.device), offsets(3), x.tolist()
        """
    )
    assert [(f.code, f.span.line) for f in result.findings] == [("SG102", 16)]


def test_init_and_cold_markers_stop_propagation() -> None:
    result = lint_snippet(
        """
        import torch
        import syncguard
        from torch import nn

        @syncguard.cold
        def warmup(x):
            return x.item()

        def annotated(x):  # syncguard: cold
            return x.item()

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.n = torch.ones(1).cuda().item()

            def forward(self, x):
                self.__init__()
                return warmup(x), annotated(x)
        """
    )
    assert result.findings == []


def test_markers_are_read_on_their_line_after_a_form_feed() -> None:
    # A form feed (a page break some projects keep between sections) is not a line break
    # for Python: the marker below it is still on the def's line.
    result = lint_snippet(
        "import torch\nfrom torch import nn\n\x0c\n"
        "class Warmup(nn.Module):\n"
        "    def forward(self, x):  # syncguard: cold\n"
        "        return x.sum().item()\n\n"
        "class Step(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x.sum().item()\n"
    )
    assert [(f.code, f.span.line) for f in result.findings] == [("SG101", 10)]


def test_hidden_sync_in_helper_is_reported_at_the_hot_call_site_with_chain() -> None:
    result = lint_tree(
        {
            "k/__init__.py": "",
            "k/index.py": """
                def lens(cu):
                    return cu[1:] - cu[:-1]

                def chunk_indices(cu_seqlens, chunk_size):
                    return [n // chunk_size for n in lens(cu_seqlens).tolist()]
                """,
            "k/wrapper.py": """
                import torch
                from k.index import chunk_indices

                @torch.compile
                def kernel(q, cu_seqlens):
                    return chunk_indices(cu_seqlens, 64)

                @torch.compile
                def kernel_host(q, cu_seqlens_cpu):
                    return chunk_indices(cu_seqlens_cpu, 64)
                """,
        }
    )
    assert len(result.findings) == 1
    finding = result.findings[0]
    assert (finding.path, finding.span.line, finding.code) == ("k/wrapper.py", 6, "SG102")
    assert [str(step) for step in finding.chain] == [
        "k/wrapper.py:6 k.wrapper.kernel",
        "k/index.py:5 k.index.chunk_indices",
    ]
    assert "cu_seqlens" in finding.message


def test_recursion_and_cycles_terminate() -> None:
    result = lint_snippet(
        """
        import torch

        def ping(x, n):
            if n:
                return pong(x, n - 1)
            return x.tolist()

        def pong(x, n):
            return ping(x, n)

        def self_loop(x):
            return self_loop(x)

        @torch.compile
        def root(x):
            return ping(x, 3), self_loop(x)
        """
    )
    assert [(f.code, f.span.line) for f in result.findings] == [("SG102", 16)]


def test_loop_findings_say_once_per_iteration() -> None:
    result = lint_snippet(
        """
        import torch

        @torch.compile
        def step(xs):
            for x in xs:
                x.item()
            [y.item() for y in xs]
        """
    )
    assert lines(result) == [6, 7]
    assert all("once per iteration" in f.message for f in result.findings)


def test_scope_all_reports_cold_code_as_warnings() -> None:
    source = """
        def cold(x):
            return x.item()
        """
    assert lint_snippet(source).findings == []
    findings = lint_snippet(source, scope="all").findings
    assert [(f.span.line, f.severity, f.hot) for f in findings] == [(2, "warning", None)]


def test_methods_of_attributes_typed_in_init_and_classmethods_resolve() -> None:
    result = lint_snippet(
        """
        import torch
        from torch import nn

        class Indexer:
            def lookup(self, ids):
                return ids.tolist()

            @classmethod
            def build(cls, x):
                return cls.count(x)

            @classmethod
            def count(cls, x):
                return torch.ones(2, device="cuda").sum().item()

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.indexer = Indexer()

            def forward(self, ids):
                return self.indexer.lookup(ids), Indexer.build(ids)
        """
    )
    assert lines(result) == [14, 22]
    hidden = next(f for f in result.findings if f.span.line == 22)
    assert [str(step) for step in hidden.chain] == [
        "example.py:22 example.Model.forward",
        "example.py:6 example.Indexer.lookup",
    ]


def test_hot_option_on_the_command_line(tmp_path) -> None:
    from conftest import run_cli

    (tmp_path / "runner.py").write_text(
        "class Runner:\n    def step(self, x):\n        return x.item()\n"
    )
    assert run_cli("check", ".", cwd=tmp_path).returncode == 0
    hot = run_cli("check", ".", "--hot", "runner.Runner.step", cwd=tmp_path)
    assert hot.returncode == 1 and "runner.py:3:16: SG101" in hot.stdout


def test_call_is_hot_only_for_known_modules() -> None:
    result = lint_snippet(
        """
        from torch import nn
        from transformers import ProcessorMixin

        class Processor(ProcessorMixin):
            def __call__(self, images):
                return images.tolist()

        class Head(nn.Module):
            def __call__(self, x):
                return x.tolist()
        """
    )
    assert lines(result) == [10]


def test_syncs_inside_keyword_arguments_are_reported() -> None:
    result = lint_snippet(
        """
        import torch

        def log(value=None, step=0):
            return value

        @torch.compile
        def step(x):
            return log(value=x.sum().item(), step=x.tolist())
        """
    )
    assert [(f.code, f.span.line, f.span.column) for f in result.findings] == [
        ("SG101", 8, 22),
        ("SG102", 8, 43),
    ]


def test_timing_and_profiling_code_is_cold() -> None:
    # A timing context synchronizes to measure; a profile run happens once at start-up.
    result = lint_snippet(
        settings=Settings(hot_functions=("*ModelRunner.execute_model",)),
        source="""
        import contextlib
        import torch

        class GPUModelRunner:
            @contextlib.contextmanager
            def timed_encoder_operation(self):
                torch.cuda.synchronize()
                yield
                torch.cuda.synchronize()

            def profile_run(self, x):
                return x.sum().item()

            def execute_model(self, x):
                with self.timed_encoder_operation():
                    self.profile_run(x)
                return x.tolist()
        """,
    )
    assert [(f.code, f.span.line) for f in result.findings] == [("SG102", 17)]
