"""The phases of one GRPO step on one rank, each timed under verl's `timing_s/*` name."""

from __future__ import annotations

import math

import torch
import torch.distributed as dist
from torchtitan.distributed.utils import clip_grad_norm_

from exercises.lab import grpo, weight_sync
from exercises.lab.metrics import Timer, data_metrics, timing_metrics
from exercises.lab.wordle import compute_score


def sync_weights(trainer) -> int:
    """verl's update_weights: actor -> `get_per_tensor_param` (HF names, full tensors, bf16) -> rollout engine."""
    # shards go to the training device first (the all-gather needs it under nccl/hccl), as verl's engine does
    named = weight_sync.get_per_tensor_param(
        trainer.actor, trainer.adapter, dtype=torch.bfloat16, device=trainer.device
    )
    return trainer.rollout.update_weights(named)


def game_seed(seed: int, step: int, prompt: int, sample: int) -> int:
    """One sampling seed per game, independent of which rank plays it."""
    return (seed * 1_000_003 + step * 10_007 + prompt * 101 + sample) % (2**63)


def play(trainer, words: list[str], prompt_ids: range, *, n: int, step: int, tag: str = "train") -> list[dict]:
    """Play `n` games for each local prompt; returns samples with ids, masks, text and reward parts."""
    samples = []
    for i in prompt_ids:
        for j in range(n):
            trainer.rollout.seed(game_seed(trainer.cfg.seed + (7919 if tag != "train" else 0), step, i, j))
            out = trainer.loop.run(answer=words[i], generate_fn=trainer.rollout.generate)
            samples.append(
                {
                    "uid": i,
                    "idx": i * n + j,
                    "answer": words[i],
                    "prompt_ids": out.prompt_ids,
                    "response_ids": out.response_ids,
                    "response_mask": out.response_mask,
                    "extra_fields": out.extra_fields,
                    "text": out.text,
                    "num_turns": out.num_turns,
                }
            )
    return samples


def score(samples: list[dict]) -> None:
    """The recipe's `compute_score` on each decoded response, fed the loop's extra fields (as verl does)."""
    for s in samples:
        result = compute_score(s["text"], s["answer"], extra_info=s["extra_fields"])
        s["score"] = float(result["score"])
        s["reward_parts"] = result


def _all_sum(values: list[float]) -> list[float]:
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t)
    return t.tolist()


def _gather(obj):
    out: list = [None] * dist.get_world_size()
    dist.all_gather_object(out, obj)
    return out


def _forward_log_probs(model, batch, rows=None, *, grad: bool):
    with torch.set_grad_enabled(grad):
        logits = grpo.response_logits(model, batch, rows)
        return grpo.log_probs_and_entropy(logits, batch.responses[rows or slice(None)])


def train_step(trainer, step: int) -> dict:
    """One GRPO step; returns the step's metrics (identical on every rank)."""
    cfg, timer = trainer.cfg, Timer()
    world, rank = trainer.world, trainer.rank
    epoch = (step - 1) // trainer.steps_per_epoch
    start = ((step - 1) % trainer.steps_per_epoch) * cfg.train_batch_size
    words = trainer.train_words[start : start + cfg.train_batch_size]
    local_prompts = range(rank, cfg.train_batch_size, world)
    with timer.section("step"):
        with timer.section("update_weights"):
            sync_weights(trainer)
        with timer.section("gen"):
            samples = play(trainer, words, local_prompts, n=cfg.n, step=step)
        with timer.section("reward"):
            score(samples)
        batch = grpo.collate(samples, pad_id=trainer.pad_id).to(trainer.device)
        mask = batch.response_mask
        with timer.section("old_log_prob"):
            old_log_prob, entropy = _forward_log_probs(trainer.actor, batch, grad=False)
            ent_sum, tok = _all_sum([float((entropy * mask).sum()), float(mask.sum())])
        with timer.section("ref"):
            ref_log_prob, _ = _forward_log_probs(trainer.ref, batch, grad=False)
        with timer.section("adv"):
            advantages = grpo.grpo_advantages(batch)
        with timer.section("update_actor"):
            actor_metrics = update_actor(trainer, batch, old_log_prob, ref_log_prob, advantages)
    metrics = {
        "training/global_step": step,
        "training/epoch": epoch,
        **actor_metrics,
        "actor/entropy": ent_sum / max(tok, 1.0),
    }
    local = [
        {k: s[k] for k in ("idx", "score", "num_turns")}
        | {"response_length": len(s["response_ids"]), "prompt_length": len(s["prompt_ids"])}
        for s in samples
    ]
    everything = sorted((x for part in _gather(local) for x in part), key=lambda x: x["idx"])
    adv = [grpo.masked_stats(advantages, mask)]
    parts = _gather(adv[0])
    adv_stats = (sum(p[0] for p in parts), sum(p[1] for p in parts), max(p[2] for p in parts), min(p[3] for p in parts))
    metrics.update(data_metrics(everything, adv_stats, max_response_length=cfg.max_response_length))
    total_tokens = sum(x["response_length"] + x["prompt_length"] for x in everything)
    timing = _gather(timer.timing)[0]  # rank 0's clock, like verl's driver
    metrics.update(timing_metrics(timing, total_tokens=total_tokens, world_size=world))
    return metrics


