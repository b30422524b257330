"""Classes of per-step syncs that recall samples of training frameworks found missing, each
written as framework code would write it: reported where it syncs every step, and not where
it does not. Then the preset entries whose callers are outside the framework: each loads,
and what it names is hot."""

from __future__ import annotations

import pytest

from syncguard import presets
from syncguard.config import Settings
from syncguard.testing import lint_tree


def reported(files: dict[str, str]) -> list[tuple[str, int, str]]:
    result = lint_tree(files)
    assert result.problems == []
    return sorted((f.path, f.span.line, f.code) for f in result.findings)


# A package that fills its namespace at import time with the builder of the device found,
# one module per device; each builder's ``load`` returns a class of static kernels.
_BUILDERS = {
    "fw/__init__.py": "",
    "fw/ops/__init__.py": "",
    "fw/ops/builders/__init__.py": """
        import importlib
        import sys

        for device in ("npu", "cuda"):
            module = importlib.import_module(f".{device}", package=__name__)
            for member in dir(module):
                if member.endswith("Builder"):
                    setattr(sys.modules[__name__], member, getattr(module, member))
        """,
    "fw/ops/builders/npu.py": """
        class NPULion:
            @staticmethod
            def multi_tensor_lion(chunk, noop_flag, tensors, lr):
                if noop_flag.item() == 1:
                    return
                for tensor in tensors:
                    tensor.mul_(lr)

            @staticmethod
            def lamb(param, update, lr):
                ratio = param.norm() / update.norm()
                return ratio.item()

        class LionBuilder:
            def load(self):
                return NPULion
        """,
    "fw/ops/builders/cuda.py": """
        import importlib

        class LionBuilder:
            def load(self):
                return importlib.import_module("fw_cuda_ops")
        """,
    "fw/ops/apply.py": """
        class MultiTensorApply:
            def __init__(self, chunk):
                self.chunk = chunk

            def __call__(self, op, noop_flag, tensors, *args):
                return op(self.chunk, noop_flag, tensors, *args)

        applier = MultiTensorApply(2048)
        """,
}


def test_a_kernel_loaded_by_a_builder_and_handed_to_an_applier_runs_in_the_step() -> None:
    files = {
        **_BUILDERS,
        "fw/ops/lion.py": """
            import torch
            from fw.ops.apply import applier
            from fw.ops.builders import LionBuilder

            class Lion(torch.optim.Optimizer):
                def __init__(self, params):
                    super().__init__(params, {})
                    ops = LionBuilder().load()
                    self.lion = ops.multi_tensor_lion
                    self.flag = torch.cuda.IntTensor([0])

                def step(self):
                    for group in self.param_groups:
                        applier(self.lion, self.flag, [group["params"]], 0.1)
            """,
    }
    # Which builder the package holds is known at import time only: each of that name counts.
    # The kernel is passed on, not called, by the step: its flag may be device data.
    assert reported(files) == [("fw/ops/builders/npu.py", 4, "SG101")]


def test_a_kernel_of_a_loaded_module_called_through_an_attribute_runs_in_the_step() -> None:
    files = {
        **_BUILDERS,
        "fw/ops/lamb.py": """
            import torch
            from fw.ops.builders import LionBuilder

            class Lamb(torch.optim.Optimizer):
                def __init__(self, params):
                    super().__init__(params, {})
                    self.kernels = LionBuilder().load()

                def step(self):
                    for group in self.param_groups:
                        for p in group["params"]:
                            self.kernels.lamb(p, p.grad, 0.1)
            """,
    }
    # The parameters' norms sync in the kernel: reported where the step passes them.
    assert reported(files) == [("fw/ops/lamb.py", 12, "SG101")]


def test_kernels_handed_on_outside_the_step_or_objects_handed_on_are_not_reported() -> None:
    files = {
        **_BUILDERS,
        "fw/ops/lion.py": """
            import torch
            from fw.ops.apply import applier
            from fw.ops.builders import LionBuilder

            class Checker:
                def __call__(self, flag):
                    return flag.item()

            class Lion(torch.optim.Optimizer):
                def __init__(self, params):
                    super().__init__(params, {})
                    ops = LionBuilder().load()
                    self.lion = ops.multi_tensor_lion
                    self.checker = Checker()
                    self.flag = torch.cuda.IntTensor([0])

                def prepare(self):
                    applier(self.lion, self.flag, [], 0.1)

                def step(self):
                    record(self.checker, self.flag)

            def record(checker, flag):
                return [checker, flag]
            """,
    }
    # ``prepare`` is no step; the checker object is handed on and never called.
    assert reported(files) == []


def test_a_name_the_package_defines_itself_does_not_stand_for_its_modules_classes() -> None:
    files = {
        **_BUILDERS,
        "fw/ops/builders/__init__.py": """
            class LionBuilder:
                def load(self):
                    return None
            """,
        "fw/ops/lion.py": """
            import torch
            from fw.ops.apply import applier
            from fw.ops.builders import LionBuilder

            class Lion(torch.optim.Optimizer):
                def __init__(self, params):
                    super().__init__(params, {})
                    self.lion = LionBuilder().load().multi_tensor_lion
                    self.flag = torch.cuda.IntTensor([0])

                def step(self):
                    applier(self.lion, self.flag, [], 0.1)
            """,
    }
    assert reported(files) == []


