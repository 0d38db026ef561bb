"""`titangrade exercises build | validate | new`: the author's commands (grading/cli.py registers them).

Exit codes: 0 all good, 1 an authoring error or a stale/failed exercise (each reported with file,
line and fix), 2 bad command-line input, 3 (`validate` only) nothing to fix in the exercise, but some
notebook could not be graded: the host was busy (no free sandbox user or control group) or the grader
faulted, even after `--retries`; run it again.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from grading.authoring import mutants_cli
from grading.authoring.build import DEFAULT_FIXTURES_ROOT, Outputs, master_path, render
from grading.authoring.master import AuthoringError
from grading.errors import GraderFault
from grading.exercise import Catalogue, Exercise

if TYPE_CHECKING:
    from grading.authoring.validate import Row  # imported when validate runs: it loads the whole engine

EXIT_PROBLEMS, EXIT_USAGE, EXIT_NOT_GRADED = 1, 2, 3  # see the module docstring


def register(ex_sub: argparse._SubParsersAction, catalogue_args: Callable[[argparse.ArgumentParser], None]) -> None:
    build = ex_sub.add_parser(
        "build",
        help="write templates, solutions, answer files and mistake fixtures from the masters in reference/<id>/",
    )
    build.add_argument("ids", nargs="*", metavar="ID", help="exercise ids (default: all)")
    build.add_argument("--check", action="store_true", help="write nothing; fail if any generated file is stale")
    _common(build, catalogue_args)
    build.set_defaults(func=cmd_build)

    val = ex_sub.add_parser(
        "validate",
        help="build, then grade each solution (full marks), template (0) "
        "and declared mistake (its score) in real kernels",
    )
    val.add_argument("ids", nargs="*", metavar="ID", help="exercise ids (default: all)")
    val.add_argument("--sandbox", default="auto", help="auto | bwrap | unsafe-local")
    val.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="grade every notebook N times and report any run that disagrees (finds nondeterministic checks)",
    )
    val.add_argument(
        "--retries",
        type=int,
        default=2,
        metavar="N",
        help="grade a run that hit a time limit (or was not gradable) again, up to N times (default 2)",
    )
    val.add_argument(
        "--mutants",
        action="store_true",
        help="then grade the mutants of each exercise that validated (titangrade exercises mutants)",
    )
    mutants_cli.add_options(val)
    _common(val, catalogue_args)
    val.set_defaults(func=cmd_validate)

    new = ex_sub.add_parser("new", help="scaffold a new exercise: exercise.toml and the master")
    new.add_argument("id", help="chNN.snake_name, e.g. ch09.reward_shaping")
    _common(new, catalogue_args)
    new.set_defaults(func=cmd_new)
    mutants_cli.register(ex_sub, lambda parser: _common(parser, catalogue_args))


def _common(parser: argparse.ArgumentParser, catalogue_args: Callable[[argparse.ArgumentParser], None]) -> None:
    catalogue_args(parser)
    parser.add_argument("--fixtures-root", type=Path, default=DEFAULT_FIXTURES_ROOT, help=argparse.SUPPRESS)


def _say(text: str) -> None:
    print(text, flush=True)


def _selected(args: argparse.Namespace) -> tuple[Catalogue, list[Exercise]] | None:
    try:
        catalogue = Catalogue(args.exercises_root, args.reference_root)
    except ValueError as exc:
        print(
            f"error: the catalogue does not load: {exc}\n    fix: correct that exercise.toml (docs/exercise-format.md)",
            file=sys.stderr,
        )
        return None
    unknown = [i for i in args.ids if i not in catalogue]
    if unknown:
        print(
            f"error: unknown exercise {unknown[0]!r}\n    fix: `titangrade exercises list` shows the ids, "
            f"`titangrade exercises new {unknown[0]}` starts one",
            file=sys.stderr,
        )
        return None
    return catalogue, [catalogue.get(i) for i in args.ids] if args.ids else list(catalogue)


def _table(header: tuple[str, ...], rows: list[tuple]) -> str:
    cells = [tuple(str(x) for x in r) for r in [header, *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def build_all(
    exercises: list[Exercise], *, fixtures_root: Path, check: bool, say: Callable[[str], None] = _say
) -> tuple[list[tuple], list[Outputs], list[str]]:
    """Render (and unless `check`, write) each exercise; returns summary rows, outputs, error texts."""
    rows: list[tuple[object, ...]] = []
    outputs: list[Outputs] = []
    errors: list[str] = []
    for i, ex in enumerate(exercises, start=1):
        say(f"[{i}/{len(exercises)}] {ex.id}: {_rel(master_path(ex))}")
        try:
            out = render(ex, fixtures_root=fixtures_root)
        except AuthoringError as exc:
            errors.append(str(exc))
            say(f"    error: {exc}")
            rows.append((ex.id, "-", "-", "-", "ERROR"))
            continue
        outputs.append(out)
        stale = out.stale()
        for path, why in stale:
            say(
                f"    {why}: {_rel(path)}"
                if check
                else f"    wrote {_rel(path)}"
                if why != "not declared in the master"
                else f"    deleted {_rel(path)} ({why})"
            )
        if not check:
            out.write()
        result = "up to date" if not stale else (f"STALE ({len(stale)} files)" if check else f"{len(stale)} written")
        if check and stale:
            errors.append(f"{ex.id}: {len(stale)} generated file(s) differ from {_rel(master_path(ex))}")
        cells = len(out.master.learner_cells)
        rows.append((ex.id, cells, len(ex.manifest.checks), len(out.master.mistakes), result))
    return rows, outputs, errors


def cmd_build(args: argparse.Namespace) -> int:
    picked = _selected(args)
    if picked is None:
        return 2
    _, exercises = picked
    rows, _, errors = build_all(exercises, fixtures_root=args.fixtures_root, check=args.check)
    print("\n" + _table(("exercise", "cells", "checks", "mistakes", "result"), rows))
    if errors:
        print(f"\n{len(errors)} problem(s):", file=sys.stderr)
        for e in errors:
            print(e, file=sys.stderr)
        if args.check:
            print(
                "fix: run `titangrade exercises build` and commit the generated files (never edit them by hand)",
                file=sys.stderr,
            )
        return 1
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from grading.authoring.validate import validate
    from grading.sandbox import make_sandbox

    if args.repeat < 1 or args.retries < 0 or mutants_cli.usage_error(args):
        print(
            f"error: {mutants_cli.usage_error(args) or '--repeat must be at least 1 and --retries at least 0'}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    picked = _selected(args)
    if picked is None:
        return EXIT_USAGE
    catalogue, exercises = picked
    _, outputs, errors = build_all(exercises, fixtures_root=args.fixtures_root, check=False)
    if errors:
        print("\n".join(["", "build failed; nothing graded:", *errors]), file=sys.stderr)
        return EXIT_PROBLEMS
    try:
        sandbox = make_sandbox(args.sandbox)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except GraderFault as exc:  # this host cannot sandbox: nothing the exercise could fix
        print(f"error: no sandbox, nothing graded: {exc}", file=sys.stderr)
        return EXIT_NOT_GRADED
    rows, problems, not_graded = [], [], []
    print()
    for i, out in enumerate(outputs, start=1):
        print(f"[{i}/{len(outputs)}] validating {out.exercise.id}", flush=True)
        row = validate(out, catalogue=catalogue, sandbox=sandbox, retries=args.retries, repeat=args.repeat)
        problems += row.problems
        not_graded += [(row.exercise_id, what) for what in row.not_graded]
        rows.append(
            (
                row.exercise_id,
                "-" if row.solution is None else f"{row.solution:g}/{row.max_score:g}",
                "-" if row.template is None else f"{row.template:g}",
                f"{row.mistakes_ok}/{row.mistakes}",
                _verdict(row),
            )
        )
    print("\n" + _table(("exercise", "solution", "template", "mistakes as declared", "result"), rows))
    if problems:
        print(f"\n{len(problems)} problem(s):", file=sys.stderr)
        for p in problems:
            print(p, file=sys.stderr)
    if not_graded:  # one line, and no fix: the exercise is not at fault (docs/exercise-format.md)
        ids = " ".join(dict.fromkeys(i for i, _ in not_graded))
        print(
            f"\nnot graded, retry: {len(not_graded)} notebook(s) got no verdict because the host was busy or the "
            f"grader faulted, not because of the exercise (first: {not_graded[0][1]}); run "
            f"`titangrade exercises validate {ids}` again, later or with more --retries (this run: {args.retries})",
            file=sys.stderr,
        )
    code = EXIT_PROBLEMS if problems else EXIT_NOT_GRADED if not_graded else 0
    if args.mutants:  # the mutants of exercises that validated: a failing one's mutants say nothing
        failed = {p.path for p in problems}
        good = [o for o in outputs if o.master.path not in failed and o.exercise.id not in dict(not_graded)]
        print(f"\nmutants of {len(good)} exercise(s) that validated", flush=True)
        mutated = mutants_cli.mutants_of(good, catalogue=catalogue, args=args, say=_say) if good else 0
        code = EXIT_PROBLEMS if EXIT_PROBLEMS in (code, mutated) else max(code, mutated)
    return code


def _verdict(row: Row) -> str:
    if row.ok:
        return "ok"
    parts = [f"FAILED ({len(row.problems)})"] if row.problems else []
    return ", ".join([*parts, f"NOT GRADED ({len(row.not_graded)})"] if row.not_graded else parts)


def cmd_new(args: argparse.Namespace) -> int:
    from grading.authoring.scaffold import scaffold

    try:
        paths = scaffold(args.id, exercises_root=args.exercises_root, reference_root=args.reference_root)
    except AuthoringError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for p in paths:
        print(f"created {_rel(p)}")
    print("next: edit those two files, then `titangrade exercises validate " + args.id + "` (builds, then grades)")
    return 0
