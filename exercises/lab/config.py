"""What one lab training run is: `TrainConfig` (one knob per field), the named profiles, and their validation.

The launcher (`exercises.lab.train`) and each rank (`exercises.lab.trainer`) import this module; it
imports neither. Field docstrings double as the CLI's --help text.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Annotated

import tyro

from exercises.lab.checkpoint import SHIPPED_CHECKPOINT
from exercises.lab.parallel import RESHARD_POLICIES, SPMD_BACKENDS, validate_parallel_sizes

LOSS_AGG_MODES = ("token-mean",)


@dataclass(kw_only=True, slots=True)
class TrainConfig:
    """The course's `run_qwen3_1.7b_wordle_torchtitan_npu.sh` knobs, scaled down for a tiny model."""

    profile: str = "cpu-tiny"
    """Name of the profile these values came from (recorded in run.json)."""
    out_dir: Annotated[str, tyro.conf.arg(aliases=("--out",))] = "runs/lab"
    """Where metrics.jsonl, run.json and checkpoints/ go (CLI: --out)."""
    model_path: str = str(SHIPPED_CHECKPOINT)
    """HF checkpoint directory (config.json, model.safetensors, tokenizer files) for actor and ref."""
    device: str = "cpu"
    """"cpu", "cuda", "npu" or "auto" (exercises.lab.device decides)."""
    rollout: str = "torch"
    """Rollout engine: "torch" (CPU stand-in for vLLM) or "vllm" (GPU/NPU workers, unverified here)."""
    steps: int = 3
    """trainer.total_training_steps (the course's 3-step run)."""
    total_epochs: int = 5
    """Epochs over the train split (the course: 5); steps stop at whichever ends first."""
    train_batch_size: int = 4
    """Prompts per step (course: 128)."""
    n: int = 4
    """Rollouts per prompt, the GRPO group size (course: 8)."""
    ppo_mini_batch_size: int = 4
    """Prompts per optimizer step (course: 32, i.e. 4 optimizer steps per training step)."""
    lr: float = 2e-5
    """Actor AdamW learning rate (course: 1e-6 for 1.7B; larger for the tiny model)."""
    weight_decay: float = 0.01
    """AdamW weight decay (verl's optim default)."""
    warmup_steps: int = 5
    """optim.lr_warmup_steps; torchtitan clamps it to the total steps."""
    lr_total_steps: int | None = None
    """Steps the LR schedule spans (default: steps), torchtitan's lr_scheduler.total_steps."""
    min_lr_factor: float = 0.1
    """Cosine floor as a fraction of lr."""
    decay_type: str = "cosine"
    """optim.decay_type (linear, sqrt, cosine)."""
    grad_clip: float = 1.0
    """Max global grad norm (verl's actor.grad_clip)."""
    kl_loss_coef: float = 0.001
    """Weight of the KL loss against the reference (use_kl_loss=True)."""
    kl_loss_type: str = "low_var_kl"
    """KL estimator for the loss (k3)."""
    entropy_coeff: float = 0.004
    """Entropy bonus weight."""
    clip_ratio: float = 0.2
    """PPO clip range."""
    loss_agg_mode: str = "token-mean"
    """How token losses are aggregated."""
    temperature: float = 1.0
    """Rollout sampling temperature."""
    data_parallel_shard_size: int = 2
    """FSDP2 shard degree (actor.torchtitan.data_parallel_shard_size)."""
    context_parallel_size: int = 1
    """CP degree; only 1 is supported off NPU."""
    world_size: int = 2
    """Ranks to launch; must equal data_parallel_shard_size * context_parallel_size."""
    reshard_after_forward: str = "always"
    """torchtitan fsdp_reshard_after_forward: default, always or never."""
    param_offload: bool = False
    """FSDP2 CPUOffloadPolicy for actor and ref parameters."""
    optimizer_offload: bool = False
    """Keep AdamW state on the CPU between steps (a no-op when training on the CPU)."""
    spmd_backend: str = "partial_dtensor"
    """torchtitan SPMD backend (partial_dtensor or full_dtensor; spmd_types fails with torch 2.13)."""
    max_seq_len: int = 512
    """Prompt + response tokens, the model's RoPE length (course: 5120)."""
    max_response_length: int = 448
    """Response cap across all turns (course: 4096)."""
    max_tokens_per_turn: int = 16
    """Per-reply generation budget (course: 512)."""
    max_turns: int = 6
    """multi_turn.max_user_turns."""
    save_freq: int = -1
    """Save an HF checkpoint every N steps (and at the end); -1 never."""
    test_freq: int = -1
    """Validate on the test split every N steps; -1 never."""
    val_before_train: bool = False
    """Validate once before step 1 (the course's val_before_train=True); printed as verl's
    "Initial validation metrics: {...}" line and stored in run.json, not in metrics.jsonl."""
    val_n: int = 1
    """Validation samples per test word."""
    seed: int = 1
    """Seeds sampling and the data order; same seed, same metrics on CPU."""
    data_seed: int = 42
    """prepare_data's split seed (the recipe's 42)."""
    threads_per_rank: int = 1
    """torch intra-op threads in each rank."""
    console: bool = True
    """Print verl-style console lines from rank 0."""

    def validate(self) -> None:
        """Raise ValueError naming the bad knob and the fix, before any rank starts."""
        positive = (
            "steps",
            "total_epochs",
            "train_batch_size",
            "n",
            "ppo_mini_batch_size",
            "max_seq_len",
            "max_response_length",
            "max_tokens_per_turn",
            "max_turns",
            "world_size",
            "threads_per_rank",
        )
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        validate_parallel_sizes(
            data_parallel_shard_size=self.data_parallel_shard_size,
            context_parallel_size=self.context_parallel_size,
            world_size=self.world_size,
        )
        if self.context_parallel_size != 1:
            raise ValueError("context_parallel_size > 1 needs NPU varlen/Ulysses attention; use 1 here.")
        if self.train_batch_size % self.ppo_mini_batch_size:
            raise ValueError(
                f"train_batch_size ({self.train_batch_size}) must be a multiple of "
                f"ppo_mini_batch_size ({self.ppo_mini_batch_size})."
            )
        if self.ppo_mini_batch_size % self.world_size:
            raise ValueError(
                f"ppo_mini_batch_size ({self.ppo_mini_batch_size}) must split evenly over "
                f"{self.world_size} ranks; use a multiple of the world size."
            )
        if self.reshard_after_forward not in RESHARD_POLICIES:
            raise ValueError(
                f"reshard_after_forward must be one of {RESHARD_POLICIES}, got {self.reshard_after_forward!r}."
            )
        if self.spmd_backend not in SPMD_BACKENDS:
            raise ValueError(f"spmd_backend must be one of {SPMD_BACKENDS}, got {self.spmd_backend!r}.")
        if self.loss_agg_mode not in LOSS_AGG_MODES:
            raise ValueError(f"loss_agg_mode must be one of {LOSS_AGG_MODES}, got {self.loss_agg_mode!r}.")
        if self.decay_type not in ("linear", "sqrt", "cosine"):
            raise ValueError(f"decay_type must be linear, sqrt or cosine, got {self.decay_type!r}.")
        if not (self.lr > 0 and self.clip_ratio > 0 and 0 <= self.min_lr_factor <= 1):
            raise ValueError("lr and clip_ratio must be > 0 and min_lr_factor within [0, 1].")
        if self.warmup_steps < 0 or self.kl_loss_coef < 0 or self.entropy_coeff < 0:
            raise ValueError("warmup_steps, kl_loss_coef and entropy_coeff must be >= 0.")
        if self.max_response_length >= self.max_seq_len:
            raise ValueError(
                f"max_response_length ({self.max_response_length}) must leave room for the prompt "
                f"inside max_seq_len ({self.max_seq_len})."
            )
        if self.save_freq == 0 or self.save_freq < -1 or self.test_freq == 0 or self.test_freq < -1:
            raise ValueError("save_freq and test_freq are -1 (never) or a positive number of steps.")
        if self.device not in ("cpu", "cuda", "npu", "auto") or self.rollout not in ("torch", "vllm"):
            raise ValueError("device must be cpu/cuda/npu/auto and rollout torch/vllm.")


