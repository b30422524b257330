"""False-alarm classes found by triaging findings on a released inference engine.

Each test is a small engine-style snippet of one class: the false alarm must not be
reported, and the real sync next to it (or the same code on device data) must be.
"""

from __future__ import annotations

from syncguard.config import Settings
from syncguard.testing import lint_snippet, lint_tree

# Engine-shaped snippets: their attention-metadata builders run every step (what the
# vllm preset says of vLLM's).
BUILDERS = Settings(hot_functions=("*MetadataBuilder.build",))


def reported(source: str) -> list[tuple[str, int]]:
    """(code, line) of every finding of ``source`` linted as one module."""
    result = lint_snippet(source, settings=BUILDERS)
    assert not result.problems
    return [(finding.code, finding.span.line) for finding in result.findings]


# --------------------------------------------------------- settings objects


def test_config_parameters_are_host_objects() -> None:
    # A helper that syncs on device data it is given: passing it a config is no sync.
    source = """
        import torch
        from torch import nn

        def read_padding(config, lens):
            return int(config.max_pad.item()), lens.max().item()

        class Runner(nn.Module):
            def forward(self, x, lens):
                read_padding(self.vllm_config, lens)
                return read_padding(self.parallel_config, [1, 2])
    """
    assert reported(source) == [("SG101", 9)]


def test_values_read_from_a_config_are_host_data() -> None:
    source = """
        import torch
        from torch import nn

        import torch.nn.functional as F

        class Block(nn.Module):
            def __init__(self, model_config):
                super().__init__()
                self.window = model_config.window // 2

            def forward(self, x, grid: list[int]):
                index = F.pad(torch.arange(grid[0]), (0, self.window), value=-1)
                return x, index[index != -1].tolist()
    """
    assert reported(source) == []


def test_a_module_built_from_a_config_is_not_host_data() -> None:
    # Block(config) and nn.Embedding(cfg.n, cfg.d) hold weights that move with the model.
    source = """
        import torch
        from torch import nn

        class Embed(nn.Module):
            def __init__(self, cfg):
                super().__init__()
                self.table = nn.Embedding(cfg.num_positions, cfg.dim)
                self.block = Block(cfg)

            def forward(self, x):
                weight = self.table.weight.view(-1).to(x.device)
                return weight.sum().item() + self.block.scale.item()
    """
    assert reported(source) == [("SG101", 12), ("SG101", 12)]


# ---------------------------------------------------------------- devices


def test_a_device_parameter_names_the_accelerator() -> None:
    # Callers pass x.device (a host value naming the device): the tensor is on the device.
    source = """
        import torch
        from torch import nn

        def cu_seqlens(lens: list[int], device):
            return torch.tensor(lens, device=device)

        class Encoder(nn.Module):
            def forward(self, x, lens: list[int]):
                return x, cu_seqlens(lens, x.device)
    """
    assert reported(source) == [("SG301", 5)]


def test_a_device_keyword_places_a_helper_result() -> None:
    source = """
        import torch
        from torch import nn
        from engine.utils import async_h2d

        class Encoder(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.window = config.window

            def forward(self, x, lens):
                chunks = async_h2d([self.window] * 4, dtype=torch.long, device=lens.device)
                return x.split(chunks.tolist())
    """
    assert reported(source) == [("SG102", 12)]


def test_a_device_keyword_does_not_make_a_predicate_a_tensor() -> None:
    source = """
        import torch
        from torch import nn
        from engine.kernels import can_use_fused_rope

        class Rope(nn.Module):
            def forward(self, q, pipeline_config, batch):
                if not can_use_fused_rope(device=q.device, dtype=q.dtype):
                    q = q * 2
                embeds = pipeline_config.prompt_embeds(batch).to(q.device)
                return q, embeds
    """
    assert reported(source) == []


def test_an_object_built_with_a_device_may_hold_host_arrays() -> None:
    source = """
        import numpy as np
        from torch import nn

        class Runner(nn.Module):
            def __init__(self, device):
                super().__init__()
                self.states = RequestStates(64, device=device)

            def forward(self, x, index_np):
                done_np = self.states.done_np[index_np] < self.states.len_np[index_np]
                return bool(done_np.any())
    """
    assert reported(source) == []


def test_out_keyword_gives_the_result_its_buffer() -> None:
    source = """
        import torch
        from torch import nn

        class Encoder(nn.Module):
            def forward(self, x, parts_cpu: list[torch.Tensor]):
                stage = torch.empty(64, dtype=torch.long, pin_memory=True)
                ids = torch.cat(parts_cpu, out=stage).to(x.device, non_blocking=True)
                paged = torch.cat(parts_cpu).to(x.device, non_blocking=True)
                return ids, paged
    """
    assert reported(source) == [("SG303", 8)]


