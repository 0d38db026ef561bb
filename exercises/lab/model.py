"""Tiny torchtitan Qwen3 for the lab: the same `Qwen3Model.Config` the course's 1.7B uses, scaled down.

The dimensions travel as an HF `config.json` (Qwen3 keys) next to the shipped checkpoint, so the
actor, the reference and the rollout engine are all built from one description.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import torch

# torchtitan's qwen3 package imports triton (installed in the training extra).
from torchtitan.models.common import CosSinRoPE, Embedding, Linear
from torchtitan.models.common.attention import ScaledDotProductAttention
from torchtitan.models.qwen3 import _EMBEDDING_SKIP_INIT, _LINEAR_INIT, Qwen3Model
from torchtitan.models.qwen3 import _build_qwen3_layers as build_qwen3_layers
from torchtitan.models.qwen3 import _qwen3_norm as qwen3_norm


@dataclass(kw_only=True, slots=True)
class ModelDims:
    """Qwen3 shape knobs; the 1.7B model is dim 2048, 28 layers, 16/8 heads, head_dim 128."""

    vocab_size: int = 128
    """Rows of the (tied) embedding; must cover the tokenizer's vocabulary."""
    dim: int = 128
    """Hidden size (HF `hidden_size`)."""
    n_layers: int = 4
    """Decoder blocks (HF `num_hidden_layers`)."""
    n_heads: int = 4
    """Query heads (HF `num_attention_heads`)."""
    n_kv_heads: int = 2
    """Key/value heads, GQA (HF `num_key_value_heads`)."""
    head_dim: int = 32
    """Per-head width (HF `head_dim`)."""
    hidden_dim: int = 256
    """SwiGLU width (HF `intermediate_size`)."""
    max_seq_len: int = 512
    """RoPE cache length (HF `max_position_embeddings`; the course raises 4096 to 5120)."""
    rope_theta: float = 1_000_000.0
    """RoPE base, as Qwen3."""

    def validate(self) -> None:
        """Refuse shapes torchtitan would reject later with a less helpful message."""
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads ({self.n_heads}) must be a multiple of n_kv_heads ({self.n_kv_heads}) "
                "for grouped-query attention; pick divisible head counts."
            )
        for name in ("vocab_size", "dim", "n_layers", "n_heads", "head_dim", "hidden_dim", "max_seq_len"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}.")


def titan_config(dims: ModelDims) -> Qwen3Model.Config:
    """Build a torchtitan `Qwen3Model.Config` with tied weights and SDPA inner attention.

    Flex and varlen attention cannot train on CPU (PLATFORM.md section 2), so every layer's
    inner attention is swapped for causal `ScaledDotProductAttention`; batches are right-padded,
    which causal attention handles without a mask. On NPU the course uses varlen (TND) instead.
    """
    dims.validate()
    layers = build_qwen3_layers(
        fuse_qkv=False,
        n_layers=dims.n_layers,
        dim=dims.dim,
        n_heads=dims.n_heads,
        n_kv_heads=dims.n_kv_heads,
        head_dim=dims.head_dim,
        hidden_dim=dims.hidden_dim,
        attn_backend="flex",  # only flex/varlen are selectable by name; replaced just below
        rope=CosSinRoPE.Config(dim=dims.head_dim, max_seq_len=dims.max_seq_len, theta=dims.rope_theta),
    )
    for layer in layers:
        layer.attention.inner_attention = ScaledDotProductAttention.Config()
    return Qwen3Model.Config(
        vocab_size=dims.vocab_size,
        dim=dims.dim,
        norm=qwen3_norm(dims.dim),
        enable_weight_tying=True,
        tok_embeddings=Embedding.Config(
            num_embeddings=dims.vocab_size, embedding_dim=dims.dim, param_init=_EMBEDDING_SKIP_INIT
        ),
        lm_head=Linear.Config(in_features=dims.dim, out_features=dims.vocab_size, param_init=_LINEAR_INIT),
        layers=layers,
    )


def build_titan_model(dims: ModelDims, *, device: str | torch.device = "cpu", seed: int | None = None) -> Qwen3Model:
    """Build on meta, materialize on `device` and initialise (torchtitan's meta-init pattern)."""
    config = titan_config(dims)
    with torch.device("meta"):
        model = config.build()
    model.to_empty(device=device)
    if seed is not None:
        torch.manual_seed(seed)
    with torch.no_grad():
        model.init_states(buffer_device=torch.device(device))
    return model


def hf_config_dict(dims: ModelDims, *, torch_dtype: str = "float32", **token_ids: int) -> dict:
    """The HF `config.json` of a Qwen3ForCausalLM with these dimensions."""
    return {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "vocab_size": dims.vocab_size,
        "hidden_size": dims.dim,
        "num_hidden_layers": dims.n_layers,
        "num_attention_heads": dims.n_heads,
        "num_key_value_heads": dims.n_kv_heads,
        "head_dim": dims.head_dim,
        "intermediate_size": dims.hidden_dim,
        "max_position_embeddings": dims.max_seq_len,
        "rope_theta": dims.rope_theta,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "tie_word_embeddings": True,
        "attention_bias": False,
        "torch_dtype": torch_dtype,
        **token_ids,
    }


def dims_from_hf_config(config: dict) -> ModelDims:
    """Inverse of `hf_config_dict`, refusing configs that are not dense, tied Qwen3."""
    if config.get("model_type") != "qwen3":
        raise ValueError(f"expected a qwen3 config.json, got model_type={config.get('model_type')!r}.")
    if not config.get("tie_word_embeddings", False):
        raise ValueError("the lab model ties lm_head to embed_tokens; set tie_word_embeddings true.")
    return ModelDims(
        vocab_size=config["vocab_size"],
        dim=config["hidden_size"],
        n_layers=config["num_hidden_layers"],
        n_heads=config["num_attention_heads"],
        n_kv_heads=config["num_key_value_heads"],
        head_dim=config["head_dim"],
        hidden_dim=config["intermediate_size"],
        max_seq_len=config["max_position_embeddings"],
        rope_theta=float(config["rope_theta"]),
    )


def dims_dict(dims: ModelDims) -> dict:
    """Plain dict of the dimensions (for run.json)."""
    return {f.name: getattr(dims, f.name) for f in fields(dims)}
