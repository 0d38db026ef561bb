"""The lab's GRPO Wordle trainer on TorchTitan: the launcher and its CLI.

    python -m exercises.lab.train --profile cpu-tiny --steps 3 --out DIR
    exercises.lab.train.run({"profile": "cpu-tiny", "steps": 3, "out_dir": DIR})  # from a notebook

`run()` launches the ranks itself (torch.multiprocessing, start method "spawn", rendezvous on
127.0.0.1 at a free port). The config and profiles live in `exercises.lab.train_config`, the per-rank
loop in `exercises.lab.train_worker` (torchtitan's split: config, trainer, entry point).
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sys
import time
from pathlib import Path

from exercises.lab.train_config import PROFILES, TrainConfig, lr_scheduler_config, resolve_config

__all__ = ["PROFILES", "TrainConfig", "free_port", "lr_scheduler_config", "main", "resolve_config", "run"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(config_or_kwargs: TrainConfig | dict | None = None, **overrides) -> dict:
    """Train with `world_size` spawned ranks; returns {"out_dir", "metrics", "run", "wall_s"}."""
    import torch.multiprocessing as mp

    from exercises.lab import train_worker

    config = resolve_config(config_or_kwargs, **overrides)
    out_dir = Path(config.out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    config = dataclasses.replace(config, out_dir=str(out_dir))
    start = time.perf_counter()
    mp.start_processes(train_worker.worker_main, args=(dataclasses.asdict(config), free_port()),
                       nprocs=config.world_size, join=True, start_method="spawn")
    wall_s = time.perf_counter() - start
    metrics = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    run_info = json.loads((out_dir / "run.json").read_text())
    return {"out_dir": str(out_dir), "metrics": metrics, "run": run_info, "wall_s": wall_s}


def _cli_defaults(argv: list[str]) -> TrainConfig:
    """The chosen profile's values, so that flags override the profile and the profile the field defaults."""
    profile = "cpu-tiny"
    for i, arg in enumerate(argv):
        if arg == "--profile" and i + 1 < len(argv):
            profile = argv[i + 1]
        elif arg.startswith("--profile="):
            profile = arg.split("=", 1)[1]
    return resolve_config({"profile": profile})


def _normalise(args: list[str]) -> list[str]:
    """Keep the docs' short `--out` alias and accept true/false/1/0 for booleans (tyro wants True/False)."""
    bools = {"--" + f.name.replace("_", "-") for f in dataclasses.fields(TrainConfig) if f.type in ("bool", bool)}
    out = []
    for i, arg in enumerate(args):
        if i and args[i - 1] in bools and arg.lower() in ("true", "false", "1", "0", "yes", "no"):
            arg = "True" if arg.lower() in ("true", "1", "yes") else "False"
        out.append("--out-dir" if arg == "--out" else arg)
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI (tyro, from TrainConfig's fields and docstrings): --steps 3 --out DIR --lr 1e-5 --console False."""
    import tyro

    args = _normalise(list(sys.argv[1:] if argv is None else argv))
    config = tyro.cli(TrainConfig, args=args, default=_cli_defaults(args), prog="python -m exercises.lab.train",
                      description="GRPO Wordle on TorchTitan", config=(tyro.conf.FlagConversionOff,))
    result = run(config)
    print(f"wrote {result['out_dir']} in {result['wall_s']:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    raise SystemExit(main())
