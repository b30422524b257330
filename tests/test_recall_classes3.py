"""Classes of per-step syncs that fresh recall samples of engines and training frameworks
found missing, each written here as such code writes it: reported where it syncs every step,
and not where it does not."""

from __future__ import annotations

from syncguard.testing import lint_tree


def reported(files: dict[str, str]) -> list[tuple[str, int, str]]:
    result = lint_tree(files)
    assert result.problems == []
    return sorted((f.path, f.span.line, f.code) for f in result.findings)


# An optimizer that installs the functions of a helper module as its own methods, by name.
_HOOKS = {
    "fw/__init__.py": "",
    "fw/selective.py": """
        import torch

        def select_channels(optimizer, grads):
            scores = torch.zeros(len(grads), device="cuda")
            top = torch.topk(scores, 2).indices
            optimizer.selected = [i.item() for i in top]

        def backward(optimizer, loss):
            loss.backward()

        def log_timers(optimizer):
            elapsed = torch.zeros(1, device="cuda")
            print(elapsed.item())
        """,
}


def test_functions_bound_by_setattr_from_a_list_of_names_run_in_the_step() -> None:
    files = {
        **_HOOKS,
        "fw/optim.py": """
            from functools import partial

            import torch
            import fw.selective as selective

            class SelectiveOptimizer(torch.optim.Optimizer):
                def __init__(self, params):
                    super().__init__(params, {})
                    self._install_hooks()

                def _install_hooks(self):
                    names = ["select_channels", "backward", "log_timers"]
                    for name in names:
                        fn = getattr(selective, name)
                        setattr(self, name, partial(fn, self))

                def step(self):
                    grads = [p.grad for group in self.param_groups for p in group["params"]]
                    self.select_channels(grads)
            """,
    }
    # Each attribute holds the function of its own name: ``log_timers`` is never called
    # in the step, so its sync is not reported; the loop that binds them hands the
    # functions on without running them: it is no step loop.
    assert reported(files) == [("fw/selective.py", 6, "SG101")]


def test_a_setattr_with_a_name_the_walk_cannot_tell_binds_nothing() -> None:
    files = {
        **_HOOKS,
        "fw/optim.py": """
            import torch
            import fw.selective as selective

            class SelectiveOptimizer(torch.optim.Optimizer):
                def __init__(self, params, names):
                    super().__init__(params, {})
                    for name in names:
                        setattr(self, name, getattr(selective, name))

                def step(self):
                    self.select_channels(self.param_groups)
            """,
    }
    assert reported(files) == []


def test_an_override_in_a_subclass_of_a_generic_base_is_dispatched_to() -> None:
    files = {
        "fw/__init__.py": "",
        "fw/attn/__init__.py": "",
        "fw/attn/common.py": """
            from typing import Generic, TypeVar

            M = TypeVar("M")

            class MetadataBuilder(Generic[M]):
                def build(self, seq_lens):
                    return self._build_decode(seq_lens)

                def _build_decode(self, seq_lens):
                    return seq_lens
            """,
        "fw/attn/rocm.py": """
            from fw.attn.common import MetadataBuilder

            class RocmMetadata:
                pass

            class RocmMetadataBuilder(MetadataBuilder[RocmMetadata]):
                def _build_decode(self, seq_lens):
                    return int(seq_lens.max().item())
            """,
        "fw/model.py": """
            import torch
            from torch import nn
            from fw.attn.common import MetadataBuilder

            class Model(nn.Module):
                def __init__(self, builder: MetadataBuilder):
                    super().__init__()
                    self.builder = builder

                def forward(self, x):
                    seq_lens = torch.arange(4, device="cuda")
                    return x, self.builder.build(seq_lens)
            """,
    }
    # ``MetadataBuilder[RocmMetadata]`` names the base ``MetadataBuilder``: its subclass's
    # override runs when the base's ``build`` calls ``self._build_decode``.
    assert reported(files) == [("fw/model.py", 12, "SG101")]


_LOADER = """
    import importlib
    import sys

    for device in ("npu",):
        module = importlib.import_module(f".{device}", package=__name__)
        for member in dir(module):
            if member.endswith("Builder"):
                setattr(sys.modules[__name__], member, getattr(module, member))
    """
_NPU_BUILDER = """
    import torch

    class NPULamb:
        @staticmethod
        def lamb(param, lr):
            overflow = torch.zeros(1, device="npu")
            if overflow.item():
                return
            param.mul_(lr)

    class LambBuilder:
        def load(self):
            return NPULamb
    """


def test_the_builders_of_a_top_level_copy_of_a_plugin_package_count_too() -> None:
    files = {
        "fw/__init__.py": "",
        "fw/ops/__init__.py": "",
        "fw/ops/builders/__init__.py": _LOADER,
        "fw/ops/builders/npu.py": _NPU_BUILDER,
        # The source checkout's copy, which the installed package is made from.
        "builders/__init__.py": _LOADER,
        "builders/npu.py": _NPU_BUILDER,
        "fw/ops/lamb.py": """
            import torch
            from fw.ops.builders import LambBuilder

            class Lamb(torch.optim.Optimizer):
                def __init__(self, params):
                    super().__init__(params, {})
                    self.kernels = LambBuilder().load()

                def step(self):
                    for group in self.param_groups:
                        for p in group["params"]:
                            self.kernels.lamb(p, 0.1)
            """,
    }
    assert reported(files) == [
        ("builders/npu.py", 7, "SG101"),
        ("fw/ops/builders/npu.py", 7, "SG101"),
    ]


def test_work_done_every_so_many_steps_by_a_counter_reset_is_hot_and_a_cache_is_not() -> None:
    files = {
        "fw/__init__.py": "",
        "fw/balance.py": """
            import torch

            class LoadBalancer:
                def __init__(self, interval):
                    self.steps = 0
                    self.interval = interval
                    self.load = torch.zeros(8, device="cuda")
                    self.table = None

                def step(self):
                    self.steps += 1
                    if self.steps >= self.interval:
                        self.steps = 0
                        self.rebalance()
                    if self.table is None:
                        self.table = self.build_table()

                def rebalance(self):
                    return self.load.cpu()

                def build_table(self):
                    return self.load.tolist()
            """,
        "fw/runner.py": """
            from fw.balance import LoadBalancer

            class ModelRunner:
                def __init__(self):
                    self.balancer = LoadBalancer(100)

                def execute_model(self, model, batch):  # syncguard: hot
                    out = model(batch)
                    self.balancer.step()
                    return out
            """,
    }
    # The counter is reset to 0 each time the rebalancing runs: it runs every 100 steps.
    # The table is built once, the first time round.
    assert reported(files) == [("fw/balance.py", 19, "SG103")]