PROFILES: dict[str, dict] = {
    # Graded notebooks and tests: 3 steps, 2 ranks, well under a minute on 2 quiet cores. "auto": the ranks
    # run where the grader placed the job (TITANGRADE_DEVICE: 2 NPUs on hccl, 2 GPUs on nccl, else 2 CPU
    # ranks on gloo); run.json records the device and the grader picks that device's reference band.
    "cpu-tiny": {"device": "auto"},
    # The longer CPU run behind docs/lab-training.md (reward curve).
    "cpu-long": {"steps": 50, "train_batch_size": 8, "n": 8, "ppo_mini_batch_size": 4, "warmup_steps": 5, "lr": 1e-4},
    # The lab trainer on CUDA (nccl), bigger batches. UNVERIFIED: no GPU on the build machines.
    "cuda-small": {
        "device": "cuda",
        "steps": 20,
        "train_batch_size": 32,
        "n": 8,
        "ppo_mini_batch_size": 8,
        "threads_per_rank": 4,
    },
}


def resolve_config(config_or_kwargs: TrainConfig | dict | None = None, **overrides) -> TrainConfig:
    """A validated TrainConfig from a TrainConfig, a dict of fields (optionally with "profile") or kwargs."""
    if isinstance(config_or_kwargs, TrainConfig):
        values = {f.name: getattr(config_or_kwargs, f.name) for f in fields(TrainConfig)}
        values.update(overrides)
    else:
        given = dict(config_or_kwargs or {}, **overrides)
        profile = given.get("profile", "cpu-tiny")
        if profile not in PROFILES:
            raise ValueError(f"unknown profile {profile!r}; choose one of {sorted(PROFILES)}.")
        values = {**PROFILES[profile], **given, "profile": profile}
    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown TrainConfig field(s) {unknown}; valid fields: {sorted(known)}.")
    config = TrainConfig(**values)
    config.validate()
    return config


def lr_scheduler_config(config: TrainConfig):
    """torchtitan's own LR schedule (linear warmup, cosine decay to min_lr_factor; warmup clamped to the total)."""
    from torchtitan.components.optimizer import LRSchedulersContainer

    return LRSchedulersContainer.Config(
        warmup_steps=config.warmup_steps,
        decay_type=config.decay_type,
        min_lr_factor=config.min_lr_factor,
        total_steps=config.lr_total_steps,
    )