def test_a_helper_returning_device_data_gives_device_data() -> None:
    # The all-reduced tensor is on the device: its reads in the helpers are syncs,
    # reported where the hot caller passes it, not blamed on the config.
    source = """
        import torch
        import torch.distributed as dist

        def all_reduce_counts(counts: list[int], parallel_config):
            device = get_group(parallel_config).device
            tensor = torch.tensor(counts, pin_memory=True).to(device, non_blocking=True)
            dist.all_reduce(tensor)
            return tensor

        def padded_count(tensor):
            return int(tensor.max().item())

        def coordinate(counts: list[int], parallel_config):  # syncguard: hot
            tensor = all_reduce_counts(counts, parallel_config)
            return padded_count(tensor)
    """
    result = lint_snippet(source)
    assert [(f.code, f.span.line) for f in result.findings] == [("SG101", 15)]
    assert "device data for `tensor`" in result.findings[0].message


def test_lint_tree_sees_configs_across_modules() -> None:
    result = lint_tree(
        {
            "engine/context.py": """
                def set_context(vllm_config, num_tokens, counts=None):
                    if counts is None:
                        counts = vllm_config.parallel_config.counts.tolist()
                    return counts
            """,
            "engine/runner.py": """
                from torch import nn
                from engine.context import set_context

                class Runner(nn.Module):
                    def forward(self, x):
                        return set_context(self.vllm_config, x.shape[0])
            """,
        }
    )
    assert not result.problems
    assert result.findings == []


def test_a_comparison_of_host_settings_is_a_python_bool() -> None:
    source = """
        import torch
        from torch import nn

        class Sampler(nn.Module):
            def forward(self, logits, mode_override=None):
                mode = mode_override or self.mode
                if mode == "raw_logits":
                    return logits
                if (logits > 0).any():
                    return -logits
                return logits
    """
    assert reported(source) == [("SG105", 9)]


# ---------------------------------------------------------- once, not per step


def test_an_error_message_is_built_only_when_the_check_fails() -> None:
    # The raise and the assert's message format tensors only on the error path; the
    # conditions that guard them run every step.
    source = """
        import torch
        from torch import nn

        class Merger(nn.Module):
            def forward(self, x, sizes):
                if (sizes % 2 != 0).any():
                    raise ValueError(f"sizes must be even, got {sizes.tolist()}")
                assert x.shape[0] == 4, f"bad sizes {sizes} for {x.sum().item()}"
                return x
    """
    assert reported(source) == [("SG105", 6)]


def test_early_return_when_cached_makes_the_rest_run_once() -> None:
    source = """
        import torch
        from torch import nn

        class Experts(nn.Module):
            def _first_launch(self, x):
                key = (x.device.index, self.group)
                if key in self._launched:
                    return
                torch.cuda.synchronize()
                self._launched.add(key)

            def _every_launch(self, x):
                if x.device.index in self._seen:
                    return
                torch.cuda.synchronize()

            def forward(self, x):
                self._first_launch(x)
                self._every_launch(x)
                return x
    """
    assert reported(source) == [("SG401", 15)]


def test_lazy_initialisation_on_another_object_runs_once() -> None:
    source = """
        import torch

        class Impl:
            def forward(self, layer, x, scale):  # syncguard: hot
                if layer._scale_float is None:
                    layer._scale_float = scale.cpu().item()
                return x * layer._scale_float, scale.item()
    """
    assert reported(source) == [("SG101", 7)]


def test_a_fallback_filling_per_step_metadata_runs_every_step() -> None:
    # The metadata object is new every step: filling its field is per-step work.
    source = """
        import torch

        class Impl:
            def forward(self, layer: torch.nn.Module, x, attn_metadata):  # syncguard: hot
                if attn_metadata.plan is None:
                    attn_metadata.plan = attn_metadata.seq_lens.cpu().numpy()
                if not hasattr(layer, "_cached"):
                    layer._cached = x.sum().item()
                return x
    """
    assert reported(source) == [("SG103", 6)]


def test_growing_or_registering_a_cache_runs_once() -> None:
    source = """
        import numpy as np
        import torch
        from torch import nn

        class Resampler(nn.Module):
            def _adjust_cache(self, max_h: int, device):
                if max_h > self.max_size[0]:
                    self.max_size = (max_h, self.max_size[1])
                    table = torch.from_numpy(np.zeros(max_h)).to(device)
                    self.register_buffer("table", table, persistent=False)

            def _freqs(self, device):
                if not hasattr(self, "freqs"):
                    self.register_buffer("freqs", torch.arange(64).float().to(device))
                return self.freqs

            def forward(self, x, max_h: int):
                self._adjust_cache(max_h, x.device)
                if max_h == 0:
                    self.max_size = (1, 1)
                    return torch.arange(8).to(x.device)
                return x + self._freqs(x.device)
    """
    assert reported(source) == [("SG302", 21)]


