"""ch06.offload_memory: reference counts against real torchtitan models on meta, shard shapes against torch.chunk."""
from __future__ import annotations

import pytest
import torch

from grading.exercise import Catalogue
from torchtitan.models.qwen3 import model_registry

REF = Catalogue().get("ch06.offload_memory").reference()["checks"]
FLAVORS = {(2048, 28): "1.7B", (1024, 28): "0.6B", (2560, 36): "4B", (4096, 36): "8B", (256, 8): "debugmodel"}


@pytest.mark.parametrize("call", REF["param_count"]["calls"], ids=lambda c: str(c["args"][:2]))
def test_param_counts_match_meta_models(call):
    dim, n_layers, *_, vocab, tied = call["args"]
    config = model_registry(FLAVORS[(dim, n_layers)], attn_backend="flex").model
    assert config.enable_weight_tying == tied
    with torch.device("meta"):
        model = config.build()
    total = sum(p.numel() for p in model.parameters())  # a tied head is one parameter
    embedding = model.tok_embeddings.weight.numel() * (1 if tied else 2)
    assert call["expect"] == [total, total - embedding]


def test_course_numbers():
    first = REF["param_count"]["calls"][0]
    assert first["expect"] == [1_720_574_976, 1_409_410_048]
    per = REF["per_rank"]["calls"][0]
    assert per["expect"] == {"device": 16 * 1_720_574_976 // 2, "host": 0}


@pytest.mark.parametrize("call", REF["shard_shapes"]["calls"], ids=lambda c: str(c["args"]))
def test_shard_shapes_follow_torch_chunk(call):
    shape, shard, rank = call["args"]
    chunks = torch.empty(shape, device="meta").chunk(shard, dim=0)
    expect = list(chunks[rank].shape) if rank < len(chunks) else [0, *shape[1:]]
    assert call["expect"] == expect
