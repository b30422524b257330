"""Classes of per-step syncs that vLLM recall samples found missing, written as engine code
would write them: reported where the step reaches them, and not where it does not."""

from __future__ import annotations

from syncguard.testing import lint_tree

_SAMPLERS = {
    "eng/__init__.py": "",
    "eng/sampling.py": """
        import torch

        class Sampler:
            def __call__(self, logits):
                return logits.argmax(dim=-1)

        class StashingSampler:
            def __init__(self, sampler):
                self.sampler = sampler
                self.counts = torch.zeros(8, device="cuda")

            def __call__(self, logits):
                tokens = self.sampler(logits)
                emitted = self.counts.cpu()
                return tokens, emitted
        """,
    "eng/states.py": """
        from eng.sampling import StashingSampler

        class ModelState:
            def custom_samplers(self, sampler):
                return None

        class StashingModelState(ModelState):
            def custom_samplers(self, sampler):
                return StashingSampler(sampler), None

        def make_state() -> ModelState:
            return StashingModelState()
        """,
}
_SYNC = ("eng/sampling.py", 14)  # StashingSampler.__call__'s ``.cpu()``


def _runner(default: str, install: str) -> str:
    """An engine whose step loop calls ``self.sampler``: made ``default`` in ``__init__``,
    then overridden by ``install`` with what the model state's hook returns."""
    return f"""
        import torch
        from torch import nn
        from eng.sampling import Sampler
        from eng.states import make_state

        class Runner:
            def __init__(self, model: nn.Module):
                self.model = model
                {default}
                self.verifier = None

            def load_model(self):
                self.state = make_state()
                custom = self.state.custom_samplers(Sampler())
                if custom:
                    {install}

            def run(self, batches):
                for batch in batches:
                    logits = self.model(batch)
                    self.sampler(logits)
        """


def reported(runner: str) -> set[tuple[str, int]]:
    result = lint_tree({**_SAMPLERS, "eng/runner.py": runner})
    assert result.problems == []
    return {(f.path, f.span.line) for f in result.findings}


def test_a_sampler_unpacked_from_what_a_hook_returns_runs_in_the_step() -> None:
    found = reported(_runner("self.sampler = None", "self.sampler, self.verifier = custom"))
    assert _SYNC in found


def test_an_attribute_made_in_init_and_replaced_later_calls_both_objects() -> None:
    found = reported(_runner("self.sampler = Sampler()", "self.sampler = custom[0]"))
    assert _SYNC in found


def test_a_replacement_the_step_never_calls_is_not_reported() -> None:
    found = reported(_runner("self.sampler = Sampler()", "self.verifier, _ = custom"))
    assert _SYNC not in found


def _handoff(guard: str) -> dict[str, str]:
    """A runner whose step hands state to the next method: the loop stores it, ``sample``
    returns early on ``guard`` and otherwise consumes and clears it."""
    return {
        "eng/__init__.py": "",
        "eng/runner.py": f"""
            import torch
            from torch import nn

            class Runner:
                def __init__(self, model: nn.Module):
                    self.model = model
                    self.pending = None

                def sample(self):
                    {guard}
                        return None
                    hidden = self.pending
                    self.pending = None
                    return self.pick(hidden)

                def pick(self, hidden):
                    counts = torch.zeros(8, device="cuda")
                    return hidden, counts.cpu()

                def run(self, batches):
                    for batch in batches:
                        self.pending = self.model(batch)
                        self.sample()
            """,
    }


def _pick_reported(guard: str) -> bool:
    files = _handoff(guard)
    line = (
        files["eng/runner.py"].splitlines().index("                    return hidden, counts.cpu()")
    )
    result = lint_tree(files)
    assert result.problems == []
    return ("eng/runner.py", line) in {(f.path, f.span.line) for f in result.findings}


def test_code_past_an_early_return_on_missing_state_runs_every_step() -> None:
    assert _pick_reported("if self.pending is None:")


def test_code_past_an_early_return_on_filled_state_still_runs_once() -> None:
    assert not _pick_reported("if self.pending is not None:")
