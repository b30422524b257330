"""Multimodal inputs a framework's runner moves to the device (issue 12): a preset's
``device-parameters`` say which parameters of a hot function hold device data, ``**kwargs``
included; items read from them (``kwargs.pop("k")``, a record built from them) stay device
data unless ``host-parameters`` names the item (a field the runner keeps on the CPU)."""

from __future__ import annotations

import inspect

from syncguard import presets
from syncguard.config import Settings
from syncguard.hotness import HotSettings
from syncguard.testing import lint_tree

# The runner batches each request's multimodal items on the device and calls the model's
# encoder with them, as vLLM's GPU model runner does (the tree is a `vllm` package, so
# the vllm preset is in force).
_RUNNER = """
    from vllm.model_executor.models.toy import ToyForConditionalGeneration


    def group_and_batch(mm_kwargs, device):
        for item in mm_kwargs:
            yield {key: value.to(device) for key, value in item.items()}


    class ToyModelRunner:
        def __init__(self, device):
            self.device = device
            self.model = ToyForConditionalGeneration()

        def _execute_mm_encoder(self, mm_kwargs):
            outputs = []
            for batch in group_and_batch(mm_kwargs, device=self.device):
                outputs.extend(self.model.embed_multimodal(**batch))
            return outputs

        def execute_model(self, scheduler_output):
            return self._execute_mm_encoder(scheduler_output.mm_kwargs)
"""

_MODEL = """
    import torch
    from torch import nn


    class ToyImageInputs(dict):
        pass


    class ToyForConditionalGeneration(nn.Module):
        def _parse_and_validate_image_input(self, **kwargs: object):
            pixel_values = kwargs.pop("pixel_values", None)
            pixel_attention_mask = kwargs.pop("pixel_attention_mask", None)
            image_grid_thw = kwargs.pop("image_grid_thw", None)
            if pixel_values is None:
                return None
            return ToyImageInputs(
                type="pixel_values",
                pixel_values=pixel_values,
                pixel_attention_mask=pixel_attention_mask,
                image_grid_thw=image_grid_thw,
            )

        def _process_image_input(self, image_input):
            sizes = image_input["image_grid_thw"].prod(-1).tolist()  # kept on the CPU
            mask = image_input["pixel_attention_mask"]
            counts = mask.sum(dim=1).tolist()  # moved to the GPU: syncs
            return sizes, counts

        def _process_audio_input(self, **kwargs):
            lengths = kwargs["audio_feature_lengths"]
            chunks = kwargs.get("audio_chunk_counts")  # kept on the CPU
            total = int(lengths.sum().item())  # moved to the GPU: syncs
            return total, chunks.tolist()

        def _image_sizes(self, image_input):
            image_sizes = image_input.get("image_sizes")
            if image_sizes is None:  # a host fallback keeps the item's name
                image_sizes = torch.as_tensor([[336, 336]])
            areas = [self._area(image_sizes[i]) for i in range(len(image_sizes))]
            for size in image_input["image_sizes"]:  # an element of a host item
                areas.append(size.prod().item())  # kept on the CPU
            counts = image_input["image_sizes"].to(dtype=torch.long)
            if torch.any(counts <= 0).item():  # kept on the CPU, through torch and a comparison
                raise ValueError("empty image")
            return areas

        def _area(self, image_size):
            height, width = image_size.tolist()  # kept on the CPU
            return height * width

        def embed_multimodal(self, **kwargs: object):
            if kwargs.get("input_audio_features") is not None:
                return self._process_audio_input(**kwargs)
            image_input = self._parse_and_validate_image_input(**kwargs)
            if image_input is None:
                return []
            if kwargs["pixel_values"].abs().max().item() > 1e4:  # syncs
                raise ValueError("pixel values out of range")
            return self._process_image_input(image_input), self._image_sizes(image_input)

        def describe(self, **kwargs):
            # Not what the runner calls: its kwargs are whatever its callers pass.
            return kwargs["pixel_values"].tolist()


    def summarize(model, batch):
        return model.describe(**batch)
"""

