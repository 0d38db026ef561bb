"""verl's weight sync, actor side: `get_per_tensor_param` (state dict -> HF names -> full tensors).

Its own module because it is the answer to ch05.per_tensor_param: that exercise's sandbox view hides this
file (exercise.toml `[policy] forbid`), while `checkpoint` stays importable for the exercise's harness.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.distributed.checkpoint.state_dict import get_model_state_dict
from torch.distributed.tensor import DTensor
from torchtitan.models.qwen3 import Qwen3StateDictAdapter


def get_per_tensor_param(
    model: torch.nn.Module,
    adapter: Qwen3StateDictAdapter,
    *,
    dtype: torch.dtype = torch.bfloat16,
    device: str | torch.device = "cpu",
) -> Iterator[tuple[str, torch.Tensor]]:
    """Yield (HF name, full tensor in `dtype`) for every weight, as verl's TorchTitan engine does.

    Collective: every rank must iterate it to the end (each `full_tensor()` is an all-gather).
    """
    sharded = get_model_state_dict(model)  # DTensor shards under FSDP2
    hf_sd = adapter.to_hf(sharded)
    if adapter.model_config.enable_weight_tying and "lm_head.weight" not in hf_sd:
        hf_sd["lm_head.weight"] = hf_sd["model.embed_tokens.weight"]
    for name, value in hf_sd.items():
        value = value.to(device)
        if isinstance(value, DTensor):
            value = value.full_tensor()
        yield name, value.to(dtype)
