"""Rollout engines behind one small interface: `update_weights(named_tensors)` and `generate(ids, max_tokens)`.

On CPU the torch sampler (`TorchRolloutEngine`, a plain HF-named Qwen3 with a KV cache) stands in
for vLLM. `VLLMRolloutEngine` is the path for GPU/NPU workers with vLLM installed; it is written
against vLLM's offline `LLM` API and is UNVERIFIED here (no vLLM, no accelerator on these machines).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from exercises.lab.device import rollout_dtype
from exercises.lab.hf_model import HFQwen3
from exercises.lab.model import ModelDims


class TorchRolloutEngine:
    """Sampling from a plain torch Qwen3 loaded from HF-named tensors; the CPU stand-in for vLLM.

    The KV cache is kept across the turns of one game: when the next context extends the cached
    one (model reply + env text), only the new tokens are prefilled.
    """

    def __init__(
        self,
        dims: ModelDims,
        *,
        stop_ids: Sequence[int],
        temperature: float = 1.0,
        dtype: torch.dtype = torch.float32,
        device: str = "cpu",
    ) -> None:
        self.model = HFQwen3(dims).to(device=device, dtype=dtype).eval()
        self.stop_ids = {int(t) for t in stop_ids}
        self.temperature = temperature
        self.device = device
        self.generator = torch.Generator(device="cpu")
        self._cached: list[int] = []
        self._caches: list[dict] | None = None
        self.max_seq_len = dims.max_seq_len

    def update_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> int:
        """Load (HF name, tensor) pairs, e.g. from `weight_sync.get_per_tensor_param`; drops the KV cache."""
        self.reset()
        return self.model.load_hf_tensors(named_tensors)

    def seed(self, seed: int) -> None:
        """Reseed sampling (one seed per game keeps runs reproducible whatever the rank split)."""
        self.generator.manual_seed(int(seed))
        self.reset()

    def reset(self) -> None:
        """Forget the KV cache."""
        self._cached, self._caches = [], None

    @torch.no_grad()
    def _prefill(self, ids: list[int]) -> torch.Tensor:
        """Feed `ids` after the cached tokens; returns the logits of the last one."""
        start = len(self._cached)
        if self._caches is None:
            self._caches = [{} for _ in range(self.model.dims.n_layers)]
        new = torch.tensor([ids], device=self.device)
        positions = torch.arange(start, start + len(ids), device=self.device).unsqueeze(0)
        mask = None
        if len(ids) > 1:
            # causal within the new chunk, full view of the cache
            total = start + len(ids)
            mask = torch.ones(len(ids), total, dtype=torch.bool, device=self.device).tril(diagonal=start)
            mask = mask.view(1, 1, len(ids), total)
        logits = self.model(new, positions, self._caches, mask)
        self._cached.extend(ids)
        return logits[0, -1].float()

    def _sample(self, logits: torch.Tensor) -> int:
        if self.temperature <= 0:
            return int(logits.argmax())
        probs = torch.softmax(logits / self.temperature, dim=-1).cpu()
        return int(torch.multinomial(probs, 1, generator=self.generator))

    def generate(self, prompt_ids: list[int], max_tokens: int) -> list[int]:
        """Sample up to `max_tokens` tokens after `prompt_ids`, stopping after a stop token (kept)."""
        prompt_ids = list(prompt_ids)
        cache_stale = self._caches is None or prompt_ids[: len(self._cached)] != self._cached
        if cache_stale or len(prompt_ids) <= len(self._cached):
            self.reset()
        room = self.max_seq_len - len(prompt_ids)
        max_tokens = min(max_tokens, room)
        if max_tokens <= 0:
            return []
        logits = self._prefill(prompt_ids[len(self._cached) :])
        out: list[int] = []
        while True:
            token = self._sample(logits)
            out.append(token)
            if token in self.stop_ids or len(out) >= max_tokens:
                break
            logits = self._prefill([token])
        return out


class VLLMRolloutEngine:
    """vLLM offline engine with in-place weight updates (GPU/NPU). UNVERIFIED: vLLM is not installed here.

    Mirrors verl's `update_weights`: the actor's HF-named bf16 tensors go straight into
    `model.load_weights`, so no checkpoint round-trip is needed between steps.
    """

    def __init__(
        self,
        model_path: str,
        *,
        stop_ids: Sequence[int],
        temperature: float = 1.0,
        max_model_len: int = 5120,
        gpu_memory_utilization: float = 0.5,
    ) -> None:
        try:
            from vllm import LLM, SamplingParams
        except ImportError as exc:  # pragma: no cover - depends on the worker image
            raise RuntimeError(
                "rollout='vllm' needs vLLM (GPU) or vllm-ascend (NPU) installed; use rollout='torch' on CPU."
            ) from exc
        self._sampling_params = SamplingParams
        self.llm = LLM(
            model=model_path,
            dtype="bfloat16",
            enforce_eager=True,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            enable_prefix_caching=True,
        )
        self.stop_ids = list(stop_ids)
        self.temperature = temperature
        self._seed = 0

    def update_weights(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> int:
        """Push HF-named tensors into the running vLLM model."""
        tensors = list(named_tensors)
        model = self.llm.llm_engine.model_executor.driver_worker.model_runner.model
        model.load_weights(tensors)
        self.llm.reset_prefix_cache()
        return len(tensors)

    def seed(self, seed: int) -> None:
        """Per-game sampling seed."""
        self._seed = int(seed)

    def reset(self) -> None:
        """vLLM manages its own cache."""

    def generate(self, prompt_ids: list[int], max_tokens: int) -> list[int]:
        """One sampled continuation of `prompt_ids`."""
        params = self._sampling_params(
            temperature=self.temperature, max_tokens=max_tokens, stop_token_ids=self.stop_ids, seed=self._seed
        )
        result = self.llm.generate([{"prompt_token_ids": list(prompt_ids)}], params, use_tqdm=False)
        return list(result[0].outputs[0].token_ids)


def make_rollout_engine(
    kind: str, *, dims: ModelDims, model_path: str, stop_ids: Sequence[int], temperature: float, device: str
):
    """Choose the rollout engine once: "torch" (the CPU stand-in) or "vllm"."""
    if kind == "torch":
        dtype = getattr(torch, rollout_dtype("cpu" if device == "cpu" else "accelerator"))
        return TorchRolloutEngine(dims, stop_ids=stop_ids, temperature=temperature, dtype=dtype, device=device)
    if kind == "vllm":
        return VLLMRolloutEngine(model_path, stop_ids=stop_ids, temperature=temperature)
    raise ValueError(f"rollout must be 'torch' or 'vllm', got {kind!r}.")
