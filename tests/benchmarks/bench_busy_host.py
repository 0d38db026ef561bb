"""A busy host is never charged to the learner (issue 24 §4; a script, not a test: the load decides timing).

    sudo .venv/bin/python tests/benchmarks/bench_busy_host.py [--rounds 1] [--hog-runs 2 --spinners 4]
        [--exercise ch07.three_step_training ...] [--no-loop]

Beside `--hog-runs` sandboxed runs that each spin `--spinners` busy processes (CPU hogs in other control
groups, at the same weight as every run: with 2 runs of 4 on 2 cores the load is 8 before anything else),
each exercise's solution is graded in the bwrap sandbox with control groups, and a learner's endless loop
(the test-only exercise ch05.sbx_timers) is graded once. Wanted: every solution ends at full marks or
not_gradable (a grader fault the service requeues), never lower; the loop ends as the learner's timeout
(or not_gradable where even its share of the CPU could not reach what its limit implies). Reported per
row: outcome, score, wall seconds, and the 1-minute load average before and after.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import nbformat

from grading.exercise import Catalogue, Limits
from grading.pipeline import grade_notebook
from grading.result import Status
from grading.sandbox import KernelRequest
from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox

REPO = Path(__file__).resolve().parents[2]
TRAINING = ("ch05.per_tensor_param", "ch06.context_parallel", "ch07.three_step_training")
FIXTURES = REPO / "tests" / "fixtures" / "notebooks" / "malicious" / "catalogue"
SPIN = (
    "import multiprocessing as mp, os, time\n"
    "def spin():\n"
    "    os.setsid()\n"
    "    while True: pass\n"
    "procs = [mp.Process(target=spin, daemon=True) for _ in range({count})]\n"
    "[p.start() for p in procs]\n"
)


def load1() -> float:
    return os.getloadavg()[0]


class Hogs:
    """`runs` sandboxed kernels, each spinning `spinners` processes until closed."""

    def __init__(self, sandbox: BwrapSandbox, runs: int, spinners: int) -> None:
        self.sessions = [
            sandbox.start(KernelRequest(limits=Limits(max_processes=64, cpu_time_s=3600, run_timeout_s=7200)))
            for _ in range(runs)
        ]
        self.clients = []
        for session in self.sessions:
            kc = session.km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=60)
            kc.execute(SPIN.format(count=spinners))
            self.clients.append(kc)

    def close(self) -> None:
        for kc in self.clients:
            kc.stop_channels()
        for session in self.sessions:
            session.close()


def loop_notebook() -> str:
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(c)
            for c in ("x = 6 * 7", "while True:\n    pass", "def double(v):\n    return 2 * v")
        ]
    )
    nb.metadata["titangrade"] = {"exercise_id": "ch05.sbx_timers"}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nbformat.writes(nb)


def row(label: str, grade) -> dict:
    before, t0 = load1(), time.perf_counter()
    result = grade()
    took = time.perf_counter() - t0
    detail = result.message[:160] if result.status is Status.NOT_GRADABLE else "; ".join(result.messages)[:160]
    if label.startswith("loop"):
        detail = "; ".join(f"cell {c.index}: {c.status}" for c in result.cells)
    out = {
        "row": label,
        "status": result.status.value,
        "score": f"{result.score:g}/{result.max_score:g}",
        "wall_s": round(took, 1),
        "load1": f"{before:.1f}-{load1():.1f}",
        "detail": detail,
    }
    print(out, flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--hog-runs", type=int, default=2)
    ap.add_argument("--spinners", type=int, default=4)
    ap.add_argument("--exercise", action="append", help="default: the training exercises")
    ap.add_argument("--no-loop", action="store_true", help="skip the learner's endless loop")
    args = ap.parse_args()
    catalogue = Catalogue()
    sandbox = BwrapSandbox(BwrapConfig(cgroups="require"))
    hogs = Hogs(sandbox, args.hog_runs, args.spinners)
    fixtures = Catalogue(FIXTURES / "exercises", FIXTURES / "reference")
    rows = []
    try:
        time.sleep(5)  # the hogs are spinning
        for rnd in range(args.rounds):
            for ex_id in args.exercise or TRAINING:
                ex = catalogue.get(ex_id)
                source = ex.solution_path.read_text(encoding="utf-8")
                rows.append(
                    row(f"{ex_id} r{rnd}", lambda s=source: grade_notebook(s, catalogue=catalogue, sandbox=sandbox))
                )
            if not args.no_loop:
                rows.append(
                    row(f"loop r{rnd}", lambda: grade_notebook(loop_notebook(), catalogue=fixtures, sandbox=sandbox))
                )
    finally:
        hogs.close()
    print("\n| row | outcome | score | wall s | load (1 min) | detail |\n|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['row']} | {r['status']} | {r['score']} | {r['wall_s']} | {r['load1']} | {r['detail']} |")
    lowered = [
        r
        for r in rows
        if not r["row"].startswith("loop")
        and r["status"] == "graded"
        and r["score"].split("/")[0] != r["score"].split("/")[1]
    ]
    lowered += [r for r in rows if not r["row"].startswith("loop") and r["status"] == "error"]
    solutions = sum(not r["row"].startswith("loop") for r in rows)
    print(f"\nsolutions scored lower than full marks: {len(lowered)} of {solutions}")


if __name__ == "__main__":
    main()
