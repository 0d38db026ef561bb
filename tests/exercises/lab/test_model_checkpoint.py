"""The shipped checkpoint, HF <-> torchtitan names, and `get_per_tensor_param` on plain and FSDP2 models."""

from __future__ import annotations

import json

import pytest
import torch

from exercises.lab import checkpoint, weight_sync
from exercises.lab.model import ModelDims, build_titan_model, dims_from_hf_config, hf_config_dict

SHIPPED = checkpoint.SHIPPED_CHECKPOINT


@pytest.fixture(scope="module")
def dims() -> ModelDims:
    return checkpoint.dims_of_checkpoint(SHIPPED)


@pytest.fixture(scope="module")
def loaded(dims):
    model = build_titan_model(dims, seed=123)
    checkpoint.load_hf_into_model(model, SHIPPED, checkpoint.state_dict_adapter(dims))
    return model


def test_shipped_checkpoint_is_small_hf_format():
    names = {p.name for p in SHIPPED.iterdir()}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= names
    assert sum(p.stat().st_size for p in SHIPPED.iterdir()) < 5_000_000
    config = json.loads((SHIPPED / "config.json").read_text())
    assert config["model_type"] == "qwen3" and config["tie_word_embeddings"] is True
    assert "chat_template" in json.loads((SHIPPED / "tokenizer_config.json").read_text())


def test_hf_config_round_trips(dims):
    assert dims_from_hf_config(hf_config_dict(dims)) == dims
    with pytest.raises(ValueError, match="qwen3"):
        dims_from_hf_config({**hf_config_dict(dims), "model_type": "llama"})


def test_from_hf_then_to_hf_gives_back_the_file(dims, loaded):
    on_disk = checkpoint.load_hf_state_dict(SHIPPED)
    back = checkpoint.state_dict_adapter(dims).to_hf(dict(loaded.state_dict()))
    assert set(back) == set(on_disk), "to_hf drops the tied lm_head, as the file does"
    for name, tensor in on_disk.items():
        assert torch.equal(back[name], tensor), name
    assert loaded.lm_head.weight is loaded.tok_embeddings.weight


def test_loading_replaces_the_random_init(dims, loaded):
    fresh = build_titan_model(dims, seed=123)
    assert not torch.equal(fresh.layers["0"].attention.wo.weight, loaded.layers["0"].attention.wo.weight)


def test_get_per_tensor_param_names_shapes_dtype_and_tied_head(dims, loaded):
    named = dict(weight_sync.get_per_tensor_param(loaded, checkpoint.state_dict_adapter(dims)))
    on_disk = checkpoint.load_hf_state_dict(SHIPPED)
    assert set(named) == set(on_disk) | {"lm_head.weight"}
    assert len(named) == 11 * dims.n_layers + 3  # 11 per layer + embed + norm + lm_head (1.7B: 311)
    for name, tensor in named.items():
        assert tensor.dtype == torch.bfloat16, name
        expected = on_disk["model.embed_tokens.weight" if name == "lm_head.weight" else name]
        assert tensor.shape == expected.shape, name
        assert torch.equal(tensor, expected.to(torch.bfloat16)), name
    assert named["model.layers.0.self_attn.k_proj.weight"].shape == (dims.n_kv_heads * dims.head_dim, dims.dim)


def test_get_per_tensor_param_materializes_fsdp2_shards(dims, tmp_path):
    """Single-rank gloo FSDP2: parameters are DTensors and full_tensor() yields the checkpoint's values."""
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor

    from exercises.lab import parallel

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    try:
        plan = parallel.ParallelPlan(data_parallel_shard_size=1, context_parallel_size=1, world_size=1,
                                     device_type="cpu", param_offload=True)
        pdims = parallel.build_parallel_dims(plan)
        model = parallel.build_sharded_model(dims, plan, pdims, seed=0)
        adapter = checkpoint.state_dict_adapter(dims)
        checkpoint.load_hf_into_model(model, SHIPPED, adapter)
        assert parallel.params_are_dtensors(model)
        assert all(isinstance(p, DTensor) for p in model.parameters())
        named = dict(weight_sync.get_per_tensor_param(model, adapter))
        on_disk = checkpoint.load_hf_state_dict(SHIPPED)
        for name, tensor in on_disk.items():
            assert not isinstance(named[name], DTensor)
            assert torch.equal(named[name], tensor.to(torch.bfloat16)), name
        assert torch.equal(named["lm_head.weight"], named["model.embed_tokens.weight"])
    finally:
        dist.destroy_process_group()


def test_missing_checkpoint_names_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="make_tiny_checkpoint"):
        checkpoint.dims_of_checkpoint(tmp_path)
