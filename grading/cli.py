"""`titangrade grade` and `titangrade exercises list` (authoring commands: grading/authoring/cli.py): the engine
from a terminal (service/cli.py dispatches).

Exit codes of `grade`: 0 graded, 1 error (the notebook's code failed), 2 invalid input, 3 not gradable.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from grading.errors import GraderFault, InvalidSubmission
from grading.exercise import DEFAULT_EXERCISES_ROOT, DEFAULT_REFERENCE_ROOT, Catalogue
from grading.result import GradeResult, Status
from grading.sandbox import CPU_ONLY, DeviceGrant, KernelRequest, Sandbox
from grading.text import clean_text, clean_value

if TYPE_CHECKING:
    from grading.sandbox.headstart import HeadStart

EXIT_CODES = {Status.GRADED: 0, Status.ERROR: 1, Status.NOT_GRADABLE: 3}
EXIT_INVALID = 2
# One process, one notebook: compiling nbformat's fastjsonschema validator costs ~0.2 s CPU, more than
# jsonschema takes to check a notebook under ~100 kB (~0.01 s); above that fastjsonschema wins. The
# long-lived service compiles it once and keeps it.
ONE_SHOT_JSONSCHEMA_BYTES = 100_000
WAIT_USER_S = 300.0  # the most `grade` waits for a sandbox user that the service's runs hold
PEEK_MAX_BYTES = 5_000_000  # pipeline.DEFAULT_MAX_BYTES (not imported: the pipeline loads while the kernel boots)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `grade` and `exercises` to the top-level `titangrade` parser."""
    register_grade(subparsers)
    exercises = subparsers.add_parser("exercises", help="inspect the exercise catalogue")
    ex_sub = exercises.add_subparsers(dest="exercises_command", required=True)
    listing = ex_sub.add_parser("list", help="list exercises")
    listing.add_argument("--json", action="store_true", help="print JSON")
    _catalogue_args(listing)
    listing.set_defaults(func=cmd_exercises_list)
    from grading.authoring.cli import register as register_authoring  # build | validate | new

    register_authoring(ex_sub, _catalogue_args)


def register_grade(subparsers: argparse._SubParsersAction) -> None:
    """Add `grade` alone (service/cli.py's one-shot path: no authoring tools imported)."""
    grade = subparsers.add_parser("grade", help="grade a notebook locally with the same engine as the service")
    grade.add_argument("notebook", type=Path, help="the .ipynb file to grade")
    grade.add_argument("--exercise", help="exercise id (default: metadata.titangrade.exercise_id)")
    grade.add_argument("--json", action="store_true", help="print the result as JSON")
    grade.add_argument("--lang", choices=("en", "zh"), default="en", help="feedback language")
    grade.add_argument(
        "--sandbox",
        default=os.environ.get("TITANGRADE_SANDBOX", "auto"),
        help="auto | bwrap | unsafe-local (default: $TITANGRADE_SANDBOX or auto)",
    )
    grade.add_argument(
        "--wait-user-s",
        type=_seconds,
        default=os.environ.get("TITANGRADE_WAIT_USER_S", str(WAIT_USER_S)),
        help="how long to wait for a free sandbox user when the host's are all busy (default: "
        f"$TITANGRADE_WAIT_USER_S or {WAIT_USER_S:g}; 0 = fail at once)",
    )
    grade.add_argument(
        "--devices",
        default=os.environ.get("TITANGRADE_WORKER_DEVICES", ""),
        help='accelerators this run may use: "" (CPU only), "detect", or e.g. "cuda:0,1" / "npu:0-1"; an '
        "exercise asking for devices gets them, else falls back to CPU ranks where its manifest allows "
        "(default: $TITANGRADE_WORKER_DEVICES or CPU only)",
    )
    _catalogue_args(grade)
    grade.set_defaults(func=cmd_grade)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds >= 0 (e.g. 300)")
    return value


def _wait_for_users(sandbox: Sandbox, wait_s: float) -> None:
    """The host's sandbox users are shared with the service: wait (bounded, saying so) for one, not fail."""
    uids = getattr(sandbox, "uids", None)  # bwrap's UidPool; unsafe-local has none
    if uids is not None:
        uids.wait_s = wait_s
        uids.on_wait = lambda why: print(f"titangrade grade: {why}", file=sys.stderr, flush=True)


def _catalogue_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--exercises-root", type=Path, default=DEFAULT_EXERCISES_ROOT, help=argparse.SUPPRESS)
    parser.add_argument("--reference-root", type=Path, default=DEFAULT_REFERENCE_ROOT, help=argparse.SUPPRESS)


def _error(args: argparse.Namespace, code: str, message: str) -> int:
    message = clean_text(message)  # it can quote the notebook (an exercise id, a field it lacks)
    if getattr(args, "json", False):
        print(json.dumps({"error": {"code": code, "message": message}}, ensure_ascii=False))
    else:
        print(f"error ({code}): {message}", file=sys.stderr)
    return EXIT_INVALID


