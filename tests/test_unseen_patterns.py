"""The patterns of issue 12's "Why", each written as engine code would write it: reported
where they sync every step, not reported where they do not."""

from __future__ import annotations

from syncguard.testing import lint_tree


def reported(files: dict[str, str]) -> list[tuple[str, int, str]]:
    result = lint_tree(files)
    assert result.problems == []
    return sorted((f.path, f.span.line, f.code) for f in result.findings)


# ------------------------------------------------------------ per-step code that is no forward


def test_a_decoding_loop_makes_what_it_calls_hot() -> None:
    source = """
        import torch
        from torch import nn

        def stop_check(ids, eos):
            return bool((ids[:, -1] == eos).all())

        class Generator(nn.Module):
            def generate(self, ids, eos):
                finished = False
                while not finished:
                    out = self(ids)
                    ids = torch.cat([ids, out.argmax(-1)], dim=-1)
                    finished = stop_check(ids, eos)
                return ids

        def summarize(ids):
            return bool((ids == 0).all())
        """
    # Reported at the loop's call, with the chain down to the sync in the helper.
    assert reported({"gen.py": source}) == [("gen.py", 13, "SG104")]


def test_a_scheduler_loop_and_the_coroutine_it_drives_are_hot() -> None:
    source = """
        from torch import nn

        class Model(nn.Module):
            def forward(self, batch):
                return batch * 2

        class Scheduler:
            def __init__(self, model: Model):
                self.model = model

            def run_batch(self, batch):
                return self.model(batch)

            def process_results(self, out):
                return out.sum().item()

            async def _step(self, batch):
                out = self.run_batch(batch)
                return self.process_results(out)

            async def event_loop(self, queue):
                while True:
                    batch = queue.get()
                    await self._step(batch)

            def report(self, out):
                return out.sum().item()
        """
    assert reported({"sched.py": source}) == [("sched.py", 24, "SG101")]


