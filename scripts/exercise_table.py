"""Print the README's exercise table from the catalogue; with --measure, grade each solution once
(default sandbox) and report its wall time on this machine.

    .venv/bin/python scripts/exercise_table.py [--measure]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grading.exercise import Catalogue  # noqa: E402
from grading.pipeline import grade_notebook  # noqa: E402


def resources(ex) -> str:
    r = ex.manifest.resources
    ranks = f"{r.world_size} ranks (gloo)" if r.world_size > 1 else "1 process"
    return f"{ex.manifest.kernel_family}, {ranks}" + (f", {r.devices} devices" if r.devices else "")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--measure", action="store_true", help="grade each solution and time it")
    args = parser.parse_args()
    rows = ["| id | ch | what is checked | points | resources | CPU run time |", "|---|---|---|---|---|---|"]
    for ex in Catalogue():
        checked = "; ".join(f"{c.title.en if c.title else c.name} ({c.points:g})" for c in ex.manifest.checks)
        runtime = "-"
        if args.measure:
            started = time.monotonic()
            result = grade_notebook(ex.solution_path.read_bytes(), exercise_id=ex.id)
            elapsed = time.monotonic() - started
            if result.score != ex.manifest.max_score:
                print(f"{ex.id}: solution scored {result.score}/{ex.manifest.max_score}", file=sys.stderr)
                return 1
            runtime = f"{elapsed:.0f} s" if elapsed >= 10 else f"{elapsed:.1f} s"
        rows.append(f"| `{ex.id}` | {ex.manifest.chapter} | {checked} | {ex.manifest.max_score:g} | "
                    f"{resources(ex)} | {runtime} |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
