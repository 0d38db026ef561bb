"""Grader peak RSS under hostile notebooks (a script, not a test):

    .venv/bin/python tests/benchmarks/bench_hostile.py [--sandbox auto|bwrap|unsafe-local] [NAME ...]

Each notebook of tests/fixtures/notebooks/hostile/ (and the exercise's reference solution, the baseline)
is graded by `titangrade grade --json` in its own subprocess; that process reports its own ru_maxrss
(RUSAGE_SELF: the grader only, not the kernel it started) when it exits. Prints one row per notebook:
exit code, status, score, limits hit, wall time and peak RSS in MB, and the ratio to the baseline.
The goal is every attack under 300 MB (docs/sandbox.md, "Grader peak RSS under attack").
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOSTILE = REPO / "tests" / "fixtures" / "notebooks" / "hostile"
BASELINE = REPO / "reference" / "ch07.wordle_reward" / "solution.ipynb"
GOAL_MB = 300
# Runs the CLI in-process and prints the process's own peak RSS on stderr, whatever the CLI returns.
_WRAPPER = """
import resource, sys
from service.cli import main
try:
    code = main(sys.argv[1:])
finally:
    print("MAXRSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def grade(path: Path, sandbox: str) -> dict:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, "grade", str(path), "--json", "--sandbox", sandbox],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - started
    rss_kb = next((int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("MAXRSS_KB")), 0)
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        out = {"error": {"code": "no JSON", "message": proc.stderr[-300:]}}
    return {"exit": proc.returncode, "rss_mb": rss_kb / 1024, "wall_s": wall, "result": out}


def describe(result: dict) -> str:
    if "error" in result:
        return f"refused: {result['error']['code']}"
    limits = ",".join(result["limits_hit"]) or "-"
    return f"{result['status']} {result['score']:g}/{result['max_score']:g} limits={limits}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="attack notebooks (default: all in the hostile folder)")
    parser.add_argument("--sandbox", default="auto")
    args = parser.parse_args()
    names = args.names or sorted(p.stem for p in HOSTILE.glob("*.ipynb"))
    base = grade(BASELINE, args.sandbox)
    print(f"{'notebook':<22} {'exit':>4} {'peak RSS MB':>11} {'x base':>6} {'wall s':>6}  result")
    print(f"{'(solution baseline)':<22} {base['exit']:>4} {base['rss_mb']:>11.0f} {1:>6.2f} {base['wall_s']:>6.1f}  "
          f"{describe(base['result'])}")
    worst = 0.0
    for name in names:
        row = grade(HOSTILE / f"{name}.ipynb", args.sandbox)
        worst = max(worst, row["rss_mb"])
        print(f"{name:<22} {row['exit']:>4} {row['rss_mb']:>11.0f} {row['rss_mb'] / base['rss_mb']:>6.2f} "
              f"{row['wall_s']:>6.1f}  {describe(row['result'])}")
    print(f"worst peak RSS {worst:.0f} MB ({'under' if worst < GOAL_MB else 'OVER'} the {GOAL_MB} MB goal)")
    return 0 if worst < GOAL_MB else 1


if __name__ == "__main__":
    sys.exit(main())
