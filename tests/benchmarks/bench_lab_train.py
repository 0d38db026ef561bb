"""Lab trainer benchmark (a script, not a test): the cpu-tiny 3-step run under the course's FSDP2 knobs, side by side.

    .venv/bin/python tests/benchmarks/bench_lab_train.py [--repeats 2]

Variants: reshard_after_forward always (the course) vs never, and param_offload off vs on
(CPUOffloadPolicy(pin_memory=False) on CPU). Reported per variant: median wall seconds of `run()`
(spawn + setup + 3 steps), median timing_per_token_ms/update_actor over steps 2-3 (step 1 warms up),
peak RSS per rank (ru_maxrss), and each as a ratio to the course's setting. Take numbers on a quiet machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from exercises.lab import train  # noqa: E402

VARIANTS = {
    "always (course)": {"reshard_after_forward": "always"},
    "never": {"reshard_after_forward": "never"},
    "always + param_offload": {"reshard_after_forward": "always", "param_offload": True},
}


def measure(overrides: dict, repeats: int) -> dict:
    walls, per_token, rss = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as tmp:
            result = train.run({"profile": "cpu-tiny", "out_dir": tmp, "console": False, **overrides})
        walls.append(result["wall_s"])
        per_token += [r["timing_per_token_ms/update_actor"] for r in result["metrics"][1:]]
        rss.append(max(result["run"]["peak_rss_mb_per_rank"]))
    return {"wall_s": statistics.median(walls), "update_actor_ms_per_token": statistics.median(per_token),
            "peak_rss_mb_per_rank": max(rss)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    results = {name: measure(overrides, args.repeats) for name, overrides in VARIANTS.items()}
    base = results["always (course)"]
    print(f"{'variant':<26}{'wall s':>9}{'ratio':>7}{'ms/token':>10}{'ratio':>7}{'RSS MB':>9}{'ratio':>7}")
    for name, r in results.items():
        print(f"{name:<26}{r['wall_s']:>9.2f}{r['wall_s'] / base['wall_s']:>7.2f}"
              f"{r['update_actor_ms_per_token']:>10.4f}"
              f"{r['update_actor_ms_per_token'] / base['update_actor_ms_per_token']:>7.2f}"
              f"{r['peak_rss_mb_per_rank']:>9.0f}{r['peak_rss_mb_per_rank'] / base['peak_rss_mb_per_rank']:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
