"""GRPO maths, delegated to verl's own `core_algos` (as the course's pipeline does).

Outcome advantages (`compute_grpo_outcome_advantage`), the clipped policy loss
(`get_policy_loss_fn("vanilla")`), the `low_var_kl` KL loss against the reference and the entropy
bonus, all aggregated token-mean over the global mini-batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from verl.trainer.ppo import core_algos
from verl.utils import torch_functional as verl_F


@dataclass
class Batch:
    """A rank's padded samples: input_ids [B, T], and the response window [B, R] inside it."""

    input_ids: torch.Tensor
    """prompt + response tokens, right-padded."""
    prompt_lens: torch.Tensor
    """[B] prompt length of each row (the response starts there)."""
    responses: torch.Tensor
    """[B, R] response tokens, right-padded."""
    response_mask: torch.Tensor
    """[B, R] 1 on model-generated tokens (loss mask), 0 on env text and padding."""
    response_lens: torch.Tensor
    """[B] valid response length (model + env tokens)."""
    scores: torch.Tensor
    """[B] sequence reward."""
    group_index: np.ndarray
    """[B] prompt uid; GRPO normalizes within a group."""

    def to(self, device: torch.device) -> Batch:
        """The same batch with every tensor on `device` (the accelerator when not training on the CPU)."""
        moved = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in self.__dict__.items()}
        return Batch(**moved)


def collate(samples: list[dict], *, pad_id: int) -> Batch:
    """Pad agent-loop samples (prompt_ids, response_ids, response_mask, score, uid) into a Batch."""
    resp_len = max(1, max(len(s["response_ids"]) for s in samples))
    total = max(len(s["prompt_ids"]) for s in samples) + resp_len
    b = len(samples)
    input_ids = torch.full((b, total), pad_id, dtype=torch.long)
    responses = torch.full((b, resp_len), pad_id, dtype=torch.long)
    mask = torch.zeros((b, resp_len), dtype=torch.float32)
    for i, s in enumerate(samples):
        p, r = s["prompt_ids"], s["response_ids"]
        input_ids[i, : len(p) + len(r)] = torch.tensor(list(p) + list(r), dtype=torch.long)
        if r:
            responses[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, : len(r)] = torch.tensor(s["response_mask"], dtype=torch.float32)
    return Batch(
        input_ids=input_ids,
        prompt_lens=torch.tensor([len(s["prompt_ids"]) for s in samples]),
        responses=responses,
        response_mask=mask,
        response_lens=torch.tensor([len(s["response_ids"]) for s in samples]),
        scores=torch.tensor([float(s["score"]) for s in samples], dtype=torch.float32),
        group_index=np.array([s["uid"] for s in samples], dtype=object),
    )


def response_logits(model: torch.nn.Module, batch: Batch, rows: slice | None = None) -> torch.Tensor:
    """Logits predicting each response token: [B, R, V] (positions prompt_len-1 .. prompt_len+R-2)."""
    rows = rows or slice(None)
    ids = batch.input_ids[rows]
    logits = model(ids)
    prompt_lens = batch.prompt_lens[rows]
    r = batch.responses.shape[1]
    offsets = prompt_lens.unsqueeze(1) - 1 + torch.arange(r, device=prompt_lens.device).unsqueeze(0)  # [B, R]
    offsets = offsets.clamp(max=ids.shape[1] - 1).to(logits.device)
    return torch.gather(logits, 1, offsets.unsqueeze(-1).expand(-1, -1, logits.shape[-1]))


def log_probs_and_entropy(logits: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log p(label) and entropy, with verl's helpers (pure-torch path on CPU)."""
    logits = logits.float()
    log_probs = verl_F.logprobs_from_logits(logits, labels.to(logits.device))
    entropy = verl_F.entropy_from_logits(logits)
    return log_probs, entropy


def token_level_rewards(batch: Batch) -> torch.Tensor:
    """The sequence score on the last valid response token, zeros elsewhere (verl's reward layout)."""
    rewards = torch.zeros_like(batch.response_mask)
    last = (batch.response_lens - 1).clamp(min=0)
    rewards[torch.arange(len(last), device=last.device), last] = batch.scores
    return rewards


def grpo_advantages(batch: Batch, *, epsilon: float = 1e-6) -> torch.Tensor:
    """verl's `compute_grpo_outcome_advantage`: (score - group mean) / (group std + eps) on every loss token."""
    advantages, _ = core_algos.compute_grpo_outcome_advantage(
        token_level_rewards=token_level_rewards(batch),
        response_mask=batch.response_mask,
        index=batch.group_index,
        epsilon=epsilon,
        norm_adv_by_std_in_grpo=True,
    )
    return advantages


def actor_loss_config(*, clip_ratio: float, n: int, dp_size: int, batch_num_tokens: float, global_batch_size: float):
    """verl's `ActorConfig` carrying clip ratio 0.2 and the global batch info `agg_loss` needs."""
    from verl.workers.config import ActorConfig

    cfg = ActorConfig(strategy="fsdp", rollout_n=n, ppo_micro_batch_size_per_gpu=1, clip_ratio=clip_ratio)
    cfg.global_batch_info.update(
        dp_size=dp_size, batch_num_tokens=batch_num_tokens, global_batch_size=global_batch_size
    )
    return cfg


def actor_loss(
    *,
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    ref_log_prob: torch.Tensor,
    entropy: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    loss_cfg,
    entropy_coeff: float,
    kl_loss_coef: float,
    kl_loss_type: str = "low_var_kl",
    loss_agg_mode: str = "token-mean",
) -> tuple[torch.Tensor, dict[str, torch.Tensor | float]]:
    """policy loss = pg_loss - entropy_coeff * entropy + kl_loss_coef * kl_loss, as verl's actor computes it.

    Each term is this rank's share of the global token-mean (`agg_loss` with dp_size and the global
    token count); summing the shares over ranks gives the global value.
    """
    policy_loss_fn = core_algos.get_policy_loss_fn("vanilla")
    pg_loss, pg_metrics = policy_loss_fn(
        old_log_prob=old_log_prob,
        log_prob=log_prob,
        advantages=advantages,
        response_mask=mask,
        loss_agg_mode=loss_agg_mode,
        config=loss_cfg,
    )
    info = loss_cfg.global_batch_info
    entropy_loss = core_algos.agg_loss(loss_mat=entropy, loss_mask=mask, loss_agg_mode=loss_agg_mode, **info)
    kld = core_algos.kl_penalty(logprob=log_prob, ref_logprob=ref_log_prob, kl_penalty=kl_loss_type)
    kl_loss = core_algos.agg_loss(loss_mat=kld, loss_mask=mask, loss_agg_mode=loss_agg_mode, **info)
    loss = pg_loss - entropy_coeff * entropy_loss + kl_loss_coef * kl_loss
    parts = {"pg_loss": pg_loss, "kl_loss": kl_loss, "entropy_loss": entropy_loss, **pg_metrics}
    return loss, parts


def masked_stats(values: torch.Tensor, mask: torch.Tensor) -> tuple[float, float, float, float]:
    """(sum, count, max, min) of `values` where `mask` is set, for cross-rank reduction."""
    sel = torch.masked_select(values, mask.bool())
    if sel.numel() == 0:
        return 0.0, 0.0, float("-inf"), float("inf")
    return float(sel.sum()), float(sel.numel()), float(sel.max()), float(sel.min())


def cross_entropy_sft(logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Masked next-token cross entropy (used only by the SFT warm-up script)."""
    loss = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), reduction="none")
    return (loss * mask.flatten()).sum() / mask.sum().clamp(min=1)
