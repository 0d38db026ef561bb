"""`titangrade exercises mutants [ID ...]` and `validate --mutants`: mutation testing of the exercises.

Exit codes as validate's (grading/authoring/cli.py): 0 every exercise graded kills at least the goal of its
non-equivalent mutants, 1 an exercise under the goal or an authoring error (a stale EQUIVALENT entry),
2 bad command-line input, 3 nothing to fix but some mutant (or solution) got no verdict from the host.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from grading.errors import GraderFault

if TYPE_CHECKING:  # imported when mutants run: grading/authoring/mutation.py loads the whole engine
    from grading.authoring.build import Outputs
    from grading.authoring.mutation import ExerciseMutants
    from grading.exercise import Catalogue

EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE, EXIT_NOT_GRADED = 0, 1, 2, 3
LIGHT = "light"  # grading/authoring/mutation.py: the kernel family graded by default


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options `mutants` and `validate --mutants` share."""
    parser.add_argument("--sample", type=int, metavar="N", help="grade a random sample of N mutants per exercise")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="the sample's seed (default 0)")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="grade N mutants at a time (default 1)")
    parser.add_argument(
        "--include-training",
        action="store_true",
        help=f"also grade exercises whose kernel_family is not {LIGHT} (torch, training: minutes per grading)",
    )


def register(ex_sub: argparse._SubParsersAction, common: Callable[[argparse.ArgumentParser], None]) -> None:
    mut = ex_sub.add_parser(
        "mutants",
        help="build, then grade mutants of each master's solution regions: which checks kill them, which survive",
    )
    mut.add_argument("ids", nargs="*", metavar="ID", help="exercise ids (default: all)")
    mut.add_argument("--sandbox", default="auto", help="auto | bwrap | unsafe-local")
    mut.add_argument("--json", action="store_true", help="print the figures as JSON (progress goes to stderr)")
    add_options(mut)
    common(mut)
    mut.set_defaults(func=cmd_mutants)


def usage_error(args: argparse.Namespace) -> str:
    if args.sample is not None and args.sample < 1:
        return "--sample must be at least 1"
    if args.jobs < 1:
        return "--jobs must be at least 1"
    return ""


