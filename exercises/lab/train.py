"""Launch the lab's GRPO Wordle trainer on TorchTitan: `run()` for notebooks, `main()` for the CLI.

    python -m exercises.lab.train --profile cpu-tiny --steps 3 --out DIR
    exercises.lab.train.run({"profile": "cpu-tiny", "steps": 3, "out_dir": DIR})  # from a notebook

`run()` spawns the ranks itself (torch.multiprocessing, start method "spawn"; they meet through a file store
in a fresh temporary directory, not a TCP port another process could take between choosing and binding it).
What a run is lives in `exercises.lab.config`, what one rank does in `exercises.lab.trainer`; their public
names are re-exported here because notebooks and tests import them from this module.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

from exercises.lab.config import LOSS_AGG_MODES, PROFILES, TrainConfig, lr_scheduler_config, resolve_config
from exercises.lab.device import resolve

__all__ = [
    "LOSS_AGG_MODES",
    "PROFILES",
    "TrainConfig",
    "free_port",
    "lr_scheduler_config",
    "main",
    "parse_cli",
    "resolve_config",
    "run",
]
PROG = "python -m exercises.lab.train"
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def run(config_or_kwargs: TrainConfig | dict | None = None, **overrides) -> dict:
    """Train with `world_size` spawned ranks; returns {"out_dir", "metrics", "run", "wall_s"}."""
    import torch.multiprocessing as mp

    from exercises.lab.trainer import worker_main

    config = resolve_config(config_or_kwargs, **overrides)
    out_dir = Path(config.out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    # "auto" is decided once, here: a device that cannot be used fails in the caller (DeviceUnavailable
    # with the fix), not inside a spawned rank, and run.json's config names the device the ranks used
    config = dataclasses.replace(config, out_dir=str(out_dir), device=resolve(config.device, ranks=config.world_size))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tg-rendezvous-") as rendezvous:
        mp.start_processes(
            worker_main,
            args=(dataclasses.asdict(config), f"file://{rendezvous}/store"),
            nprocs=config.world_size,
            join=True,
            start_method="spawn",
        )
    wall_s = time.perf_counter() - start
    metrics = [json.loads(line) for line in (out_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    run_info = json.loads((out_dir / "run.json").read_text())
    return {"out_dir": str(out_dir), "metrics": metrics, "run": run_info, "wall_s": wall_s}


def parse_cli(argv: list[str] | None = None) -> TrainConfig:
    """The validated TrainConfig a command line asks for: `--profile` picks the defaults, every other
    TrainConfig field is a --flag over them (tyro, help text from the field docstrings)."""
    import tyro

    argv = list(sys.argv[1:] if argv is None else argv)
    # The profile decides the defaults the other flags override, so it is read before tyro parses the rest.
    pre = argparse.ArgumentParser(prog=PROG, add_help=False, allow_abbrev=False)
    pre.add_argument("--profile", default="cpu-tiny", choices=sorted(PROFILES))
    profile = pre.parse_known_args(argv)[0].profile
    config = tyro.cli(
        TrainConfig,
        args=argv,
        default=resolve_config({"profile": profile}),
        prog=PROG,
        description="GRPO Wordle on TorchTitan (the course runtime's trainer).",
        registry=_cli_registry(),
        config=(tyro.conf.FlagConversionOff,),
    )
    try:
        return resolve_config(config)
    except ValueError as exc:  # a combination no single flag's type rules out, e.g. batch vs. world size
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc


def _cli_registry():
    """Booleans take a value (`--console false`), as scripts and docs already write them."""
    from tyro.constructors import ConstructorRegistry, PrimitiveConstructorSpec, PrimitiveTypeInfo

    registry = ConstructorRegistry()

    @registry.primitive_rule
    def _bool(info: PrimitiveTypeInfo) -> PrimitiveConstructorSpec | None:
        if info.type is not bool:
            return None
        return PrimitiveConstructorSpec(
            nargs=1,
            metavar="{true,false}",
            instance_from_str=_parse_bool,
            is_instance=lambda value: isinstance(value, bool),
            str_from_instance=lambda value: [str(value).lower()],
        )

    return registry


def _parse_bool(args: list[str]) -> bool:
    word = args[0].lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ValueError(f"expected true or false, got {args[0]!r}")


def main(argv: list[str] | None = None) -> int:
    """CLI: every TrainConfig field is a --flag (e.g. --steps 3 --out DIR --lr 1e-5 --console false)."""
    result = run(parse_cli(argv))
    print(f"wrote {result['out_dir']} in {result['wall_s']:.1f}s", flush=True)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    raise SystemExit(main())
