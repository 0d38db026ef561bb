"""Training-exercise overhead (a script, not a test): what grading adds to a real 2-rank GRPO run.

    .venv/bin/python tests/benchmarks/bench_training_overhead.py [--rounds 3] [--sandbox auto]

Side by side, interleaved (bare, graded, bare, graded, ...), each a whole process:
- bare:   a fresh Python process that runs exactly the solution's training call,
          `exercises.lab.train.run(config)` with the config cell of reference/ch07.three_step_training;
- graded: `titangrade grade reference/ch07.three_step_training/solution.ipynb --json` (sandbox as in
          production: bwrap where usable), which must give full marks.
Reported: median wall seconds of each, the ratio graded/bare, and the load average. Goal (issue 18):
graded at most 1.10x the bare run.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOLUTION = REPO / "reference" / "ch07.three_step_training" / "solution.ipynb"
EXERCISE = "ch07.three_step_training"


def solution_config() -> dict:
    """The solution notebook's own `config = {...}` cell, read as a literal (not executed here)."""
    nb = json.loads(SOLUTION.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        if cell["cell_type"] == "code" and source.lstrip().startswith("config = {"):
            tree = ast.parse(source)
            for node in tree.body:
                if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "config":
                    return ast.literal_eval(node.value)
    raise SystemExit(f"no `config = {{...}}` cell in {SOLUTION}")


def bare(config: dict) -> float:
    with tempfile.TemporaryDirectory(prefix="tg-bare-") as tmp:
        code = (
            "import json, sys\nfrom exercises.lab.train import run\n"
            "cfg = json.loads(sys.argv[1]); cfg['out_dir'] = sys.argv[2]\nrun(cfg)\n"
        )
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", code, json.dumps(config), str(Path(tmp) / "run")],
            cwd=REPO,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return time.perf_counter() - t0


def graded(sandbox: str) -> float:
    cli = Path(sys.executable).with_name("titangrade")
    t0 = time.perf_counter()
    out = subprocess.run(
        [str(cli), "grade", str(SOLUTION), "--exercise", EXERCISE, "--json", "--sandbox", sandbox],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - t0
    result = json.loads(out.stdout)
    if result["status"] != "graded" or result["score"] != result["max_score"]:
        raise SystemExit(f"the solution did not get full marks: {result['status']} {result['score']}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sandbox", default=os.environ.get("TITANGRADE_SANDBOX", "auto"))
    args = parser.parse_args()
    config = solution_config()
    walls: dict[str, list[float]] = {"bare": [], "graded": []}
    load0 = os.getloadavg()[0]
    for i in range(args.rounds):
        walls["bare"].append(bare(config))
        walls["graded"].append(graded(args.sandbox))
        print(f"round {i + 1}: bare {walls['bare'][-1]:.2f} s, graded {walls['graded'][-1]:.2f} s", flush=True)
    b, g = statistics.median(walls["bare"]), statistics.median(walls["graded"])
    print(f"\n{EXERCISE}, {args.rounds} rounds interleaved, sandbox={args.sandbox}")
    print(f"load average {load0:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"| bare lab run (median) | {b:.2f} s |")
    print(f"| titangrade grade (median) | {g:.2f} s |")
    print(f"| graded / bare | {g / b:.3f}x (goal <= 1.10x) |")


if __name__ == "__main__":
    main()