def test_a_default_argument_filled_in_is_not_lazy_initialisation() -> None:
    source = """
        import torch
        from torch import nn

        class Block(nn.Module):
            def forward(self, x, lens=None):
                if lens is None:
                    lens = x.sum(-1).tolist()
                return x, lens
    """
    assert reported(source) == [("SG102", 7)]


def test_training_only_branches_do_not_run_in_inference() -> None:
    source = """
        import torch
        from torch import nn

        class Codebook(nn.Module):
            def forward(self, x):
                if self.training:
                    self.expire(x.sum().item())
                if not self.training:
                    out = x
                else:
                    out = x[x > 0]
                return out, x.max().item()
    """
    assert reported(source) == [("SG101", 12)]


# --------------------------------------------------- CPU-side input processing


def test_a_module_only_a_feature_extractor_builds_runs_on_the_cpu() -> None:
    # An HF feature extractor prepares requests on the CPU; the filterbank module it builds
    # (lazily) runs there too. The same kind of module built by a model stays hot.
    source = """
        import torch
        from torch import nn
        from transformers.feature_extraction_sequence_utils import SequenceFeatureExtractor

        class Filterbank(nn.Module):
            def __init__(self, n_mels=80):
                super().__init__()
                self.n_mels = n_mels

            def forward(self, audio):
                lens = torch.tensor([audio.shape[1]], device=audio.device)
                return audio, lens.max().item()

        class Prenet(nn.Module):
            def forward(self, audio):
                return torch.tensor([audio.shape[1]], device=audio.device)

        class AudioFeatureExtractor(SequenceFeatureExtractor):
            def filterbank(self):
                if self._filterbank is None:
                    self._filterbank = Filterbank()
                return self._filterbank

            def __call__(self, audio):
                return self.filterbank()(torch.from_numpy(audio))

        class AudioModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.prenet = Prenet()
    """
    assert reported(source) == [("SG301", 16)]
    # The processor bases are the transformers preset's `host-classes`: without it, the
    # filterbank is a module like any other.
    without = lint_snippet(source, settings=Settings(presets=()))
    assert sorted(f.span.line for f in without.findings) == [11, 12, 16]


# ----------------------------------------------------------------- device guards


def test_code_under_a_host_device_guard_runs_on_host_data() -> None:
    source = """
        import torch
        from torch import nn

        class Indexer(nn.Module):
            def forward(self, raw, expected_cpu, lens):
                if not raw.positions.is_cuda and not torch.equal(raw.positions, expected_cpu):
                    raise RuntimeError("positions disagree")
                if lens.device.type == "cpu":
                    n = lens.max().item()
                else:
                    n = lens.shape[0]
                total = lens.sum().item() if lens.is_cpu else lens.numel()
                return n, total, torch.equal(raw.positions, lens)
    """
    assert reported(source) == [("SG107", 13)]


def test_an_early_return_on_the_device_path_leaves_host_data_below() -> None:
    source = """
        import torch
        from torch import nn

        class Pooler(nn.Module):
            def forward(self, lens, x):
                if lens.is_cuda:
                    return x, lens.max().item()
                return x, lens.max().item()
    """
    assert reported(source) == [("SG101", 7)]


def test_a_guard_no_longer_holds_once_the_tensor_is_replaced() -> None:
    source = """
        import torch
        from torch import nn

        class Pooler(nn.Module):
            def forward(self, lens, x):
                if not lens.is_cuda:
                    lens = lens.to(x.device)
                    return lens.max().item()
                return x
    """
    # The copy of the host tensor blocks; after it, the data is on the device.
    assert reported(source) == [("SG302", 7), ("SG101", 8)]


def test_a_guard_for_another_accelerator_proves_nothing() -> None:
    source = """
        import torch
        from torch import nn

        class Pooler(nn.Module):
            def forward(self, lens, x):
                if lens.device.type != "cuda":
                    return lens.max().item()
                return x
    """
    assert reported(source) == [("SG101", 7)]


# ------------------------------------------------------------------- sequences


def test_a_list_holds_the_data_appended_to_it() -> None:
    source = """
        import torch
        from torch import nn

        class Projector(nn.Module):
            def forward(self, features, sizes: list[int]):
                outputs = []
                for size in sizes:
                    outputs.append(torch.cat([features[:size], self.separator]))
                offsets = []
                offsets.extend(range(len(sizes)))
                moved = [out.to(features.device) for out in outputs]
                return moved, torch.tensor(offsets).to(features.device)
    """
    assert reported(source) == [("SG302", 12)]


