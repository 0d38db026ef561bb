"""Grader peak RSS under the channel and timer attacks of issue 9 (a script, not a test).

    sudo .venv/bin/python tests/benchmarks/bench_hostile_channels.py [--code /path/to/checkout] [NAME ...]

Each attack notebook (tests/fixtures/notebooks/malicious/, built by hostile.py) is graded end to end in
the bwrap sandbox in a fresh Python process, so its ru_maxrss is the grader's own peak for that attack
alone. A light honest notebook is the baseline. `--code` grades with another checkout's engine (e.g. the
main branch, for the "before" column); the notebooks and catalogue always come from this checkout.
Prints one row per attack: peak RSS in MB, its ratio to the baseline, wall time, status, limits hit.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "notebooks" / "malicious"
sys.path.insert(0, str(FIXTURES))
from hostile import CHANNEL_ATTACKS, TIMER_ATTACKS  # noqa: E402

BASELINE = "__honest__"
CHILD = r'''
import json, resource, sys, time
from pathlib import Path
fixtures, name = Path(sys.argv[1]), sys.argv[2]
from grading.exercise import Catalogue
from grading.pipeline import grade_notebook
from grading.sandbox import make_sandbox
cat = Catalogue(fixtures / "catalogue" / "exercises", fixtures / "catalogue" / "reference")
if name == "__honest__":
    text = (fixtures / "catalogue" / "exercises" / "ch05" / "sbx_attack" / "sbx_attack.ipynb").read_text()
    text = text.replace("x = None", "x = 6 * 7")
else:
    text = (fixtures / f"{name}.ipynb").read_text().replace("@@HOSTSOCK@@", "/nonexistent")
started = time.monotonic()
r = grade_notebook(text, catalogue=cat, sandbox=make_sandbox("bwrap"))
print(json.dumps({"rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "wall_s": round(time.monotonic() - started, 1), "status": r.status.value, "score": r.score,
                  "limits": r.limits_hit}))
'''


def measure(name: str, code: Path, timeout_s: float, python: Path | None = None) -> dict:
    python = python or code / ".venv" / "bin" / "python"
    try:
        proc = subprocess.run([str(python), "-c", CHILD, str(FIXTURES), name], cwd=code, capture_output=True,
                              text=True, timeout=timeout_s, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(code)})
    except subprocess.TimeoutExpired:
        return {"error": f"still running after {timeout_s:g} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {"error": proc.stderr.strip().splitlines()[-1:]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--code", type=Path, default=REPO, help="checkout whose engine grades")
    parser.add_argument("--python", type=Path, help="interpreter (default: the checkout's .venv)")
    parser.add_argument("--timeout", type=float, default=400)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args()
    names = args.names or [BASELINE, *CHANNEL_ATTACKS, *TIMER_ATTACKS]
    base = None
    print(f"engine: {args.code}")
    print(f"{'attack':24} {'peak RSS':>9} {'x base':>7} {'wall':>7}  status / limits")
    for name in names:
        row = measure(name, args.code, args.timeout, args.python)
        if "error" in row:
            print(f"{name:24} {row['error']}")
            continue
        base = base or (row["rss_mb"] if name == BASELINE else None)
        ratio = f"{row['rss_mb'] / base:.2f}" if base else "-"
        print(f"{name:24} {row['rss_mb']:7.0f}MB {ratio:>7} {row['wall_s']:6.1f}s  {row['status']} "
              f"{row['score']:g} {row['limits']}", flush=True)


if __name__ == "__main__":
    main()