def cmd_grade(args: argparse.Namespace) -> int:
    """Launch the kernel first (HeadStart), then import the pipeline and validate while it boots."""
    try:
        source = args.notebook.read_bytes()
    except OSError as exc:
        return _error(args, "unreadable_file", f"cannot read {args.notebook}: {exc.strerror}; check the path")
    try:
        catalogue = Catalogue(args.exercises_root, args.reference_root)
    except ValueError as exc:
        print(f"the exercise catalogue is broken: {exc}", file=sys.stderr)
        return EXIT_CODES[Status.NOT_GRADABLE]
    from grading.sandbox import make_sandbox

    try:
        sandbox = make_sandbox(args.sandbox)
    except ValueError as exc:
        return _error(args, "bad_sandbox", str(exc))
    except GraderFault as exc:
        print(f"not gradable: {exc}", file=sys.stderr)
        return EXIT_CODES[Status.NOT_GRADABLE]
    _wait_for_users(sandbox, args.wait_user_s)
    exercise_id = args.exercise or _peek_exercise_id(source)
    try:
        grant = _grant(args.devices, catalogue, exercise_id)
    except ValueError as exc:
        return _error(args, "bad_devices", str(exc))
    except GraderFault as exc:  # HostBusy: a granted device is held by another process
        print(f"not gradable: {exc}", file=sys.stderr)
        return EXIT_CODES[Status.NOT_GRADABLE]
    head = _head_start(sandbox, catalogue, exercise_id) if grant.kind == "cpu" else None
    if len(source) < ONE_SHOT_JSONSCHEMA_BYTES:
        os.environ.setdefault("NBFORMAT_VALIDATOR", "jsonschema")  # read per call (nbformat/json_compat.py)
    try:
        from grading.pipeline import grade_notebook  # nbformat, the kernel client: imported while it boots

        result = grade_notebook(
            source,
            exercise_id=args.exercise,
            catalogue=catalogue,
            lang=args.lang,
            sandbox=head or sandbox,
            devices=grant,
        )
    except InvalidSubmission as exc:
        return _error(args, exc.code, exc.message)
    finally:
        if head is not None:
            head.close()
    _safe_streams()
    print(json.dumps(clean_value(result.to_dict()), ensure_ascii=False, indent=2) if args.json else render(result))
    return EXIT_CODES[result.status]


def _safe_streams() -> None:
    """A terminal whose encoding lacks a character (a C locale, a Windows code page) gets an escape, not a
    UnicodeEncodeError that would turn an ordinary grade into exit 1 with a traceback."""
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def _peek_exercise_id(source: bytes) -> str | None:
    """The notebook's own exercise id if it reads as a small notebook; the pipeline validates for real."""
    if len(source) > PEEK_MAX_BYTES:
        return None
    try:
        found = json.loads(source)["metadata"]["titangrade"]["exercise_id"]
    except (ValueError, RecursionError, KeyError, TypeError):
        return None
    return found if isinstance(found, str) else None


def _grant(spec: str, catalogue: Catalogue, exercise_id: str | None) -> DeviceGrant:
    """The devices of `spec` the exercise runs on (grading/sandbox/devices.py); CPU when it needs none,
    falls back to CPU ranks, or its devices are not free (said on stderr: the run is then a CPU run)."""
    if not spec.strip() or exercise_id is None or exercise_id not in catalogue:
        return CPU_ONLY
    from grading.sandbox.devices import DeviceInventory, check_free

    inventory = DeviceInventory.detect() if spec.strip() == "detect" else DeviceInventory.from_spec(spec)
    resources = catalogue.get(exercise_id).manifest.resources
    grant = inventory.acquire_for(resources)
    if grant is None:
        raise ValueError(
            f"{exercise_id} needs {resources.devices} free {'/'.join(resources.accelerator_kinds)} "
            f"device(s) and {spec!r} has none free; free them or pass --devices ''"
        )
    check_free(grant)
    return grant


def _head_start(sandbox: Sandbox, catalogue: Catalogue, exercise_id: str | None) -> HeadStart | None:
    """Start the exercise's kernel now (grading/sandbox/headstart.py); None if the id is not known."""
    if exercise_id is None or exercise_id not in catalogue:
        return None
    from grading.sandbox.headstart import HeadStart

    return HeadStart(sandbox, KernelRequest.for_exercise(catalogue.get(exercise_id).manifest, CPU_ONLY))


def render(result: GradeResult) -> str:
    """A terminal report: status and score, one line per check, then why the run was not clean. The
    engine normalised every string already; the report is cleaned again because it goes to a terminal."""
    return clean_text(_report(result))


def _report(result: GradeResult) -> str:
    lines = [f"{result.exercise_id}: {result.status.value}  {result.score:g} / {result.max_score:g}"]
    for c in result.checks:
        mark = "PASS" if c.passed else "FAIL"
        title = f" ({c.title})" if c.title else ""
        lines.append(f"  [{mark}] {c.name}{title}: {c.score:g}/{c.max_score:g}  {c.feedback}".rstrip())
    if result.message:
        lines.append(f"note: {result.message}")
    if result.limits_hit:
        lines.append(f"limits hit: {', '.join(result.limits_hit)}")
    lines.append(f"sandbox: {result.sandbox or '-'}  device: {result.device}  {result.duration_s:.1f} s")
    return "\n".join(lines)


def cmd_exercises_list(args: argparse.Namespace) -> int:
    try:
        catalogue = Catalogue(args.exercises_root, args.reference_root)
    except ValueError as exc:
        print(f"the exercise catalogue is broken: {exc}", file=sys.stderr)
        return EXIT_CODES[Status.NOT_GRADABLE]
    rows = [e.summary() for e in catalogue]
    if args.json:
        print(json.dumps(rows, ensure_ascii=False, indent=2))
        return 0
    for r in rows:
        res = r["resources"]
        print(
            f"{r['id']:<34} ch{r['chapter']:02d}  {r['max_score']:>5g} pts  {r['kernel_family']:<8} "
            f"world={res['world_size']} devices={res['devices']}  {r['notebook']}  {r['title']}"
        )
    if not rows:
        print("no exercises found", file=sys.stderr)
    return 0
