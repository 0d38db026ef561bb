"""Every mutant of every exercise, graded (issue 29 item 1): per-exercise scores and the time a full run takes.

    nice -n 10 .venv/bin/python tests/benchmarks/bench_mutants.py [ID ...] [--include-training] [--jobs N]
        [--sample N] [--out mutants.json]

A script, not a test (not run by CI; CI grades a bounded sample: tests/grading/authoring/
test_authoring_mutants_sample.py). Each exercise runs as its own `titangrade exercises mutants ID --json`
process, so a finished exercise's figures are kept (rewritten to --out after each one) even if a later one
is stopped. Exercises whose kernel_family is not light are skipped unless --include-training (minutes per
grading). Prints, per exercise, the mutants generated, killed, survived, declared equivalent and not
graded, the killed fraction against the 90% goal, the wall time and the seconds per graded mutant; then
the total. Take the times on a quiet machine: a grading is mostly kernel start-up and CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from grading.exercise import Catalogue  # noqa: E402

COLUMNS = ("generated", "killed", "survived", "equivalent", "not_graded", "not_sampled")


def run_one(exercise_id: str, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, "-m", "service.cli", "exercises", "mutants", exercise_id, "--json", "--jobs", str(args.jobs)]
    if args.include_training:
        cmd.append("--include-training")
    if args.sample:
        cmd += ["--sample", str(args.sample), "--seed", str(args.seed)]
    if args.sandbox:
        cmd += ["--sandbox", args.sandbox]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    try:
        report = json.loads(done.stdout)["exercises"][0]
    except (json.JSONDecodeError, KeyError, IndexError):
        tail = done.stderr.strip().splitlines()[-3:]
        return {"id": exercise_id, "error": f"exit {done.returncode}: {' | '.join(tail)}"}
    report["exit"] = done.returncode
    return report


def merged(rows: list[dict], args: argparse.Namespace, took_s: float) -> dict:
    graded = [r for r in rows if "error" not in r and not r.get("skipped")]
    total = {c: sum(r[c] for r in graded) for c in COLUMNS}
    judged = total["killed"] + total["survived"]
    return {
        "goal": 0.9,
        "sample": args.sample,
        "seed": args.seed,
        "include_training": args.include_training,
        "duration_s": round(took_s, 1),
        "total": {"exercises": len(graded), **total, "score": round(total["killed"] / judged, 4) if judged else None},
        "exercises": rows,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ids", nargs="*", help="exercise ids (default: all)")
    ap.add_argument("--include-training", action="store_true")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--sample", type=int)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sandbox", help="auto (default) | bwrap | unsafe-local")
    ap.add_argument("--out", type=Path, help="write the merged --json figures here after each exercise")
    args = ap.parse_args()
    ids = args.ids or [ex.id for ex in Catalogue()]
    started = time.monotonic()
    rows: list[dict] = []
    print(f"{'exercise':28} {'family':9} " + " ".join(f"{c:>11}" for c in COLUMNS) + "    score     time  s/mutant")
    for exercise_id in ids:
        row = run_one(exercise_id, args)
        rows.append(row)
        if args.out:
            args.out.write_text(json.dumps(merged(rows, args, time.monotonic() - started), indent=1) + "\n")
        if "error" in row:
            print(f"{exercise_id:28} ERROR {row['error']}", flush=True)
            continue
        score = "-" if row["score"] is None else f"{row['score']:.1%}"
        per = row["grading_s_per_mutant"]
        line = f"{exercise_id:28} {row['kernel_family']:9} " + " ".join(f"{row[c]:>11}" for c in COLUMNS)
        tail = "skipped" if row["skipped"] else f"{score:>8} {row['duration_s']:>7.0f}s {per if per else '-':>9}"
        print(f"{line}    {tail}", flush=True)
    summary = merged(rows, args, time.monotonic() - started)
    total = summary["total"]
    score = "-" if total["score"] is None else f"{total['score']:.1%}"
    print(
        f"\n{total['exercises']} exercises graded, {total['generated']} mutants, killed {score}; "
        f"full run {summary['duration_s']:.0f} s (load average now {os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