def test_a_list_of_numbers_from_metadata_is_still_host_data() -> None:
    source = """
        import torch
        from torch import nn

        class Pointer(nn.Module):
            def forward(self, hidden_states, questions):
                decide = []
                for question in questions:
                    decide.append(question.span[1] - 1)
                return hidden_states[torch.tensor(decide, device=hidden_states.device)]
    """
    assert reported(source) == [("SG301", 9)]


def test_code_of_a_cpu_backend_works_on_host_data() -> None:
    result = lint_tree(
        {
            "eng/backends/cpu_attn.py": """
                from torch import nn

                class Builder:
                    def build(self, seq_lens):  # syncguard: hot
                        return seq_lens.sum().item()
            """,
            "eng/backends/gpu_attn.py": """
                class CPUAttentionBuilder:
                    def build(self, seq_lens):  # syncguard: hot
                        return seq_lens.sum().item()

                class CpuGpuBuffer:
                    def copy_back(self, x):  # syncguard: hot
                        return x.sum().item()
            """,
        }
    )
    assert not result.problems
    assert [(f.path, f.span.line) for f in result.findings] == [("eng/backends/gpu_attn.py", 7)]


def test_a_registered_buffer_moves_with_the_module() -> None:
    source = """
        import torch
        from torch import nn

        class Head(nn.Module):
            def __init__(self, idxs: list[int]):
                super().__init__()
                summary_idxs = torch.tensor(idxs)
                self.register_buffer("summary_idxs", summary_idxs)
                self.summary_idxs = summary_idxs
                self.plain_idxs = torch.tensor(idxs)

            def forward(self, y: torch.Tensor):
                return y[:, self.summary_idxs], y[:, self.plain_idxs]
    """
    assert reported(source) == [("SG305", 13)]


def test_python_numbers_and_tensors_made_beside_host_tensors_are_host_data() -> None:
    source = """
        import torch
        from torch import nn

        class Vision(nn.Module):
            def forward(self, x, grid: list[list[int]], pad: int):
                parts = [torch.tensor([0], dtype=torch.int32)]
                for t, h, w in grid:
                    parts.append(self.window_lens(int(t), int(h), int(w)))
                lens = torch.cat(parts)
                if pad:
                    lens = torch.cat((lens, torch.full((pad,), 0, device=lens.device)))
                return x, lens.cpu().numpy()
    """
    assert reported(source) == []


def test_a_nested_helper_returning_device_data_gives_device_data() -> None:
    source = """
        import torch

        def plan_pages(table: torch.Tensor, counts: list[int]):  # syncguard: hot
            def upload(values):
                pinned = torch.tensor(values, dtype=torch.int32).pin_memory()
                return pinned.to(table.device, non_blocking=True)

            def host_index(values):
                return torch.tensor(values)

            return table[upload(counts).long()], table[host_index(counts).long()]
    """
    # The per-step pinning is reported (SG306); only the host index is a host index.
    assert reported(source) == [("SG306", 6), ("SG305", 11)]


# ------------------------------------------------------- callers of submodules


def test_a_submodule_sees_the_host_data_its_callers_pass() -> None:
    source = """
        import torch
        from torch import nn

        class Encoder(nn.Module):
            def forward(self, x, lens: torch.Tensor, grid: torch.Tensor):
                n = int(lens.max().item())
                return x[:, :n], grid.tolist()

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = Encoder()

            def _encode(self, x, lens):
                return self.encoder(x, lens, grid=x.new_ones(3))

            def forward(self, x, sizes: list[int]):
                lens = torch.tensor(sizes) * 2
                return self._encode(x, lens)
    """
    # lens is host data at every call; grid comes from device data at one.
    assert reported(source) == [("SG102", 7)]


def test_a_root_called_only_by_itself_proves_nothing() -> None:
    source = """
        import torch
        from torch import nn

        class Attention(nn.Module):
            def forward(self, x, metadata, depth: int = 0):
                if depth:
                    return self.forward(x, metadata, depth - 1)
                return x, metadata.seq_lens.cpu()
    """
    assert reported(source) == [("SG103", 8)]


def test_a_submodule_reports_its_syncs_once() -> None:
    source = """
        import torch
        from torch import nn

        class Subsampling(nn.Module):
            def forward(self, x, mask):
                return x[mask]

        class Conformer(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = Subsampling()

            def _embed(self, x, mask):
                return self.embed(x, mask)

            def forward(self, x, mask):
                return self._embed(x, mask > 0)
    """
    assert reported(source) == [("SG202", 6)]