# Preset entries whose callers are outside the framework: (preset, file, class or None,
# the function's signature), each written in the framework's layout with one sync.
_PRESET_ROOTS = [
    ("megatron", "megatron/core/pipeline_parallel/schedules.py", None,
     "forward_backward_no_pipelining(forward_step_func, data_iterator, model)"),
    ("megatron", "megatron/core/optimizer/qk_clip.py", None, "clip_qk(model, log_max_only=False)"),
    ("megatron", "megatron/core/timers.py", "Timers", "log(self, names, normalizer=1.0)"),
    ("megatron", "megatron/core/timers.py", "Timers", "write(self, names, writer, iteration)"),
    ("megatron", "megatron/core/utils.py", None,
     "get_thd_batch_on_this_cp_rank(batch, cu_seqlens, cu_seqlens_padded, max_seqlen)"),
    ("megatron", "megatron/core/utils.py", None, "get_batch_on_this_cp_rank(batch)"),
    ("megatron", "megatron/core/optimizer/optimizer.py", "MegatronOptimizer",
     "offload_to_cpu(self)"),
    ("megatron", "megatron/core/rerun_state_machine.py", "RerunStateMachine",
     "is_unexpectedly_large(self, result, threshold, context)"),
    ("deepspeed", "deepspeed/ops/lamb/fused_lamb.py", "FusedLamb", "get_lamb_coeffs(self)"),
    ("deepspeed", "deepspeed/compile/util.py", None, "pad_tensors(specs)"),
    ("deepspeed", "deepspeed/sequence/vocab_parallel_ops.py", None,
     "vocab_parallel_logprobs(vocab_parallel_logits, target)"),
    ("deepspeed", "deepspeed/sequence/linear_cross_entropy.py", None,
     "vocab_parallel_linear_cross_entropy(hidden, weight, target)"),
    ("deepspeed", "deepspeed/runtime/rollout/base.py", "RolloutEngine",
     "generate(self, request, sampling)"),
]  # fmt: skip


def _root_source(owner: str | None, signature: str) -> tuple[str, int]:
    """A module defining ``signature`` (in class ``owner``) whose body syncs on a device
    tensor, and the line of that sync."""
    indent = "    " if owner else ""
    lines = ["import torch", ""]
    if owner:
        lines.append(f"class {owner}:")
    lines += [
        f"{indent}def {signature}:",
        f'{indent}    values = torch.ones(4, device="cuda")',
        f"{indent}    return values.tolist()",
    ]
    return "\n".join(lines) + "\n", len(lines)


def _in_packages(path: str, source: str) -> dict[str, str]:
    """``{path: source}`` with an ``__init__.py`` in each folder above it."""
    files = {path: source}
    parts = path.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        files["/".join([*parts[:depth], "__init__.py"])] = ""
    return files


@pytest.mark.parametrize(("preset", "path", "owner", "signature"), _PRESET_ROOTS)
def test_a_preset_entry_makes_its_function_hot(
    preset: str, path: str, owner: str | None, signature: str
) -> None:
    assert preset in presets.available()  # the preset file parses
    source, line = _root_source(owner, signature)
    result = lint_tree(_in_packages(path, source))
    assert result.problems == []
    hot = [(f.span.line, f.hot) for f in result.findings if f.path == path]
    assert [each[0] for each in hot] == [line]
    assert f"preset {preset}" in (hot[0][1] or "")
    # Without the presets, nothing in the tree calls it: it is not hot.
    without = lint_tree(_in_packages(path, source), settings=Settings(presets=()))
    assert without.findings == []


_ADAPTER = """
    from torch import nn

    class FusionAdapter(nn.Module):
        def forward(self, visual, text, input_ids):
            positions = (input_ids == 7).nonzero()
            return text, visual, positions
    """


def test_what_tests_pass_a_module_does_not_say_what_its_steps_pass() -> None:
    files = {
        "fw/__init__.py": "",
        "fw/fusion.py": _ADAPTER,
        "fw/test_fusion.py": """
            import torch
            from fw.fusion import FusionAdapter

            def test_splice():
                adapter = FusionAdapter()
                adapter(torch.zeros(2), torch.zeros(2), torch.tensor([1, 7]))
            """,
    }
    # The test's CPU tensors are no evidence: the model's callers are outside the tree.
    assert reported(files) == [("fw/fusion.py", 5, "SG201")]


def test_what_every_production_caller_passes_still_says_where_data_lives() -> None:
    files = {
        "fw/__init__.py": "",
        "fw/fusion.py": _ADAPTER,
        "fw/model.py": """
            import torch
            from torch import nn
            from fw.fusion import FusionAdapter

            class Model(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.fusion = FusionAdapter()

                def forward(self, visual, text, ids_list):
                    ids_cpu = torch.tensor(ids_list)
                    return self.fusion(visual, text, ids_cpu)
            """,
    }
    assert reported(files) == []
