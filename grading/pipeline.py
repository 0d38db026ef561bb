"""The grading pipeline: validate -> sanitize -> execute -> extract -> check -> score.

`grade_notebook` is the one entry point the service, the CLI and the tests call. It raises only
`InvalidSubmission` (bad input, before anything runs); every other failure becomes a result.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import nbformat
import orjson

from grading import provenance
from grading.errors import GraderFault, InvalidSubmission
from grading.exercise import Catalogue, Exercise
from grading.i18n import t
from grading.observer import CHECKS, NO_OBSERVER, GradingObserver
from grading.progress import Cell, Checks, Done, Event, Started
from grading.result import GradeResult, Status
from grading.sandbox import CPU_ONLY, DeviceGrant, KernelRequest, Sandbox, make_sandbox
from grading.scoring import decide_status, score_checks, total
from grading.steps import graded_outputs, grader_cells
from grading.steps.execute import run_notebook
from grading.steps.grader_cells import GraderPlan
from grading.steps.sanitize import clear_outputs
from grading.steps.validate_upload import (
    MAX_JSON_DEPTH,
    check_cell_count,
    has_notebook_outline,
    identify_exercise,
    json_depth_exceeds,
    load_json,
    to_notebook,
    valid_as_uploaded,
)
from grading.trace import training_trace

log = logging.getLogger(__name__)
DEFAULT_MAX_BYTES = 5_000_000
CALL_TIME_LIMIT = "call time limit"  # in limits_hit: an answer or a check call ran out of its time
PROGRESS_BURST = 20  # cell events sent at once before throttling starts
PROGRESS_PER_S = 2.0  # cell events a second after the burst
_default_catalogue: Catalogue | None = None
_default_sandbox: Sandbox | None = None


def default_catalogue() -> Catalogue:
    """The repository's catalogue, loaded once per process."""
    global _default_catalogue
    if _default_catalogue is None:
        _default_catalogue = Catalogue()
    return _default_catalogue


def default_sandbox() -> Sandbox:
    """make_sandbox("auto"), built once per process (it probes bwrap)."""
    global _default_sandbox
    if _default_sandbox is None:
        _default_sandbox = make_sandbox("auto")
    return _default_sandbox


