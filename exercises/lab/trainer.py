"""One rank of the lab trainer: FSDP2 actor + reference, rollout, GRPO update, weight sync.

`exercises.lab.train` spawns `worker_main` once per rank; this module never imports the launcher.

Step order follows verl's `RayPPOTrainer.fit`: update_weights -> gen -> reward -> old_log_prob ->
ref -> adv -> update_actor. Each rank plays whole GRPO groups (prompts i with i % world == rank),
so group statistics stay local; metrics are reduced over ranks before rank 0 logs them.
"""

from __future__ import annotations

import json
import os
import random
import resource
import sys
from dataclasses import fields
from pathlib import Path

from exercises.lab.config import TrainConfig, lr_scheduler_config
from exercises.lab.device import BACKENDS, PARAM_DTYPE, current_device, rollout_dtype


def _die_with_parent() -> None:
    """Ranks must not outlive the launcher (a timed-out grading kernel, a killed CLI): ask Linux for SIGKILL
    when the parent goes, and leave at once if it is already gone."""
    parent = os.getppid()
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux/glibc: best effort only
        return
    if os.getppid() != parent or parent == 1:
        os._exit(1)


def worker_main(rank: int, config_dict: dict, init_method: str) -> None:
    """torch.multiprocessing entry point (spawned): set up the process group (rendezvous at `init_method`,
    a file store), train, tear down."""
    _die_with_parent()
    os.environ.setdefault("OMP_NUM_THREADS", str(config_dict.get("threads_per_rank", 1)))
    import torch
    import torch.distributed as dist

    config = TrainConfig(**{f.name: config_dict[f.name] for f in fields(TrainConfig)})
    torch.set_num_threads(config.threads_per_rank)
    device_type = _device_type(config.device)
    backend = BACKENDS[device_type]
    if device_type == "cuda":
        torch.cuda.set_device(rank)
    elif device_type == "npu":  # pragma: no cover - Ascend only
        torch.npu.set_device(rank)
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=config.world_size)
    try:
        Trainer(config, rank=rank, device_type=device_type).fit()
    finally:
        dist.destroy_process_group()
    leave_finished_rank()


