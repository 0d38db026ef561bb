"""A plain-torch Qwen3 with HF parameter names and a KV cache: the CPU stand-in for vLLM's model.

It shares no code with torchtitan's model on purpose: the rollout engine only ever sees weights by
their HF names (what `get_per_tensor_param` yields), exactly as vLLM does in the course.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from exercises.lab.model import ModelDims

_EPS = 1e-6


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class _Attention(nn.Module):
    def __init__(self, dims: ModelDims):
        super().__init__()
        self.n_heads, self.n_kv, self.hd = dims.n_heads, dims.n_kv_heads, dims.head_dim
        self.q_proj = nn.Linear(dims.dim, dims.n_heads * dims.head_dim, bias=False)
        self.k_proj = nn.Linear(dims.dim, dims.n_kv_heads * dims.head_dim, bias=False)
        self.v_proj = nn.Linear(dims.dim, dims.n_kv_heads * dims.head_dim, bias=False)
        self.o_proj = nn.Linear(dims.n_heads * dims.head_dim, dims.dim, bias=False)
        self.q_norm = nn.RMSNorm(dims.head_dim, eps=_EPS)
        self.k_norm = nn.RMSNorm(dims.head_dim, eps=_EPS)

    def forward(self, x, cos, sin, cache: dict | None, mask: torch.Tensor | None):
        b, t, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(b, t, self.n_heads, self.hd)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(b, t, self.n_kv, self.hd)).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.n_kv, self.hd).transpose(1, 2)
        q = (q.float() * cos + _rotate_half(q.float()) * sin).type_as(v)
        k = (k.float() * cos + _rotate_half(k.float()) * sin).type_as(v)
        if cache is not None:
            if "k" in cache:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=self.n_heads != self.n_kv)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, -1))


class _Layer(nn.Module):
    def __init__(self, dims: ModelDims):
        super().__init__()
        self.self_attn = _Attention(dims)
        self.mlp = nn.Module()
        self.mlp.gate_proj = nn.Linear(dims.dim, dims.hidden_dim, bias=False)
        self.mlp.up_proj = nn.Linear(dims.dim, dims.hidden_dim, bias=False)
        self.mlp.down_proj = nn.Linear(dims.hidden_dim, dims.dim, bias=False)
        self.input_layernorm = nn.RMSNorm(dims.dim, eps=_EPS)
        self.post_attention_layernorm = nn.RMSNorm(dims.dim, eps=_EPS)

    def forward(self, x, cos, sin, cache, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cache, mask)
        h = self.post_attention_layernorm(x)
        return x + self.mlp.down_proj(F.silu(self.mlp.gate_proj(h)) * self.mlp.up_proj(h))


class HFQwen3(nn.Module):
    """Qwen3ForCausalLM-shaped module: `model.embed_tokens`, `model.layers.N.*`, `model.norm`, tied `lm_head`."""

    def __init__(self, dims: ModelDims):
        super().__init__()
        self.dims = dims
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(dims.vocab_size, dims.dim)
        self.model.layers = nn.ModuleList(_Layer(dims) for _ in range(dims.n_layers))
        self.model.norm = nn.RMSNorm(dims.dim, eps=_EPS)
        self.lm_head = nn.Linear(dims.dim, dims.vocab_size, bias=False)
        self.lm_head.weight = self.model.embed_tokens.weight
        inv = 1.0 / (dims.rope_theta ** (torch.arange(0, dims.head_dim, 2).float() / dims.head_dim))
        freqs = torch.outer(torch.arange(dims.max_seq_len).float(), inv)
        self.register_buffer("_cos", torch.cat([freqs, freqs], -1).cos(), persistent=False)
        self.register_buffer("_sin", torch.cat([freqs, freqs], -1).sin(), persistent=False)

    def forward(
        self,
        ids: torch.Tensor,
        positions: torch.Tensor,
        caches: list[dict] | None = None,
        mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits for `ids` [B, T] at `positions` [B, T]; `mask` [B, 1, T, T_total] bool (True = attend)."""
        cos = self._cos[positions].unsqueeze(1)
        sin = self._sin[positions].unsqueeze(1)
        x = self.model.embed_tokens(ids)
        for i, layer in enumerate(self.model.layers):
            x = layer(x, cos, sin, None if caches is None else caches[i], mask)
        return self.lm_head(self.model.norm(x))

    @torch.no_grad()
    def load_hf_tensors(self, named: list[tuple[str, torch.Tensor]] | dict) -> int:
        """Copy HF-named tensors into the parameters (casting to their dtype); returns how many were loaded."""
        params = dict(self.named_parameters(remove_duplicate=False))
        items = named.items() if isinstance(named, dict) else named
        loaded = 0
        for name, tensor in items:
            if name not in params:
                raise KeyError(f"rollout engine has no parameter {name!r}; the HF names do not match Qwen3.")
            params[name].copy_(tensor)
            loaded += 1
        return loaded