def cmd_mutants(args: argparse.Namespace) -> int:
    from grading.authoring.cli import _selected, build_all

    problem = usage_error(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    picked = _selected(args)
    if picked is None:
        return EXIT_USAGE
    catalogue, exercises = picked
    say = _stderr if args.json else _stdout
    _, outputs, errors = build_all(exercises, fixtures_root=args.fixtures_root, check=False, say=say)
    if errors:
        print("\n".join(["", "build failed; nothing graded:", *errors]), file=sys.stderr)
        return EXIT_PROBLEMS
    return mutants_of(outputs, catalogue=catalogue, args=args, say=say)


def mutants_of(
    outputs: list[Outputs], *, catalogue: Catalogue, args: argparse.Namespace, say: Callable[[str], None]
) -> int:
    """Grade the mutants of built exercises, print the report (or JSON), return the exit code."""
    from grading.authoring.mutation import run_mutants
    from grading.sandbox import make_sandbox

    try:  # a warm kernel waits while the previous mutant is graded: ~0.3 s a light grading instead of ~1 s
        sandbox = make_sandbox(args.sandbox, prewarm=dict.fromkeys(("light", "torch", "training"), args.jobs))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except GraderFault as exc:
        print(f"error: no sandbox, nothing graded: {exc}", file=sys.stderr)
        return EXIT_NOT_GRADED
    started = time.monotonic()
    reports: list[ExerciseMutants] = []
    try:
        for i, out in enumerate(outputs, start=1):
            say(f"[{i}/{len(outputs)}] mutants of {out.exercise.id}")
            reports.append(
                run_mutants(
                    out,
                    catalogue=catalogue,
                    sandbox=sandbox,
                    say=say,
                    sample=args.sample,
                    seed=args.seed,
                    jobs=args.jobs,
                    include_training=args.include_training,
                )
            )
    finally:
        close = getattr(sandbox, "close", None)
        if close is not None:
            close()
    took = time.monotonic() - started
    if getattr(args, "json", False):
        print(json.dumps(as_json(reports, args=args, duration_s=took), indent=1, ensure_ascii=False))
    else:
        print(text_report(reports, duration_s=took))
    problems = [p for r in reports for p in r.problems]
    for p in problems:
        print(p, file=sys.stderr)
    not_graded = [(r.exercise_id, o) for r in reports for o in r.not_graded]
    if not_graded:
        ids = " ".join(dict.fromkeys(i for i, _ in not_graded))
        print(
            f"not graded, retry: {len(not_graded)} mutant(s) got no verdict because the host was busy or the grader "
            f"faulted, not because of the exercise (first: {not_graded[0][1].mutant.id}: {not_graded[0][1].note}); "
            f"run `titangrade exercises mutants {ids}` again later",
            file=sys.stderr,
        )
    return EXIT_PROBLEMS if problems else EXIT_NOT_GRADED if not_graded else EXIT_OK


def as_json(reports: list[ExerciseMutants], *, args: argparse.Namespace, duration_s: float) -> dict:
    from grading.authoring.mutation import GOAL, Verdict

    rows = [r.as_json() for r in reports]
    graded = [r for r in rows if not r["skipped"]]
    total = {v.value: sum(r[v.value] for r in graded) for v in Verdict}
    killed, survived = total["killed"], total["survived"]
    return {
        "goal": GOAL,
        "sample": args.sample,
        "seed": args.seed,
        "include_training": args.include_training,
        "duration_s": round(duration_s, 1),
        "total": {
            "exercises": len(graded),
            "generated": sum(r["generated"] for r in graded),
            **total,
            "score": round(killed / (killed + survived), 4) if killed + survived else None,
        },
        "exercises": rows,
    }


def _stdout(text: str) -> None:
    print(text, flush=True)


def _stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def text_report(reports: list[ExerciseMutants], *, duration_s: float) -> str:
    from grading.authoring.cli import _rel, _table
    from grading.authoring.mutation import GOAL, Verdict, describe

    parts: list[str] = []
    for r in reports:
        survivors = [o for o in r.outcomes if o.verdict is Verdict.SURVIVED]
        if survivors:
            parts.append(f"\nsurvivors of {r.exercise_id} (each: kill it with a case, or declare it EQUIVALENT):")
            for o in survivors:
                m = o.mutant
                parts.append(f"  {_rel(Path(r.master))}:{m.line}  {m.id}  ({describe(m.operator)}; "
                             f"checks {', '.join(r.attributed(m))})")  # fmt: skip
                parts.append(f"      - {m.before}\n      + {m.after}")
        if not r.skipped and any(o.verdict is not Verdict.NOT_SAMPLED for o in r.outcomes):
            rows = [(c, *v.values()) for c, v in r.per_check().items()]
            head: tuple[str, ...] = (
                "check",
                "attributed",
                "killed",
                "killed elsewhere",
                "survived",
                "equivalent",
                "not graded",
            )
            parts.append(f"\nper check of {r.exercise_id}:\n" + _table(head, rows))
    rows = []
    for r in reports:
        score = "-" if r.score is None else f"{r.score:.1%}"
        result = (
            f"skipped ({r.kernel_family})" if r.skipped
            else "FAILED" if r.problems else "NOT GRADED" if r.not_graded
            else "ok" if r.meets_goal is not False else "UNDER GOAL"
        )  # fmt: skip
        rows.append(
            (r.exercise_id, len(r.outcomes), *(r.count(v) for v in Verdict), score, f"{r.duration_s:.0f} s", result)
        )
    head = ("exercise", "generated", "killed", "survived", "equivalent", "not graded", "not sampled", "killed %",
            "time", "result")  # fmt: skip
    parts.append("\n" + _table(head, rows))
    skipped = [r.exercise_id for r in reports if r.skipped]
    if skipped:
        parts.append(f"skipped (kernel_family not {LIGHT}: pass --include-training): {' '.join(skipped)}")
    parts.append(f"goal: {GOAL:.0%} of the non-equivalent graded mutants killed, per exercise; took {duration_s:.0f} s")
    return "\n".join(parts)