_TREE = {
    "vllm/__init__.py": "",
    "vllm/model_executor/__init__.py": "",
    "vllm/model_executor/models/__init__.py": "",
    "vllm/model_executor/models/toy.py": _MODEL,
    "vllm/v1/__init__.py": "",
    "vllm/v1/worker/__init__.py": "",
    "vllm/v1/worker/toy_model_runner.py": _RUNNER,
}
_MODEL_PATH = "vllm/model_executor/models/toy.py"


def _line(text: str) -> int:
    """The line of ``_MODEL`` holding ``text`` (as lint_tree numbers it, dedented)."""
    source = inspect.cleandoc(_MODEL).splitlines()
    lines = [number for number, line in enumerate(source, start=1) if text in line]
    assert len(lines) == 1, text
    return lines[0]


def _reached(settings: Settings | None = None) -> set[int]:
    """Lines of the model file that a finding is on, or that a finding's chain ends at."""
    result = lint_tree(_TREE, settings=settings)
    assert result.problems == []
    lines = set()
    for finding in result.findings:
        if finding.path == _MODEL_PATH:
            lines.add(finding.span.line)
        for step in finding.chain[-1:]:
            if step.path == _MODEL_PATH:
                lines.add(step.line)
    return lines


def test_fields_the_runner_moves_to_the_device_sync_where_the_model_reads_them() -> None:
    reached = _reached()
    # Through `**kwargs`, `kwargs.pop(...)` and the record built from it, to another method.
    assert _line("mask.sum(dim=1).tolist()") in reached
    # `kwargs["k"]` in the function the runner calls, and in a method given `**kwargs`.
    assert _line('kwargs["pixel_values"].abs()') in reached
    assert _line("int(lengths.sum().item())") in reached


def test_fields_kept_on_the_cpu_stay_host_data() -> None:
    # image_grid_thw and audio_chunk_counts are keep_on_cpu fields: the preset's
    # host-parameters name them, through `kwargs.pop`, `kwargs.get` and the record.
    reached = _reached()
    assert _line('image_input["image_grid_thw"].prod(-1)') not in reached
    assert _line("chunks.tolist()") not in reached
    # image_sizes too, where a branch falls back to a host tensor and element by element.
    assert _line("height, width = image_size.tolist()") not in reached
    assert _line("areas.append(size.prod().item())") not in reached
    assert _line("if torch.any(counts <= 0).item():") not in reached


def test_only_the_functions_the_preset_names_get_device_data() -> None:
    # `describe(**kwargs)` is not what the runner calls: its callers decide.
    assert _line('kwargs["pixel_values"].tolist()') not in _reached()


def test_without_the_preset_the_runner_s_kwargs_are_unknown() -> None:
    # The same tree with presets off (the runner made hot by hand): the spread batch says
    # nothing of what the encoder is given, so nothing in the model is reported.
    settings = Settings().with_overrides(presets=(), hot_functions=("*.execute_model",))
    assert _reached(settings) == set()


def test_the_device_parameters_key_loads_and_applies() -> None:
    vllm = presets.available()["vllm"]
    entries = [entry for entry in vllm.entries if entry.kind == "device-parameters"]
    assert [entry.pattern for entry in entries] == ["vllm.*.embed_multimodal:*"]
    applied = presets.apply(HotSettings(), [presets.Active(vllm, "named")])
    assert applied.device_parameters == ("vllm.*.embed_multimodal:*",)
    parsed = presets.parse(
        'name = "toy"\nrelease = "toy 1"\ndetect = ["toy"]\n'
        '[[device-parameters]]\nentry = "toy.*.encode:batch"\n'
        'cite = "toy/runner.py:10"\nwhy = "the runner moves the batch to the GPU first"\n',
        "toy.toml",
    )
    assert parsed.entries[0].kind == "device-parameters"