def update_actor(trainer, batch, old_log_prob, ref_log_prob, advantages) -> dict:
    """ppo_epochs=1 pass over mini-batches: loss, backward, grad clip, AdamW step; then one LR step."""
    cfg, world = trainer.cfg, trainer.world
    trainer.actor.train()
    local_prompts = cfg.train_batch_size // world
    per_mb = (cfg.ppo_mini_batch_size // world) * cfg.n
    n_mb = (local_prompts * cfg.n) // per_mb
    lr = trainer.lr_schedulers.schedulers[0].get_last_lr()[0]
    sums = {
        "pg_loss": 0.0,
        "kl_loss": 0.0,
        "entropy_loss": 0.0,
        "loss": 0.0,
        "pg_clipfrac": 0.0,
        "ppo_kl": 0.0,
        "pg_clipfrac_lower": 0.0,
        "grad_norm": 0.0,
    }
    _optimizer_to(trainer, trainer.device)
    for k in range(n_mb):
        rows = slice(k * per_mb, (k + 1) * per_mb)
        mask = batch.response_mask[rows]
        global_tokens, global_bs = _all_sum([float(mask.sum()), float(mask.shape[0])])
        loss_cfg = grpo.actor_loss_config(
            clip_ratio=cfg.clip_ratio,
            n=cfg.n,
            dp_size=world,
            batch_num_tokens=max(global_tokens, 1.0),
            global_batch_size=global_bs,
        )
        trainer.optimizers.zero_grad()
        log_prob, entropy = _forward_log_probs(trainer.actor, batch, rows, grad=True)
        loss, parts = grpo.actor_loss(
            log_prob=log_prob,
            old_log_prob=old_log_prob[rows],
            ref_log_prob=ref_log_prob[rows],
            entropy=entropy,
            advantages=advantages[rows],
            mask=mask,
            loss_cfg=loss_cfg,
            entropy_coeff=cfg.entropy_coeff,
            kl_loss_coef=cfg.kl_loss_coef,
            kl_loss_type=cfg.kl_loss_type,
            loss_agg_mode=cfg.loss_agg_mode,
        )
        loss.backward()
        grad_norm = float(clip_grad_norm_(list(trainer.actor.parameters()), cfg.grad_clip))
        if math.isfinite(grad_norm):
            trainer.optimizers.step()
        else:  # verl skips the update and warns "grad_norm is not finite"
            print(f"[rank {trainer.rank}] grad_norm is not finite: {grad_norm}; skipping this update", flush=True)
            trainer.optimizers.zero_grad()
        shares = _all_sum(
            [
                _num(parts["pg_loss"]),
                _num(parts["kl_loss"]),
                _num(parts["entropy_loss"]),
                _num(loss),
                _num(parts["actor/pg_clipfrac"]),
                _num(parts["actor/ppo_kl"]),
                _num(parts["actor/pg_clipfrac_lower"]),
            ]
        )
        # token-mean shares carry `* dp_size`: the rank sum over dp_size is the global value
        for key, value in zip(("pg_loss", "kl_loss", "entropy_loss", "loss"), shares[:4], strict=True):
            sums[key] += value / world
        for key, value in zip(("pg_clipfrac", "ppo_kl", "pg_clipfrac_lower"), shares[4:], strict=True):
            sums[key] += value / world
        sums["grad_norm"] += grad_norm
    _optimizer_to(trainer, torch.device("cpu") if cfg.optimizer_offload else trainer.device)
    trainer.lr_schedulers.step()
    out = {f"actor/{k}": v / n_mb for k, v in sums.items()}
    out["actor/lr"] = lr
    out["actor/kl_coef"] = cfg.kl_loss_coef
    return out


def _num(value) -> float:
    return float(value.detach()) if isinstance(value, torch.Tensor) else float(value)


def _optimizer_to(trainer, device: torch.device) -> None:
    """optimizer_offload: move AdamW state between the CPU and the device (a no-op on CPU-only runs)."""
    if not trainer.cfg.optimizer_offload or trainer.device.type == "cpu" or trainer.cfg.param_offload:
        return  # with param_offload the AdamW state already lives with the (CPU) parameters
    for opt in trainer.optimizers:
        for state in opt.state.values():
            for key, value in state.items():
                if isinstance(value, torch.Tensor) and key != "step":
                    state[key] = value.to(device, non_blocking=True)


def validate(trainer, step: int) -> dict:
    """Play the 20 test words `val_n` times each (temperature 0.7, as the recipe's validation)."""
    cfg = trainer.cfg
    words = trainer.test_words
    saved = trainer.rollout.temperature
    trainer.rollout.temperature = 0.7
    try:
        mine = range(trainer.rank, len(words), trainer.world)
        samples = play(trainer, words, mine, n=cfg.val_n, step=step, tag="val")
    finally:
        trainer.rollout.temperature = saved
    score(samples)
    keys = ("score", "correct", "partial", "length_bonus", "format", "num_guesses")
    local = [[float(s["reward_parts"][k]) for k in keys] for s in samples]
    rows = [r for part in _gather(local) for r in part]
    out = {f"val-core/wordle/reward/mean@{cfg.val_n}": sum(r[0] for r in rows) / len(rows)}
    for i, k in enumerate(keys):
        out[f"val-aux/wordle/{k}/mean@{cfg.val_n}"] = sum(r[i] for r in rows) / len(rows)
    return out