def test_fields_a_class_declares_as_host_data() -> None:
    # The batch class says which fields are host data (numpy, a CPU comment); a helper
    # given the batch reads those without a sync, but its device field still syncs.
    source = """
        from dataclasses import dataclass

        import numpy as np
        import torch
        from torch import nn

        @dataclass
        class Batch:
            num_scheduled_tokens: np.ndarray
            prompt_lens: torch.Tensor  # CPU tensor
            seq_lens: torch.Tensor

        def longest(batch: Batch) -> int:
            query = int(batch.num_scheduled_tokens.max())
            prompt = batch.prompt_lens.tolist()
            return query + max(prompt) + int(batch.seq_lens.max())

        def prompts(batch: "Optional[Batch]", staged: Batch | None):
            staged = staged.to_device()  # no longer the declared Batch
            return batch.prompt_lens.tolist(), staged.prompt_lens.tolist()

        class Runner(nn.Module):
            def forward(self, batch):
                return longest(batch), prompts(batch, batch)
    """
    found = lint_snippet(source).findings
    assert [(f.code, f.span.line) for f in found] == [("SG104", 24), ("SG102", 24)]
    assert "sites" not in found[0].message  # only the int() of the device field
    assert "`staged`" in found[1].message  # not the declared-host prompt_lens of `batch`


def test_a_record_of_host_values_built_here_is_host_data() -> None:
    # The layout holds sizes, a flag and a dtype (all declared host): the planner's int()
    # of its fields reads no device value, even where a size comes from a helper given the
    # cache. A record with a tensor field stays device data.
    source = """
        from typing import NamedTuple

        import torch
        from torch import nn

        class Layout(NamedTuple):
            groups: int
            block_size: int
            dtype: torch.dtype
            quantized: bool
            page_stride: int

        class Stats(NamedTuple):
            groups: int
            lengths: torch.Tensor

        def page_stride(kv_cache):
            return kv_cache.stride(1)

        def plan(layout, lengths):
            return int(((lengths + layout.block_size - 1) // layout.block_size).sum())

        class Attention(nn.Module):
            def forward(self, query, kv_cache, seq_lens):
                lengths = seq_lens.cpu().numpy()
                layout = Layout(
                    kv_cache.shape[1], kv_cache.shape[2], query.dtype, False, page_stride(kv_cache)
                )
                stats = Stats(kv_cache.shape[1], query.sum(-1))
                return plan(layout, lengths), plan(stats, lengths)
    """
    assert reported(source) == [("SG103", 25), ("SG104", 30)]


def test_fields_a_class_of_another_module_declares_as_host_data() -> None:
    # The pooler reads a field the metadata module documents as a CPU tensor, and one it
    # does not; a helper given the CPU field directly does not sync either.
    result = lint_tree(
        {
            "engine/__init__.py": "",
            "engine/metadata.py": """
                from dataclasses import dataclass

                import torch

                @dataclass
                class PoolingMetadata:
                    prompt_lens: torch.Tensor  # CPU tensor
                    prompt_token_ids: torch.Tensor
            """,
            "engine/pooler.py": """
                from torch import nn

                from engine.metadata import PoolingMetadata

                def split_sizes(lens):
                    return lens.tolist()

                class Pooler(nn.Module):
                    def forward(self, hidden, metadata: PoolingMetadata):
                        lens = metadata.prompt_lens
                        sizes = lens.tolist()
                        more = split_sizes(metadata.prompt_lens)
                        return hidden.split(sizes), metadata.prompt_token_ids.tolist(), more
            """,
        }
    )
    assert not result.problems
    assert [(f.path, f.code, f.span.line) for f in result.findings] == [
        ("engine/pooler.py", "SG102", 13)
    ]


def test_host_arrays_stay_host_data_under_other_names() -> None:
    source = """
        import numpy as np
        from torch import nn

        class Runner(nn.Module):
            def forward(self, x, lens_np: np.ndarray):
                computed = self.batch.num_computed_cpu[: len(lens_np)]
                for table in self.batch.tables:
                    stop = (computed + lens_np + table.block_size - 1) // table.block_size
                    span = int((stop - computed).max())
                    x = x[:, :span]
                return x
    """
    assert reported(source) == []


def test_a_cache_looked_up_into_a_local_is_filled_once() -> None:
    source = """
        import torch

        _TABLES = {}

        def lookup_tables(logits: torch.Tensor):  # syncguard: hot
            tables = _TABLES.get(logits.device)
            if tables is None:
                tables = logits.new_tensor([0.5, 1.0])
                _TABLES[logits.device] = tables
            sizes = {}
            size = sizes.get(logits.shape[0])
            if size is None:
                size = logits.new_tensor([logits.shape[0]])
            return tables, size
    """
    assert reported(source) == [("SG301", 13)]


