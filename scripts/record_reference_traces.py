"""Record the lab's reference metric traces (what the training exercises' trend checks compare against).

    .venv/bin/python scripts/record_reference_traces.py band [--profile cpu-tiny] [--seeds 1 2 3 4 5] [--reuse]
    .venv/bin/python scripts/record_reference_traces.py long [--steps 50]          # cpu-long reward curve + PNG

`band` runs the profile (default cpu-tiny) for 3 steps per seed on this machine and writes seed_<S>.jsonl
and band.json (per step, per checked metric: min/max over seeds widened by a margin) into the folder of the
profile on this machine's device: reference/traces/<profile>/ on the CPU, reference/traces/<profile>/
<kind>-<dtype>/ on an accelerator (e.g. cpu-tiny/cuda-float32/). The band states the device kind and dtype
it was recorded on, and the grader holds only runs of that profile on that kind and dtype to it
(grading/bands.py). `--reuse` recomputes band.json from the seed traces of that folder (`--device KIND`:
traces recorded on KIND, e.g. copied from a GPU machine).
`long` writes reference/traces/cpu-long/metrics.jsonl and docs/img/lab-reward-curve.png. Format: docs/lab-training.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exercises.lab import train  # noqa: E402
from exercises.lab.device import PARAM_DTYPE, current_device, rollout_dtype  # noqa: E402
from exercises.lab.metrics import deterministic_view  # noqa: E402
from grading.bands import band_folder  # noqa: E402

TRACES = ROOT / "reference" / "traces"
PLOT = ROOT / "docs" / "img" / "lab-reward-curve.png"
BAND_FORMAT = "titangrade.metric_band/1"
#: The metrics the training exercises check, with the absolute margin added around the seeds' range.
#: Margins: half the seeds' spread plus this floor (lr is deterministic, so only float noise).
CHECKED = {
    "actor/pg_loss": 0.05,
    "actor/kl_loss": 0.002,
    "critic/score/mean": 0.15,
    "response_length/mean": 25.0,
    "actor/lr": 1e-12,
    "actor/entropy": 0.15,
    "actor/grad_norm": 0.3,
}


def _repo_relative(path: str) -> str:
    """A path inside the repository as written from its root (a band must not name the recording checkout)."""
    p = Path(path).resolve()
    return str(p.relative_to(ROOT)) if p.is_relative_to(ROOT) else path


def band_device(config: train.TrainConfig, run: dict | None = None, *, kind: str | None = None) -> dict:
    """The device kind and dtypes a band was recorded on: the seed runs' run.json where they ran here,
    else `kind` or what the profile resolves to on this machine (for --reuse of traces recorded there)."""
    if run is not None and "dtype" in run:
        return {"kind": run["device"], "dtype": run["dtype"], "rollout_dtype": run["rollout_dtype"]}
    kind = kind or (config.device if config.device != "auto" else current_device().kind)
    return {"kind": kind, "dtype": PARAM_DTYPE, "rollout_dtype": rollout_dtype(kind, config.rollout)}


def band(
    seeds: list[int], *, rerun: bool = True, profile: str = "cpu-tiny", steps: int = 3, device: str | None = None
) -> Path:
    """Run `profile` once per seed (or reuse the recorded seed_<S>.jsonl) and write the tolerance band into
    the folder of the profile on this device kind (`device`: the kind reused traces were recorded on)."""
    config = train.resolve_config({"profile": profile, "steps": steps})
    where = band_device(config, kind=device)
    out = TRACES / band_folder(profile, where["kind"], where["dtype"])
    out.mkdir(parents=True, exist_ok=True)
    runs, run_info = {}, None
    for seed in seeds:
        if not rerun:
            runs[seed] = [json.loads(line) for line in (out / f"seed_{seed}.jsonl").read_text().splitlines()]
            continue
        with tempfile.TemporaryDirectory() as tmp:
            result = train.run({"profile": profile, "steps": steps, "seed": seed, "out_dir": tmp, "console": False})
        run_info = result["run"]
        records = [deterministic_view(r) for r in result["metrics"]]
        (out / f"seed_{seed}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        runs[seed] = records
        print(
            f"seed {seed}: score/mean {[round(r['critic/score/mean'], 3) for r in records]} in {result['wall_s']:.1f}s",
            flush=True,
        )
    step_ids = [r["step"] for r in runs[seeds[0]]]
    metrics = {}
    for name, floor in CHECKED.items():
        per_step = {}
        for i, step in enumerate(step_ids):
            values = [runs[s][i][name] for s in seeds]
            spread = max(values) - min(values)
            margin = 0.5 * spread + floor
            per_step[str(step)] = {"lo": min(values) - margin, "hi": max(values) + margin, "values": values}
        metrics[name] = per_step
    recorded = band_device(config, run_info, kind=device)
    if (recorded["kind"], recorded["dtype"]) != (where["kind"], where["dtype"]):
        raise SystemExit(f"the runs used {recorded['kind']}/{recorded['dtype']}, not {where['kind']}/{where['dtype']}")
    doc = {
        "format": BAND_FORMAT,
        "profile": profile,
        "device": recorded,
        "command": f"python -m exercises.lab.train --profile {profile} --steps {steps} --seed S",
        "seeds": seeds,
        "steps": step_ids,
        "margin_rule": "lo/hi = min/max over seeds -/+ (0.5 * (max - min) + floor[metric])",
        "margin_floor": CHECKED,
        "config": {
            k: _repo_relative(v) if k == "model_path" else v
            for k, v in dataclasses.asdict(config).items()
            if k != "out_dir"
        },
        "metrics": metrics,
    }
    path = out / "band.json"
    path.write_text(json.dumps(doc, indent=2) + "\n")
    return path


def long_run(steps: int, lr: float | None) -> Path:
    """The cpu-long profile for `steps` steps; keeps its metrics and plots the reward curve."""
    out = TRACES / "cpu-long"
    out.mkdir(parents=True, exist_ok=True)
    overrides = {"profile": "cpu-long", "steps": steps, "out_dir": str(out / "run"), "console": True}
    if lr is not None:
        overrides["lr"] = lr
    result = train.run(overrides)
    (out / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in result["metrics"]))
    (out / "run.json").write_text(json.dumps(result["run"], indent=2) + "\n")
    for name in ("metrics.jsonl", "run.json"):
        (out / "run" / name).unlink(missing_ok=True)
    (out / "run").rmdir()
    plot(result["metrics"], PLOT)
    return out / "metrics.jsonl"


def plot(records: list[dict], path: Path) -> None:
    """critic/score/mean per step with a 5-step moving average (matplotlib Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["step"] for r in records]
    score = [r["critic/score/mean"] for r in records]
    avg = [sum(score[max(0, i - 4) : i + 1]) / len(score[max(0, i - 4) : i + 1]) for i in range(len(score))]
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=110)
    ax.plot(steps, score, color="#9ab", lw=1, marker=".", label="critic/score/mean")
    ax.plot(steps, avg, color="#c33", lw=2, label="5-step moving average")
    ax.set_xlabel("training step")
    ax.set_ylabel("Wordle reward (0 to 2.2)")
    ax.set_title("Lab GRPO on TorchTitan (cpu-long, 2 CPU ranks, FSDP2 on gloo)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what", required=True)
    b = sub.add_parser("band")
    b.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    b.add_argument("--profile", default="cpu-tiny", help="the lab profile to record (cpu-tiny, cuda-small, ...)")
    b.add_argument("--steps", type=int, default=3, help="steps per seed (the training exercises run 3)")
    b.add_argument("--reuse", action="store_true", help="recompute band.json from the recorded seed traces")
    b.add_argument("--device", choices=["cpu", "cuda", "npu"], help="with --reuse: the kind the traces were recorded on")
    lg = sub.add_parser("long")
    lg.add_argument("--steps", type=int, default=50)
    lg.add_argument("--lr", type=float, default=None)
    args = parser.parse_args(argv)
    if args.what == "band":
        if args.device and not args.reuse:
            parser.error("--device names where reused traces were recorded; a new recording uses this machine's")
        path = band(args.seeds, rerun=not args.reuse, profile=args.profile, steps=args.steps, device=args.device)
    else:
        path = long_run(args.steps, args.lr)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