def load_submission(
    source: bytes | str | dict, *, exercise_id: str | None, catalogue: Catalogue, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[nbformat.NotebookNode, Exercise]:
    """Validate and identify; raises InvalidSubmission (codes: too_large, invalid_json, not_a_notebook,
    nbformat_invalid, missing_exercise, exercise_mismatch, unknown_exercise, too_many_cells) before
    anything runs."""
    data = load_json(source, max_bytes=max_bytes)
    exercise = identify_exercise(data, exercise_id=exercise_id, catalogue=catalogue)
    check_cell_count(data, exercise)  # before nbformat's validation, which is slow on 50,000 cells
    nb = to_notebook(data)
    check_cell_count(nb, exercise)  # an upgraded nbformat 3 notebook has its cells only now
    return nb, exercise


def check_submission(
    raw: bytes, *, exercise_id: str | None, catalogue: Catalogue, max_bytes: int = DEFAULT_MAX_BYTES
) -> Exercise:
    """`load_submission`'s verdict on an upload (the same exercise, or the same InvalidSubmission), for
    intake, which stores the bytes and needs no NotebookNode: an upload that orjson parses and the schema
    accepts as it is passes without the copy into NotebookNodes; at the first doubt (orjson refuses what
    json takes: NaN, huge numbers, lone surrogates; or any check fails) `load_submission` decides."""
    exercise = _quick_check(raw, exercise_id=exercise_id, catalogue=catalogue, max_bytes=max_bytes)
    if exercise is not None:
        return exercise
    return load_submission(raw, exercise_id=exercise_id, catalogue=catalogue, max_bytes=max_bytes)[1]


def _quick_check(raw: bytes, *, exercise_id: str | None, catalogue: Catalogue, max_bytes: int) -> Exercise | None:
    if len(raw) > max_bytes:
        return None
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not has_notebook_outline(data) or json_depth_exceeds(data, MAX_JSON_DEPTH):
        return None
    try:
        exercise = identify_exercise(data, exercise_id=exercise_id, catalogue=catalogue)
        check_cell_count(data, exercise)
    except InvalidSubmission:
        return None
    # orjson reads integers past 64 bits as floats, which an "integer" in the schema refuses: never a pass
    return exercise if valid_as_uploaded(data) else None


def _emitter(
    progress: Callable[[Event], None] | None,
    *,
    clock: Callable[[], float] = time.monotonic,
    burst: int = PROGRESS_BURST,
    per_s: float = PROGRESS_PER_S,
) -> Callable[[Event], None]:
    """Forward typed events (grading/progress.py) to `progress`; `Cell` events pass a token bucket (`burst`,
    then `per_s` a second) so a notebook of many tiny cells cannot write a progress row per cell. Other
    events always pass."""
    tokens, last = [float(burst)], [clock()]

    def emit(event: Event) -> None:
        if progress is None:
            return
        if isinstance(event, Cell):
            now = clock()
            tokens[0] = min(float(burst), tokens[0] + (now - last[0]) * per_s)
            last[0] = now
            if tokens[0] < 1.0:
                return
            tokens[0] -= 1.0
        try:
            progress(event)
        except Exception:  # a broken listener must never change a grade
            log.warning("progress callback failed for %s", event.kind, exc_info=True)

    return emit


def grade_notebook(
    source: bytes | str | dict,
    *,
    exercise_id: str | None = None,
    catalogue: Catalogue | None = None,
    lang: str = "en",
    sandbox: Sandbox | None = None,
    devices: DeviceGrant = CPU_ONLY,
    progress: Callable[[Event], None] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    observer: GradingObserver = NO_OBSERVER,
) -> GradeResult:
    """Grade one notebook. Raises InvalidSubmission for bad input; learner faults give status error,
    grader faults (and any unexpected engine exception) give not_gradable. `observer` sees every phase,
    unthrottled (grading/observer.py)."""
    started = time.monotonic()
    nb, exercise = load_submission(
        source, exercise_id=exercise_id, catalogue=catalogue or default_catalogue(), max_bytes=max_bytes
    )
    emit = _emitter(progress)
    emit(Started(exercise_id=exercise.id))
    plan: GraderPlan | None = None  # once made, it names what no string of the result may show, fault or not
    try:
        reference = exercise.reference()  # loaded once per grade: the plan and the checks share it
        plan = grader_cells.plan(exercise, reference=reference)
        result = _grade(
            nb,
            exercise,
            plan=plan,
            reference=reference,
            lang=lang,
            sandbox=sandbox,
            devices=devices,
            emit=emit,
            observer=observer,
        )
    except InvalidSubmission:
        raise
    except GraderFault as exc:
        log.warning("not gradable: %s", exc)
        result = _not_gradable(exercise, str(exc), lang=lang, devices=devices)
    except Exception as exc:  # an engine bug must not become a learner's zero
        log.exception("internal error while grading %s", exercise.id)
        result = _not_gradable(exercise, f"internal error {type(exc).__name__}", lang=lang, devices=devices)
    # the result boundary: every string from the kernel is normalised once (grading/text.py), before the
    # scrub, so an escape sequence or control character cannot split a hidden string past it
    result.normalise()
    # the learner's own words (whole, as their cells write them) are not masked as hidden (GraderPlan.scrub_for)
    own = [c.source for c in nb.cells]
    needles, public = (plan.scrub_for(own), plan.public_text) if plan is not None else ((), "")
    result.scrub(needles, t("redacted", lang), public=public)
    result.duration_s = round(time.monotonic() - started, 3)
    emit(Done(status=result.status.value, score=result.score, max_score=result.max_score))
    return result


def kernel_request(exercise: Exercise, *, devices: DeviceGrant = CPU_ONLY) -> KernelRequest:
    """The sandbox request an exercise's grading makes (a pre-warmed kernel must match it exactly)."""
    return KernelRequest.for_exercise(exercise.manifest, devices)


def _grade(
    nb: nbformat.NotebookNode,
    exercise: Exercise,
    *,
    plan: GraderPlan,
    reference: dict[str, Any],
    lang: str,
    sandbox: Sandbox | None,
    devices: DeviceGrant,
    emit: Callable[[Event], Any],
    observer: GradingObserver = NO_OBSERVER,
) -> GradeResult:
    manifest = exercise.manifest
    sandbox = sandbox or default_sandbox()
    request = kernel_request(exercise, devices=devices)
    execution = run_notebook(
        clear_outputs(nb), plan=plan, sandbox=sandbox, request=request, lang=lang, progress=emit, observer=observer
    )
    if execution.fault is not None:
        raise GraderFault(execution.fault)
    if unusable := _device_unusable(execution.cells, devices):
        raise GraderFault(unusable)  # the host's devices, not the learner's work: retried, never a zero
    # only the learner's cells: the grader's cells never put an output in execution.outputs
    marker = t("output_truncated_marker", lang, limit_kb=request.limits.max_output_kb)
    graded_outputs.attach(execution.cells, execution.outputs, marker=marker)
    emit(Checks())
    with observer.phase(CHECKS):
        checks = score_checks(exercise, execution, lang=lang, reference=reference, plan=plan, device=devices.kind)
    if manifest.own or manifest.policy.forbid:  # the work must be the learner's own (grading/provenance.py)
        sources = [c.source for c in nb.cells if c.cell_type == "code"]
        # the kernel answered but the reporter did not (sabotaged or killed): {} makes `own` unverified
        payload = execution.payloads.get(provenance.LABEL, {}) if "answers" in execution.payloads else None
        checks = provenance.enforce(exercise, checks, provenance.judge(manifest, payload, sources, lang=lang))
    status, message = decide_status(execution, checks, lang=lang)
    trace, profile, dtype = training_trace(exercise, execution.payloads)
    return GradeResult(
        exercise_id=exercise.id,
        status=status,
        score=total(checks),
        max_score=manifest.max_score,
        checks=checks,
        message=message,
        cells=execution.cells,
        limits_hit=execution.limits_hit + ([CALL_TIME_LIMIT] if _a_call_timed_out(execution.payloads) else []),
        sandbox=execution.sandbox_mode,
        device=devices.kind,
        device_count=len(devices.ids),
        dtype=dtype,
        trace=trace,
        profile=profile,
    )


DEVICE_UNUSABLE = "DeviceUnavailable:"  # exercises.lab.device.DeviceUnavailable, as a cell error reads


def _device_unusable(cells: list, devices: DeviceGrant) -> str | None:
    """A job given accelerators whose course runtime said it cannot use them (no driver, too few visible,
    a torch without that backend on this node): the grader's or the host's fault. On a CPU grant the same
    error is the learner's (they asked for a device by name)."""
    if devices.kind == "cpu":
        return None
    for cell in cells:  # the message is the cell's error in the learner's language: "... raised NAME: VALUE"
        at = cell.message.find(f" {DEVICE_UNUSABLE}") if cell.status == "error" else -1
        if at >= 0:
            detail = cell.message[at + len(DEVICE_UNUSABLE) + 1 :].strip()[:200]
            return f"the {devices.kind} devices {list(devices.ids)} given to this job cannot be used here: {detail}"
    return None


def _a_call_timed_out(payloads: dict[str, dict[str, Any]]) -> bool:
    """Did reading an answer or a check's call run out of its time? Hidden checks' feedback does not say so,
    so `limits_hit` does (for `exercises validate`: such a verdict is the host's speed as much as the code)."""

    # Payload values are what a kernel sent: any JSON shape (a forged payload included), so every level is
    # checked for its type; a shape this does not expect is simply not a timeout, never a grader fault.
    def late(value: Any) -> bool:
        raised = value.get("__raised__") if isinstance(value, dict) else None
        return isinstance(raised, dict) and raised.get("type") == "__timeout__"

    def values(mapping: Any) -> list:
        return list(mapping.values()) if isinstance(mapping, dict) else []

    for payload in payloads.values():
        if not isinstance(payload, dict):
            continue
        if any(late(v) for v in values(payload.get("answers"))):
            return True
        calls = [r for results in values(payload.get("calls")) if isinstance(results, list) for r in results]
        if any(late(r) for r in calls):
            return True
    return False


def _not_gradable(exercise: Exercise, reason: str, *, lang: str, devices: DeviceGrant) -> GradeResult:
    return GradeResult(
        exercise_id=exercise.id,
        status=Status.NOT_GRADABLE,
        score=0.0,
        max_score=exercise.manifest.max_score,
        message=t("not_gradable", lang, reason=reason),
        device=devices.kind,
        device_count=len(devices.ids),
    )