def test_a_hook_called_on_an_untyped_model_reaches_the_class_that_defines_it() -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/model.py": """
            class VisionModel:
                def prepare_step_inputs(self, batch):
                    return batch["grid"].tolist()
            """,
        "pkg/runner.py": """
            import torch

            class Runner:
                def execute_model(self, model, batch):
                    for _ in range(4):
                        model.prepare_step_inputs(batch)
                        loss = model(batch)
                        loss.backward()
            """,
    }
    assert reported(files) == [("pkg/runner.py", 6, "SG102")]


def test_a_backend_hook_reached_through_a_factory() -> None:
    source = """
        from torch import nn

        class FlashBackend:
            def update_step_context(self, ctx):
                return ctx.lens.max().item()

        class TritonBackend:
            def update_step_context(self, ctx):
                return int(ctx.lens.sum())

        def get_backend(name):
            if name == "flash":
                return FlashBackend()
            return TritonBackend()

        class Attention(nn.Module):
            def forward(self, x, ctx):
                get_backend("flash").update_step_context(ctx)
                return x
        """
    assert reported({"attn.py": source}) == [("attn.py", 18, "SG101"), ("attn.py", 18, "SG104")]


def test_a_training_step_loop_is_hot() -> None:
    source = """
        import torch

        def train(model, loader, optimizer):
            for batch in loader:
                loss = model(batch)
                loss.backward()
                optimizer.step()
                print(loss.item())

        def evaluate_once(model, batch):
            return model(batch).item()
        """
    assert reported({"train.py": source}) == [("train.py", 8, "SG101")]


# ------------------------------------------------------------------ calls through objects


def test_a_local_bound_to_a_constructor_or_to_a_factory() -> None:
    source = """
        from torch import nn

        class TopKProcessor:
            def __init__(self, k):
                self.k = k

            def __call__(self, scores):
                return scores.topk(self.k).values.tolist()

        class Greedy:
            def propose(self, scores):
                return scores.argmax().item()

        class Sampled:
            def propose(self, scores):
                return bool(scores.isnan().any())

        def make_generator(cfg):
            return Greedy() if cfg.greedy else Sampled()

        class Head(nn.Module):
            def forward(self, scores, cfg):
                lp = TopKProcessor(5)
                lp(scores)
                gen = make_generator(cfg)
                return gen.propose(scores)
        """
    assert reported({"head.py": source}) == [
        ("head.py", 24, "SG102"), ("head.py", 26, "SG101"), ("head.py", 26, "SG104"),
    ]  # fmt: skip


def test_a_local_alias_of_an_attribute_and_an_attribute_set_outside_init() -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/kernels.py": """
            def flash_fwd(q, k, v):
                return q.nonzero()
            """,
        "pkg/attn.py": """
            from torch import nn

            from pkg import kernels

            class Helper:
                def run(self, x):
                    return x.tolist()

            class Attention(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.helper = Helper()

                def setup(self):
                    self.fwd = kernels.flash_fwd

                def forward(self, q, k, v):
                    h = self.helper
                    h.run(q)
                    return self.fwd(q, k, v)
            """,
    }
    assert reported(files) == [("pkg/attn.py", 19, "SG102"), ("pkg/attn.py", 20, "SG201")]


def test_a_container_of_processors_reaches_every_override() -> None:
    source = """
        from torch import nn

        class LogitsProcessor:
            def __call__(self, ids, scores):
                return scores

        class Temperature(LogitsProcessor):
            def __call__(self, ids, scores):
                return scores / scores.max().item()

        class Penalty(LogitsProcessor):
            def __call__(self, ids, scores):
                return scores[ids.nonzero()]

        class Sampler(nn.Module):
            def __init__(self, processors: list[LogitsProcessor]):
                super().__init__()
                self.processors = processors

            def forward(self, ids, scores):
                for p in self.processors:
                    scores = p(ids, scores)
                return scores
        """
    assert reported({"sampler.py": source}) == [
        ("sampler.py", 22, "SG101"), ("sampler.py", 22, "SG201"),
    ]  # fmt: skip


def test_registries_of_functions_and_registration_decorators() -> None:
    source = """
        from torch import nn

        def causal_mask(x):
            return x.nonzero()

        def full_mask(x):
            return x

        MASK_FUNCTIONS = {"causal": causal_mask, "full": full_mask}

        BACKENDS = {}

        def register(name):
            def wrap(cls):
                BACKENDS[name] = cls
                return cls
            return wrap

        @register("cuda")
        def cuda_step(x):
            return x.tolist()

        class Attention(nn.Module):
            def forward(self, x, impl, device):
                MASK_FUNCTIONS[impl](x)
                return BACKENDS[device](x)
        """
    assert reported({"reg.py": source}) == [("reg.py", 25, "SG201"), ("reg.py", 26, "SG102")]


# --------------------------------------------------------------------- where data lives


def test_a_helper_returning_a_device_boolean_syncs_in_the_if_of_its_caller() -> None:
    source = """
        from torch import nn

        def all_true(t):
            return t.sum() == t.numel()

        class Masker(nn.Module):
            def forward(self, x, mask=None):
                if mask is None or all_true(mask):
                    return x
                return x * mask
        """
    assert reported({"mask.py": source}) == [("mask.py", 8, "SG105")]


def test_a_parameter_used_as_a_tensor_is_one_for_python_conversions() -> None:
    source = """
        from torch import nn

        class Head(nn.Module):
            def forward(self, x, scale):
                total = x.sum()
                first = float(x[0])
                print(x)
                return total * first * float(scale)
        """
    assert reported({"head.py": source}) == [("head.py", 6, "SG104"), ("head.py", 7, "SG106")]


def test_a_field_moved_to_the_host_on_the_way_to_the_model_is_host_data_there() -> None:
    source = """
        from torch import nn

        class Vision(nn.Module):
            def forward(self, pixels, grid):
                sizes = grid.tolist()
                return pixels.split(sizes)

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.vision = Vision()

            def forward(self, pixels, grid):
                inputs = {"pixels": pixels}
                inputs["grid"] = grid.cpu()
                return self.vision(**inputs)
        """
    # The host copy is the one sync: the tower's .tolist() reads host data.
    assert reported({"vision.py": source}) == [("vision.py", 15, "SG103")]


def test_an_isinstance_tensor_branch_that_no_caller_takes_is_not_reported() -> None:
    source = """
        from torch import nn

        def to_sizes(sizes):
            if isinstance(sizes, torch.Tensor):
                return sizes.tolist()
            return list(sizes)

        class Splitter(nn.Module):
            def forward(self, x, first, second):
                return x.split(to_sizes([first, second]))

        class Loader(nn.Module):
            def forward(self, x, sizes):
                return x.split(to_sizes(sizes))
        """
    # Splitter passes a list (of whatever it is given): the tensor branch is dead there;
    # Loader may pass a tensor.
    assert reported({"split.py": source}) == [("split.py", 14, "SG102")]