def test_host_parts_of_a_device_helper_result_keep_their_names() -> None:
    source = """
        import torch
        from engine.layout import tail_layout

        def tail_metadata(batch, device):  # syncguard: hot
            indices, tail_lens_cpu, start = tail_layout(batch, device=device)
            return indices, torch.tensor(tail_lens_cpu, dtype=torch.int32, device=device)
    """
    assert reported(source) == [("SG301", 6)]


def test_bindings_of_a_branch_that_returns_do_not_reach_the_code_after_it() -> None:
    source = """
        import torch

        def plan(qo_offset: torch.Tensor, prefill: bool, device):
            if prefill:
                qo_offset = qo_offset.to(device)
                return qo_offset
            return qo_offset.tolist()

        def build(lens_cpu: torch.Tensor, device):  # syncguard: hot
            return plan(lens_cpu - 1, False, device)
    """
    assert reported(source) == []


# ---------------------------------------------------------- path conditions


def test_a_none_fallback_is_not_reported_where_the_caller_passes_the_argument() -> None:
    # causal_conv1d_fn(..., metadata=None): without metadata it reads lengths back itself.
    source = """
        import torch
        from torch import nn

        def conv(x, query_start_loc, metadata=None):
            if metadata is not None:
                seqlens = metadata.seqlens
            else:
                seqlens = query_start_loc.diff().to("cpu")
            return x, seqlens

        class Layer(nn.Module):
            def forward(self, x, query_start_loc, attn_metadata):
                if attn_metadata is None:
                    return x
                m = attn_metadata
                conv(x, query_start_loc, metadata=m)
                return conv(x, query_start_loc)
    """
    assert reported(source) == [("SG103", 17)]


def test_an_argument_that_may_be_none_keeps_the_fallback() -> None:
    source = """
        import torch
        from torch import nn

        def conv(x, query_start_loc, metadata=None):
            if metadata is None:
                return x, query_start_loc.tolist()
            return x, metadata.seqlens

        class Layer(nn.Module):
            def forward(self, x, query_start_loc, plans, use_plan: bool):
                plan = None
                if use_plan:
                    plan = plans[0]
                conv(x, query_start_loc, metadata=plan)
                conv(x, query_start_loc, metadata=plans.get("conv"))
                return conv(x, query_start_loc, metadata=self.plan)
    """
    assert reported(source) == [("SG102", 14), ("SG102", 15), ("SG102", 16)]


def test_a_none_check_that_returns_early_proves_the_value_is_set() -> None:
    source = """
        import torch
        from torch import nn

        def conv(x, query_start_loc, metadata=None):
            if metadata is None:
                return x, query_start_loc.tolist()
            return x, metadata.seqlens

        class Layer(nn.Module):
            def forward(self, x, query_start_loc, metadata_by_layer):
                metadata = metadata_by_layer.get("conv")
                if metadata is None:
                    return x
                return conv(x, query_start_loc, metadata=metadata)
    """
    assert reported(source) == []


def test_a_check_flag_that_defaults_to_false_and_is_never_passed() -> None:
    # check_input_valid=False: the validation (with its reads) never runs per step.
    source = """
        import torch
        from torch import nn

        def validate(lens):
            assert int(lens.max().item()) > 0

        def attention(q, lens, check_input_valid: bool = False):
            if check_input_valid:
                validate(lens)
            return q

        def sparse_attention(q, lens, check_input_valid: bool = False):
            return attention(q, lens, check_input_valid=check_input_valid)

        class Layer(nn.Module):
            def forward(self, q, lens):
                attention(q, lens)
                sparse_attention(q, lens)
                return attention(q, lens, check_input_valid=True)
    """
    assert reported(source) == [("SG101", 19)]


def test_a_submodule_forward_fallback_that_its_parent_never_takes() -> None:
    # The encoder makes lengths itself only when none are given; its parent always gives them.
    source = """
        import torch
        from torch import nn

        class Encoder(nn.Module):
            def forward(self, features, feature_lens=None):
                if feature_lens is None:
                    feature_lens = torch.tensor([features.shape[1]], device=features.device)
                return features, feature_lens

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = Encoder()

            def forward(self, features, lens):
                return self.encoder(features, lens + 0)
    """
    assert reported(source) == []


