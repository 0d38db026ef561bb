"""Print the README's exercise table from the catalogue; with --measure, grade each solution once
(default sandbox) and report its wall time on this machine; with --mutants FILE, fill the mutation column
from a `titangrade exercises mutants --json` report.

    .venv/bin/python scripts/exercise_table.py [--measure] [--mutants FILE]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from grading.exercise import Catalogue  # noqa: E402
from grading.pipeline import grade_notebook  # noqa: E402


def resources(ex) -> str:
    r = ex.manifest.resources
    family = ex.manifest.kernel_family
    if r.devices:  # e.g. "2 NPUs (hccl), else 2 GPUs (nccl), else 2 CPU ranks (gloo)"
        names = {"npu": "NPUs (hccl)", "cuda": "GPUs (nccl)"}
        where = [f"{r.devices} {names[k]}" for k in r.accelerator_kinds]
        if r.cpu_fallback:
            where.append(f"{r.world_size} CPU ranks (gloo)")
        return f"{family}, " + ", else ".join(where)
    return f"{family}, " + (f"{r.world_size} ranks (gloo)" if r.world_size > 1 else "1 process")


def mutation_cell(report: dict | None) -> str:
    """Killed of the graded non-equivalent mutants, and how many were graded when it was a sample."""
    if report is None:
        return "-"
    if report.get("skipped"):
        return f"not graded ({report['generated']} mutants, {report['kernel_family']})"
    graded = report["killed"] + report["survived"]
    if not graded:
        return "none graded"
    share = f"{100 * report['killed'] / graded:.0f}% ({report['killed']}/{graded}"
    share += f" sampled of {report['generated'] - report['equivalent']})" if report.get("not_sampled") else ")"
    return share + (f", {report['equivalent']} equivalent" if report["equivalent"] else "")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--measure", action="store_true", help="grade each solution and time it")
    parser.add_argument("--mutants", type=Path, help="a `titangrade exercises mutants --json` report")
    args = parser.parse_args()
    mutants = {}
    if args.mutants:
        mutants = {e["id"]: e for e in json.loads(args.mutants.read_text(encoding="utf-8"))["exercises"]}
    rows = [
        "| id | ch | what is checked | points | resources | CPU run time | mutants killed |",
        "|---|---|---|---|---|---|---|",
    ]
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
                    f"{resources(ex)} | {runtime} | {mutation_cell(mutants.get(ex.id))} |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
