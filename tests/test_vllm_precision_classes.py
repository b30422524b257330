"""Classes of false alarms found on vLLM 0.33 (issue 12), each written as engine code would
write it: host data and code the tree never runs are not reported; the device data and the
built classes beside them still are."""

from __future__ import annotations

from syncguard.config import Settings
from syncguard.testing import lint_tree

GRIDS_ON_HOST = Settings().with_overrides(host_parameters=("*image_grid_thw",))


def reported(files: dict[str, str], settings: Settings | None = None) -> list[tuple[str, int, str]]:
    result = lint_tree(files, settings=settings)
    assert result.problems == []
    return sorted((f.path, f.span.line, f.code) for f in result.findings)


def test_a_host_item_split_by_a_towers_integer_attribute_stays_on_the_host() -> None:
    source = """
        from torch import nn

        class VisionTower(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.merge_size = config.spatial_merge_size
                self.proj = nn.Linear(4, 4)

            def forward(self, pixels):
                return self.proj(pixels)

        class VisionModel(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.visual = VisionTower(config)

            def _image_sizes(self, image_input):
                grid_thw = image_input["image_grid_thw"]
                merge_size = self.visual.merge_size
                return (grid_thw.prod(-1) // merge_size // merge_size).tolist()

            def _pixel_sizes(self, image_input):
                pixels = image_input["pixel_values"]
                return (pixels.sum(-1) // self.visual.merge_size).tolist()

            def forward(self, image_input):
                return self._image_sizes(image_input), self._pixel_sizes(image_input)
        """
    # The grid is declared host data and the merge size a number from the config: host;
    # the pixels are not declared, and the call that passes them syncs.
    assert reported({"vl.py": source}, GRIDS_ON_HOST) == [("vl.py", 27, "SG102")]


def test_a_towers_attribute_holding_a_tensor_is_not_taken_for_a_host_number() -> None:
    source = """
        import torch
        from torch import nn

        class VisionTower(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.scale = torch.ones(4, device="cuda")

        class VisionModel(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.visual = VisionTower(config)

            def forward(self, image_input):
                grid_thw = image_input["image_grid_thw"]
                return (grid_thw * self.visual.scale).tolist()
        """
    assert reported({"vl.py": source}, GRIDS_ON_HOST) == [("vl.py", 16, "SG102")]


def test_an_item_read_by_name_through_a_getter_is_placed_by_that_name() -> None:
    source = """
        def feature_tensor(feature, key):
            return feature.data[key].data

        class ModelRunner:
            def execute_model(self, scheduler_output):
                for feature in scheduler_output.features:
                    t, h, w = feature_tensor(feature, "image_grid_thw").tolist()
                    first = feature.data.get("image_grid_thw").item()
                    pixels = feature_tensor(feature, "pixel_values").tolist()
        """
    settings = GRIDS_ON_HOST.with_overrides(hot_functions=("*.execute_model",))
    assert reported({"runner.py": source}, settings) == [("runner.py", 9, "SG102")]


SYMMETRIC_MEMORY = """
    import torch
    from torch import nn
    import torch.distributed._symmetric_memory as symm_mem

    class Communicator:
        def __init__(self, n, device):
            self.buffer = symm_mem.empty(n, device=device, dtype=torch.bfloat16)
            self.staging = torch.empty(n, dtype=torch.bfloat16)

        def all_reduce(self, inp):
            out = torch.empty_like(inp)
            self.buffer[: inp.numel()].copy_(inp.view(-1))
            out.copy_(self.buffer[: inp.numel()].view(out.shape))
            return out

        def from_staging(self, inp):
            out = torch.empty_like(inp)
            out.copy_(self.staging[: inp.numel()].view(out.shape))
            return out

    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.comm = Communicator(16, "cuda")

        def forward(self, x):
            self.comm.from_staging(x)
            return self.comm.all_reduce(x)
    """


