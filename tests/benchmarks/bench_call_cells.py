"""Kernel CPU of a grading's cells of calls (a script, not a test): every check's calls in one cell per part
(public, hidden) against one cell per check part (`GraderPlan.isolated`, the layout before), alternating in
one kernel so the VM's drift cannot favour either.

    .venv/bin/python tests/benchmarks/bench_call_cells.py [--exercise ch07.wordle_reward] [--rounds 20]

The kernel is this tree's `_kernel_boot.py` outside any sandbox (the cells' cost, not the sandbox's), with
the exercise's solution and the grader's seed cell run first. Each round runs each layout's cells 5 times
(order alternating between rounds) and reads the kernel process's CPU from /proc.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchkit import ipc_connection_file, process_cpu_s

REPO = Path(__file__).resolve().parents[2]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--exercise", default="ch07.wordle_reward")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    import nbformat
    from jupyter_client import BlockingKernelClient

    from grading.exercise import Catalogue
    from grading.steps import grader_cells

    exercise = Catalogue().get(args.exercise)
    plan = grader_cells.plan(exercise, reference=exercise.reference())
    layouts = {
        "one cell per part": [c.source for c in plan.extract if c.parts],
        "one cell per check part": [c.source for c in plan.isolated().extract if c.parts],
    }
    work = Path(tempfile.mkdtemp(prefix="tg-callcells-"))
    connection = ipc_connection_file(work)
    kernel = subprocess.Popen(
        [sys.executable, str(REPO / "grading" / "sandbox" / "_kernel_boot.py"), "-f", str(connection)],
        env=dict(os.environ, PYTHONPATH=str(REPO), HOME=str(work)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    client = BlockingKernelClient()
    client.load_connection_file(str(connection))
    client.start_channels()
    try:
        client.wait_for_ready(60)

        def run(source: str) -> None:
            reply = client.execute_interactive(source, store_history=False, timeout=120, output_hook=lambda m: None)
            if reply["content"]["status"] != "ok":
                raise SystemExit(f"a cell failed: {reply['content'].get('ename')}")

        run(plan.seed.source)
        solution = nbformat.read(exercise.reference_dir / "solution.ipynb", 4)
        for cell in solution.cells:
            if cell.cell_type == "code":
                run(cell.source)
        spent: dict[str, list[float]] = {name: [] for name in layouts}
        for rnd in range(args.rounds):
            for name in list(layouts) if rnd % 2 == 0 else list(reversed(layouts)):
                before = process_cpu_s(kernel.pid)
                for _ in range(5):
                    for source in layouts[name]:
                        run(source)
                spent[name].append((process_cpu_s(kernel.pid) - before) / 5)
    finally:
        client.stop_channels()
        kernel.kill()
        kernel.wait()
    print(f"{args.exercise}, {args.rounds} rounds, kernel CPU per grading's cells of calls (median, mean):")
    for name, values in spent.items():
        median, mean = 1e3 * statistics.median(values), 1e3 * statistics.mean(values)
        print(f"  {name:24} {len(layouts[name])} cells  {median:6.1f} ms  {mean:6.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