def leave_finished_rank() -> None:
    """A rank whose work is done and written leaves without the interpreter's teardown: the collective
    backend's threads and static destructors run there, and one that aborts (SIGABRT) would fail a run
    whose results are already on disk. Only the success path comes here; an exception still propagates."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _device_type(requested: str) -> str:
    return requested if requested != "auto" else current_device().kind


class Trainer:
    """Holds the models, optimizer, rollout engine and data of one rank."""

    def __init__(self, config: TrainConfig, *, rank: int, device_type: str) -> None:
        import torch
        from torchtitan.components.optimizer import default_adamw

        from exercises.lab import checkpoint, data, parallel
        from exercises.lab.rollout import make_rollout_engine
        from exercises.lab.tokenizer import load_tokenizer
        from exercises.lab.wordle import WordleAgentLoop

        self.cfg, self.rank, self.device_type = config, rank, device_type
        self.world = config.world_size
        self.device = torch.device(device_type, rank) if device_type != "cpu" else torch.device("cpu")
        torch.manual_seed(config.seed)
        self.dims = checkpoint.dims_of_checkpoint(config.model_path)
        if self.dims.max_seq_len < config.max_seq_len:
            self.dims.max_seq_len = config.max_seq_len  # RoPE length follows torchtitan.max_seq_len
        self.tokenizer = load_tokenizer(config.model_path)
        self.pad_id = self.tokenizer.convert_tokens_to_ids("<|endoftext|>")
        stop_ids = [self.tokenizer.convert_tokens_to_ids(t) for t in ("<|im_end|>", "<|endoftext|>")]
        self.plan = parallel.ParallelPlan(
            data_parallel_shard_size=config.data_parallel_shard_size,
            context_parallel_size=config.context_parallel_size,
            world_size=self.world,
            device_type=device_type,
            reshard_after_forward=config.reshard_after_forward,
            param_offload=config.param_offload,
            spmd_backend=config.spmd_backend,
        )
        self.parallel_dims = parallel.build_parallel_dims(self.plan)
        self.adapter = checkpoint.state_dict_adapter(self.dims, config.model_path)
        self.actor = parallel.build_sharded_model(self.dims, self.plan, self.parallel_dims, seed=config.seed)
        self.ref = parallel.build_sharded_model(self.dims, self.plan, self.parallel_dims, seed=config.seed)
        checkpoint.load_hf_into_model(self.actor, config.model_path, self.adapter)
        checkpoint.load_hf_into_model(self.ref, config.model_path, self.adapter)
        self.ref.eval()
        for p in self.ref.parameters():
            p.requires_grad_(False)
        opt_cfg = default_adamw(lr=config.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=config.weight_decay)
        opt_cfg.implementation = "for-loop"  # fused AdamW is CUDA-only; for-loop is exact and fast enough here
        self.optimizers = opt_cfg.build(model_parts=[self.actor])
        self.lr_schedulers = lr_scheduler_config(config).build(optimizers=self.optimizers, training_steps=config.steps)
        rollout_device = "cpu" if device_type == "cpu" else str(self.device)
        self.rollout = make_rollout_engine(
            config.rollout,
            dims=self.dims,
            model_path=config.model_path,
            stop_ids=stop_ids,
            temperature=config.temperature,
            device=rollout_device,
        )
        self.loop = WordleAgentLoop(
            tokenizer=_PlainTokenizer(self.tokenizer),
            max_turns=config.max_turns,
            response_cap=config.max_response_length,
            max_tokens_per_turn=config.max_tokens_per_turn,
        )
        train_words, self.test_words = data.split_words(data.load_words(), seed=config.data_seed)
        self.train_words = list(train_words)
        random.Random(config.seed).shuffle(self.train_words)  # the dataloader's seeded shuffle
        self.steps_per_epoch = len(self.train_words) // config.train_batch_size  # drop_last
        self.out_dir = Path(config.out_dir)
        self.params_dtensor = parallel.params_are_dtensors(self.actor)
        self.mesh = parallel.mesh_summary(self.parallel_dims)

    # ----------------------------------------------------------------------------------------------
    def fit(self) -> None:
        from exercises.lab import steps
        from exercises.lab.metrics import MetricsSink

        sink = MetricsSink(self.out_dir, console=self.cfg.console) if self.rank == 0 else None
        if self.rank == 0:
            self._write_run_json(status="running")
            if self.cfg.console:
                print(f"Total training steps: {self.total_steps}", flush=True)
        initial = steps.validate(self, 0) if self.cfg.val_before_train else None
        if initial is not None and self.rank == 0:
            self._write_run_json(status="running", initial_validation=initial)
            if self.cfg.console:
                print(f"Initial validation metrics: {initial}", flush=True)
        for step in range(1, self.total_steps + 1):
            metrics = steps.train_step(self, step)
            if self.cfg.test_freq > 0 and (step % self.cfg.test_freq == 0 or step == self.total_steps):
                metrics.update(steps.validate(self, step))
            if self.cfg.save_freq > 0 and (step % self.cfg.save_freq == 0 or step == self.total_steps):
                self._save(step)
            if sink is not None:
                sink.log(step, metrics)
        peak = _gather_peak_rss(self)
        if self.rank == 0:
            self._write_run_json(status="finished", peak_rss_mb_per_rank=peak, initial_validation=initial)

    @property
    def total_steps(self) -> int:
        return min(self.cfg.steps, self.steps_per_epoch * self.cfg.total_epochs)

    def _save(self, step: int) -> None:
        from exercises.lab import checkpoint

        target = self.out_dir / "checkpoints" / f"global_step_{step}"
        config = checkpoint.read_hf_config(self.cfg.model_path)
        checkpoint.save_actor_checkpoint(
            target, self.actor, self.adapter, config, rank=self.rank, step=step, device=self.device
        )
        if self.rank == 0:
            self.tokenizer.save_pretrained(target)

    def _write_run_json(self, **extra) -> None:
        import torch
        import torchtitan
        import verl

        from exercises.lab.model import dims_dict

        info = {
            "model_engine": "torchtitan",
            "strategy": "fsdp2",
            "profile": self.cfg.profile,
            "config": {f.name: getattr(self.cfg, f.name) for f in fields(self.cfg)},
            "total_training_steps": self.total_steps,
            "world_size": self.world,
            "device": self.device_type,
            "backend": BACKENDS[self.device_type],
            "dtype": PARAM_DTYPE,
            "rollout_dtype": rollout_dtype(self.device_type, self.cfg.rollout),
            "rollout": self.cfg.rollout,
            "rollout_note": (
                "torch sampler standing in for vLLM (CPU)" if self.cfg.rollout == "torch" else "vLLM (unverified in CI)"
            ),
            "parallel": {
                "data_parallel_shard_size": self.cfg.data_parallel_shard_size,
                "context_parallel_size": self.cfg.context_parallel_size,
                "data_parallel_replicate_size": 1,
                "tensor_parallel_size": 1,
                "pipeline_parallel_size": 1,
                "spmd_backend": self.cfg.spmd_backend,
                "reshard_after_forward": self.cfg.reshard_after_forward,
                "param_offload": self.cfg.param_offload,
                "optimizer_offload": self.cfg.optimizer_offload,
            },
            "mesh": self.mesh,
            "params_are_dtensors": self.params_dtensor,
            "attention": "sdpa (causal; flex/varlen cannot train on CPU)",
            "model": dims_dict(self.dims),
            "seeds": {"seed": self.cfg.seed, "data_seed": self.cfg.data_seed},
            "versions": {
                "torch": torch.__version__,
                "torchtitan": getattr(torchtitan, "__version__", _dist_version("torchtitan")),
                "verl": getattr(verl, "__version__", _dist_version("verl")),
            },
            **extra,
        }
        (self.out_dir / "run.json").write_text(json.dumps(info, indent=2, default=str) + "\n")


class _PlainTokenizer:
    """encode/decode without special-token insertion, the interface WordleAgentLoop expects."""

    def __init__(self, tok) -> None:
        self.tok = tok

    def encode(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int]) -> str:
        return self.tok.decode(list(ids), skip_special_tokens=False)


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return "unknown"


def _gather_peak_rss(trainer) -> list[float]:
    """ru_maxrss (MiB) of every rank, gathered to all."""
    import torch.distributed as dist

    mine = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    out: list = [None] * trainer.world
    dist.all_gather_object(out, round(mine, 1))
    return out
