"""Classes of false alarms left on vLLM 0.33 after the second round (issue 12), each written
as engine code would write it: what is on the host is not reported, the device data beside
it still is."""

from __future__ import annotations

from syncguard.config import Settings
from syncguard.testing import lint_tree

STEP = Settings().with_overrides(hot_functions=("*.execute_model",))


def reported(files: dict[str, str], settings: Settings = STEP) -> list[tuple[str, int, str]]:
    result = lint_tree(files, settings=settings)
    assert result.problems == []
    return sorted((f.path, f.span.line, f.code) for f in result.findings)


_AGREEMENT = """
    import torch
    import torch.distributed as dist


    class StepState:
        def _agree(self, needs, num_tokens, group) -> tuple[bool, torch.Tensor | None]:
            agreed = torch.zeros(2, 4, dtype=torch.int32)
            agreed[:, 0] = torch.tensor([needs, num_tokens])
            dist.all_reduce(agreed, group=group.cpu_group)
            if not agreed[0].any():
                return False, None
            return True, agreed[1]

        def _agree_on_device(self, num_tokens, group):
            agreed = torch.zeros(2, 4, dtype=torch.int32, device="cuda")
            dist.all_reduce(agreed, group=group.device_group)
            return True, agreed[1]

        def prepare(self, num_tokens, group, mode):
            needs = mode == 2 or num_tokens > 4
            tokens = None
            if group.size > 1:
                needs, tokens = self._agree(needs, num_tokens, group)
            host_max = num_tokens if tokens is None else int(tokens.max())
            needs, on_device = self._agree_on_device(num_tokens, group)
            return host_max, int(on_device.max())


    class Runner:
        def __init__(self):
            self.state = StepState()

        def execute_model(self, num_tokens, group, mode):
            return self.state.prepare(num_tokens, group, mode)
"""


def test_what_a_method_of_the_same_class_returns_is_placed_by_its_returns() -> None:
    # ``_agree`` all-reduces a CPU tensor (no device given) and returns a row of it: the
    # caller's ``int(tokens.max())`` is host work; the row of the device tensor still syncs.
    result = lint_tree({"runner.py": _AGREEMENT}, settings=STEP)
    assert [(f.span.line, f.code) for f in result.findings] == [(34, "SG104")]
    (finding,) = result.findings
    assert finding.chain[-1].line == 26
    assert "2 sites" not in finding.message


_DRAFT_LIMITS = """
    import numpy as np
    import torch


    def invalid_drafts(batch, req_ids, acceptable):
        limit = np.full(batch.num_reqs, 1 << 30, dtype=np.int32)
        for i, req_id in enumerate(req_ids):
            limit[i] = acceptable[i] if acceptable is not None else 0
        num_drafts = batch.num_draft_tokens
        if num_drafts is not None and (limit >= num_drafts).all():
            return None
        if (batch.draft_counts >= num_drafts).all():
            return None
        return torch.from_numpy(limit)


    class Runner:
        def execute_model(self, batch, output):
            return invalid_drafts(batch, output.req_ids, output.acceptable)
"""


def test_a_numpy_array_compared_with_an_unplaced_value_is_host_work() -> None:
    # ``limit`` is a numpy array: comparing it with anything but a device tensor stays on
    # the host; the same test on two unplaced fields of the batch is still reported.
    assert reported({"runner.py": _DRAFT_LIMITS}) == [("runner.py", 19, "SG105")]


_ROPE_STATE = """
    from typing import cast

    import torch
    from torch import nn


    class RopeState:
        def init_positions(self, model: nn.Module, token_ids: list[int], features) -> None:
            rope_model = cast(nn.Module, model)
            positions, delta = rope_model.get_rope_positions(token_ids, features)
            for i in range(3):
                self.stage(positions[i].tolist())


    class ModelState:
        def __init__(self, model):
            self.model = model
            self.embeds = torch.zeros(8, 4, device="cuda")
            self.rope_state = RopeState()

        def add_request(self, request, mm_features):
            self.rope_state.init_positions(self.model, request.prompt_token_ids, mm_features)

        def refresh(self, request):
            self.rope_state.init_positions(self.model, request.prompt_token_ids, self.embeds)


    class Runner:
        def __init__(self, model):
            self.model_state = ModelState(model)

        def execute_model(self, output):
            for request in output.new_requests:
                self.model_state.add_request(request, request.mm_features)
                self.model_state.refresh(request)
"""


def test_a_modules_method_returns_data_where_its_arguments_live() -> None:
    # ``model`` is a module: what its method returns lives where the token list and the
    # request's features (declared host data) do, not where its weights are; given a
    # device tensor, the same method's result still syncs.
    settings = STEP.with_overrides(host_parameters=("*:mm_features",))
    assert reported({"runner.py": _ROPE_STATE}, settings) == [("runner.py", 25, "SG102")]


_LOGICAL_MAPS = """
    import torch


    def logical_maps(physical_to_logical, num_logical):
        device = physical_to_logical.device
        assert physical_to_logical.device.type == "cpu"
        counts = torch.zeros(physical_to_logical.shape[0], num_logical, device=device)
        valid = physical_to_logical >= 0
        return int(counts.max().item()), physical_to_logical[valid]


    def device_maps(physical_to_logical, num_logical):
        device = physical_to_logical.device
        counts = torch.zeros(physical_to_logical.shape[0], num_logical, device=device)
        return int(counts.max().item())


    class Runner:
        def __init__(self):
            self.physical_to_logical = torch.zeros(4, 8, dtype=torch.long, device="cuda")

        def execute_model(self):
            host = logical_maps(self.physical_to_logical, 8)
            return host, device_maps(self.physical_to_logical, 8)
"""


def test_an_asserted_host_device_keeps_the_tensor_and_what_is_made_on_it_on_the_host() -> None:
    # ``assert x.device.type == "cpu"``: below it ``x`` is on the host, and so is what is
    # made on ``x.device`` (read through a local); without the assert the same code syncs.
    assert reported({"runner.py": _LOGICAL_MAPS}) == [("runner.py", 15, "SG101")]