def test_a_symmetric_memory_buffer_is_on_the_device_so_copies_into_it_do_not_sync() -> None:
    # The buffer made by symmetric memory's factory on the device: device-to-device
    # copies; the pageable host staging tensor copied to the device: a blocking copy.
    assert reported({"comm.py": SYMMETRIC_MEMORY}) == [("comm.py", 27, "SG302")]


def processor_tree(builder_base: str) -> dict[str, str]:
    return {
        "engine/frames.py": """
            import torch

            class FrameSampler:
                def __init__(self, fps):
                    self.fps = fps

                def process(self, frames):
                    return torch.nonzero(frames > 0)
            """,
        "engine/processing.py": f"""
            from transformers import ProcessorMixin
            from torch import nn
            from engine.frames import FrameSampler

            class OmniProcessor({builder_base}):
                def __init__(self):
                    super().__init__()
                    self.sampler = FrameSampler(2)
            """,
        "engine/stream.py": """
            from torch import nn

            class Decoder(nn.Module):
                def forward(self, tokens, parser):
                    return parser.process(tokens)
            """,
    }


def test_a_helper_only_an_input_processor_builds_runs_on_the_host() -> None:
    # ``parser.process`` resolves by its name to FrameSampler.process, which only the
    # processor (a transformers ProcessorMixin: host-classes of its preset) builds.
    assert reported(processor_tree("ProcessorMixin")) == []


def test_a_helper_a_module_builds_is_still_reached_by_its_name() -> None:
    assert reported(processor_tree("nn.Module")) == [("engine/stream.py", 5, "SG201")]


_MROPE_RUNNER = """
    import torch
    from torch import nn


    def _feature_tensor(feature, key):
        return feature.data[key]


    class QwenLikeModel(nn.Module):
        def forward(self, input_ids):
            return input_ids

        def get_mrope_input_positions(self, input_tokens: list[int], PARAM):
            lengths = [_feature_tensor(f, "audio_feature_lengths").item() for f in PARAM]
            return torch.arange(len(input_tokens)), sum(lengths)


    class GPUModelRunner:
        def __init__(self):
            self.model = QwenLikeModel()

        def add_requests(self, scheduler_output):
            for new_req in scheduler_output.scheduled_new_reqs:
                self.positions = self.model.get_mrope_input_positions(
                    new_req.prefill_token_ids, new_req.PARAM
                )

        def execute_model(self, scheduler_output):
            self.add_requests(scheduler_output)
            return self.model(scheduler_output.input_ids)
"""


def test_a_requests_multimodal_features_are_host_data_in_the_vllm_preset() -> None:
    # vLLM's preset: the features of a new request are the CPU tensors the frontend sent,
    # so M-RoPE positions computed from them at add-request time do not sync; the same
    # code on a parameter of another name is still reported at the per-step call.
    def tree(parameter: str) -> dict[str, str]:
        source = _MROPE_RUNNER.replace("PARAM", parameter)
        return {"vllm/__init__.py": "", "vllm/worker.py": source}

    assert reported(tree("mm_features")) == []
    assert reported(tree("features")) == [("vllm/worker.py", 29, "SG101")]


def test_the_branch_where_a_value_is_no_tensor_holds_a_python_value() -> None:
    # ``float(alpha)`` where ``isinstance(alpha, torch.Tensor)`` failed converts a Python
    # number; the tensor branch beside it still syncs, and is the one site reported.
    source = """
        import torch


        def scale_residual(stream, alpha):
            if isinstance(alpha, torch.Tensor):
                scale = float(alpha.sum())
            else:
                scale = float(alpha)
            return stream * scale


        class Block(torch.nn.Module):
            def forward(self, x):
                return scale_residual(x, x.mean()) + scale_residual(x, 0.5)
    """
    result = lint_tree({"pkg/__init__.py": "", "pkg/block.py": source})
    assert result.problems == []
    assert [(f.span.line, f.code) for f in result.findings] == [(14, "SG104")]
    assert "2 sites" not in result.findings[0].message