def test_a_none_fallback_after_the_parameter_was_reassigned_a_value() -> None:
    # Reassigned only to tensors, ``feature_lens`` is still None only if it was passed None;
    # once it may be reassigned None, the check says nothing about what the caller passed.
    source = """
        import torch
        from torch import nn

        class Encoder(nn.Module):
            def forward(self, features, feature_lens=None):
                if features.dim() == 3:
                    if feature_lens is None:
                        feature_lens = torch.full((features.size(0),), features.size(-1))
                    else:
                        feature_lens = feature_lens.to(features.device)
                if feature_lens is None:
                    feature_lens = torch.tensor([features.shape[1]], device=features.device)
                return features, feature_lens

        class Tower(nn.Module):
            def forward(self, features, lens=None):
                if features.dim() == 3:
                    lens = lens if features.is_cuda else None
                if lens is None:
                    lens = torch.tensor([features.shape[1]], device=features.device)
                return features, lens

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.encoder = Encoder()
                self.tower = Tower()

            def forward(self, features, batch):
                lens = batch["lens"]
                self.tower(features, lens=lens)
                return self.encoder(features, feature_lens=lens)
    """
    assert reported(source) == [("SG301", 20)]


def test_recursion_through_a_condition_keeps_the_site() -> None:
    # ping reaches its .tolist() both directly (n == 0) and after recursing (n > 0).
    source = """
        import torch

        def ping(x, n):
            if n:
                return ping(x, n - 1)
            return x.tolist()

        @torch.compile
        def root(x):
            return ping(x, 3)
    """
    assert reported(source) == [("SG102", 10)]


def test_a_copy_to_the_device_a_caller_names_cpu() -> None:
    # The helpers copy to the device they are given; the penalties pass "cpu" (or nothing,
    # and .to(None) moves nothing), the sampler passes the logits' device: a real copy.
    source = """
        import numpy as np
        import torch
        from torch import nn

        def padded(rows, device=None):
            return torch.from_numpy(np.array(rows)).to(device)

        def as_tensor(rows, device):
            return torch.tensor(rows, device=device)

        class Penalties(nn.Module):
            def forward(self, logits, rows):
                cpu = padded(rows, device="cpu")
                same = padded(rows)
                return logits, cpu, same, as_tensor(rows, torch.device("cpu"))

        class Sampler(nn.Module):
            def forward(self, logits, rows):
                return as_tensor(rows, logits.device)
    """
    assert reported(source) == [("SG301", 9)]


def test_a_flag_every_constructor_call_leaves_false() -> None:
    # self.adaptive comes from __init__ and the only construction passes False: that branch
    # never runs. self.dynamic is passed True once, Pooler has a subclass that may set its
    # flag its own way, and Gate sets its flag in another method: those branches stay.
    source = """
        import torch
        from torch import nn

        class Resampler(nn.Module):
            def __init__(self, dim, adaptive=False, dynamic=False):
                super().__init__()
                self.adaptive = adaptive
                self.dynamic = dynamic

            def forward(self, x, sizes):
                if self.adaptive:
                    pos = torch.from_numpy(sizes).to(x.device)
                if not self.dynamic:
                    return x
                return x[:, : int(x.sum())]

        class Pooler(nn.Module):
            def __init__(self, strict=False):
                super().__init__()
                self.strict = strict

            def forward(self, x):
                if self.strict:
                    assert x.isfinite().all()
                return x

        class StrictPooler(Pooler):
            pass

        class Gate(nn.Module):
            def __init__(self, checked=False):
                super().__init__()
                self.checked = checked

            def check_inputs(self):
                self.checked = True

            def forward(self, x):
                if self.checked:
                    assert x.isfinite().all()
                return x

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.resampler = Resampler(64, adaptive=False)
                self.video_resampler = Resampler(64, False, True)
                self.pooler = Pooler(strict=False)
                self.gate = Gate(checked=False)  # but check_inputs() may set the flag
    """
    assert reported(source) == [("SG104", 15), ("SG105", 24), ("SG105", 40)]


# ------------------------------------------------- host data by project convention


def test_host_parameters_setting_names_data_the_framework_keeps_on_the_cpu() -> None:
    # vLLM keeps multimodal grids on the CPU (keep_on_cpu=True): nothing in the tower says so.
    source = """
        import torch
        from torch import nn

        def window_index(grid_thw):
            return [int(t) * int(h) for t, h, _ in grid_thw.tolist()]

        class VisionTower(nn.Module):
            def forward(self, pixels, grid_thw, lens):
                sizes = grid_thw.prod(-1).tolist()
                order = window_index(grid_thw)
                return pixels, sizes, order, lens.tolist()
    """
    default = lint_snippet(source)
    assert [(f.code, f.span.line) for f in default.findings] == [
        ("SG102", 9), ("SG102", 10), ("SG102", 11)
    ]  # fmt: skip
    configured = lint_snippet(source, settings=Settings(host_parameters=("*grid_thw",)))
    assert [(f.code, f.span.line) for f in configured.findings] == [("SG102", 11)]
    # FUNCTION_GLOB:PARAM_GLOB names them only where one model keeps them on the CPU.
    for where, expected in (("example.VisionTower.*", [11]), ("example.Other*", [9, 10, 11])):
        scoped = lint_snippet(source, settings=Settings(host_parameters=(f"{where}:grid_thw",)))
        assert [f.span.line for f in scoped.findings] == expected


