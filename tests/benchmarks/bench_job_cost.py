"""Cost of one light grading, engine only (a script, not a test): CPU seconds (every process, kernels included)
and wall seconds per job, each light course exercise's solution graded in turn with a cold kernel.

    sudo .venv/bin/python tests/benchmarks/bench_job_cost.py [--code CHECKOUT ...] [--rounds 2] [--sandbox bwrap]

Each (checkout, round) runs in a fresh process with PYTHONPATH at that checkout, interleaved A B A B, so a
"before" checkout (e.g. main in a `git worktree` of its own) and this one share the machine's state. CPU comes
from a cpuacct control group of the process (cgroup v1, root): rusage would miss the sandboxed kernels, which
bwrap's pid namespace never reaps into ours. No database, no worker: what bench_throughput.py adds on top is
the queue and the pool hand-off.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def child(sandbox: str) -> None:
    sys.path.insert(0, str(Path.cwd()))
    sys.path.insert(0, str(REPO / "tests" / "benchmarks"))
    from bench_throughput import CpuMeter, light_exercises

    from grading.exercise import Catalogue
    from grading.pipeline import grade_notebook
    from grading.sandbox import make_sandbox

    meter = CpuMeter()
    catalogue = Catalogue()
    exercises = light_exercises(catalogue)
    box = make_sandbox(sandbox)
    first = exercises[0]
    grade_notebook(first.solution_path.read_bytes(), exercise_id=first.id, catalogue=catalogue, sandbox=box)
    cpu0, t0, bad = meter.read_s(), time.perf_counter(), []
    for ex in exercises:
        r = grade_notebook(ex.solution_path.read_bytes(), exercise_id=ex.id, catalogue=catalogue, sandbox=box)
        if r.score != r.max_score:
            bad.append(f"{ex.id}: {r.score} {r.message[:80]}")
    n = len(exercises)
    print(
        f"RESULT {(meter.read_s() - cpu0) / n:.3f} {(time.perf_counter() - t0) / n:.3f} {os.getloadavg()[0]:.1f} {bad}"
    )
    meter.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--code", nargs="*", default=[], help="other checkouts to measure side by side (before)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--sandbox", default="bwrap", choices=("bwrap", "unsafe-local"))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.sandbox)
        return 0
    print(f"uptime: {os.popen('uptime').read().strip()}; {os.cpu_count()} CPUs; sandbox {args.sandbox}")
    for _ in range(args.rounds):
        for code in [*(Path(c).resolve() for c in args.code), REPO]:
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", "--sandbox", args.sandbox]
            proc = subprocess.run(cmd, env=dict(os.environ, PYTHONPATH=str(code)), cwd=str(code),
                                  capture_output=True, text=True, timeout=1800)  # fmt: skip
            line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
            if line is None:
                raise SystemExit(f"{code} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
            cpu, wall, load, bad = line.split(" ", 4)[1:]
            label = "this" if code == REPO else code.name
            print(f"{label:>12}: CPU {cpu} s/job, wall {wall} s/job, load {load}, not full marks: {bad}", flush=True)
    print(f"uptime: {os.popen('uptime').read().strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