def test_a_list_of_values_of_unknown_kind_is_not_known_pageable() -> None:
    # cos parts come from a cached rope helper (device buffers): cat + non_blocking is free.
    source = """
        import torch
        from torch import nn

        class Vision(nn.Module):
            def forward(self, grid_thw, device):
                cos = []
                for t, h, w in grid_thw:
                    cos.append(self.rope_by_thw(int(t), int(h), int(w)))
                staged = torch.cat([torch.arange(4), torch.arange(5)])
                return (
                    torch.cat(cos).to(device=device, non_blocking=True),
                    staged.to(device=device, non_blocking=True),
                )
    """
    assert reported(source) == [("SG303", 12)]


def test_a_local_copy_of_a_cached_attribute_returns_early_once_filled() -> None:
    source = """
        import torch

        class ContextMetadataBuilder:
            def _context(self):
                context = self.context
                if context is not None:
                    return context
                context = torch.tensor([1, 2], device="cuda")
                self.context = context
                return context

            def build(self, x):
                return self._context(), x.tolist()
    """
    assert reported(source) == [("SG102", 13)]


def test_a_cache_on_the_step_metadata_is_filled_every_step() -> None:
    # forward_metadata is replaced each step: the first layer builds the cache, every step.
    source = """
        import torch

        class SparseBackend:
            def forward_prefill(self, q, seq_lens):
                cache = self.forward_metadata.prefill_cache
                if cache is None:
                    cache = seq_lens.tolist()
                    self.forward_metadata.prefill_cache = cache
                return q, cache

            def init_forward_metadata(self, batch):  # syncguard: hot
                return self.forward_prefill(batch.q, batch.seq_lens)
    """
    assert reported(source) == [("SG102", 12)]


def test_a_check_flag_passed_on_through_kwargs_that_no_caller_sets() -> None:
    source = """
        import torch
        from torch import nn

        def validate(lens):
            assert int(lens.max().item()) > 0

        def _attention(q, lens, check_input_valid: bool = False):
            if check_input_valid:
                validate(lens)
            return q

        def attention(q, lens, **kwargs):
            return _attention(q, lens, **kwargs)

        def checked_attention(q, lens, flag):
            options = {"check_input_valid": flag}
            return _attention(q, lens, **options)

        class Layer(nn.Module):
            def forward(self, q, lens, flag):
                attention(q, lens, scale=1.0)
                attention(q, lens, check_input_valid=True)
                return checked_attention(q, lens, flag)
    """
    assert reported(source) == [("SG101", 22), ("SG101", 23)]


def test_a_caller_that_never_runs_per_step_does_not_keep_a_branch_alive() -> None:
    # An FFI callback passes *args to the wrapper; only the hot caller runs per step.
    source = """
        import torch
        from torch import nn

        def _attention(q, lens, check_input_valid: bool = False):
            if check_input_valid:
                assert int(lens.max().item()) > 0
            return q

        def attention(q, **kwargs):
            lens = torch.ones(3, device="cuda")
            return _attention(q, lens, **kwargs)

        def _ffi_callback(*args):
            return attention(*args)

        class Layer(nn.Module):
            def forward(self, q):
                return attention(q)
    """
    assert reported(source) == []
    # The same callback, hot itself, may pass anything.
    hot_callback = source.replace("def _ffi_callback", "@torch.compile\n        def _ffi_callback")
    assert reported(hot_callback) == [("SG101", 11)]


def test_a_branch_on_a_numeric_parameter_that_its_default_fails() -> None:
    # kv_block_num=-1 unless a paged caller gives one: the sparse plan runs only then.
    source = """
        import torch

        def plan(lens, kv_block_num: int = -1, page_size: int = 0):
            if kv_block_num > 0:
                return lens.max().item()
            if page_size <= 0:
                return 0
            return lens.sum().item()

        class IndexerMetadataBuilder:
            def build(self, lens):
                plan(lens)
                plan(lens, page_size=16)
                return plan(lens, kv_block_num=8)
    """
    assert reported(source) == [("SG101", 13), ("SG101", 14)]
