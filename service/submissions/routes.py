"""HTTP routes for submissions: thin wrappers over service.submissions.service."""

from __future__ import annotations

import functools
from typing import Annotated

import orjson
from fastapi import APIRouter, File, Form, Header, Query, UploadFile
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.sse import EventSourceResponse
from starlette.concurrency import run_in_threadpool

from grading.exercise import Exercise
from grading.pipeline import check_submission
from service.deps import (
    CatalogueDep,
    CurrentUser,
    LangDep,
    MaxDevicesDep,
    ReadSessionFactoryDep,
    SessionDep,
    SessionFactoryDep,
    SettingsDep,
    StaffUser,
    StreamSlotsDep,
    UploadWriterDep,
)
from service.errors import ServiceError
from service.messages import error
from service.openapi import errors
from service.params import SUBMISSION
from service.patterns import PRINTABLE
from service.queue.service import SINGLE_REGRADE_PRIORITY
from service.submissions import events, service, stream_slots
from service.submissions.batch import Accepted, Upload, accepted
from service.submissions.notebook_view import NOTEBOOK_MEDIA_TYPE, notebook_disposition
from service.submissions.schemas import (
    OverrideCreate,
    OverridePublic,
    RegradeAccepted,
    SubmissionAccepted,
    SubmissionList,
    SubmissionPublic,
)

router = APIRouter(prefix="/submissions", tags=["submissions"])
SSE_EVENT = {  # one server-sent event; `data` is a JSON object whose `event` repeats the event name
    "type": "object",
    "required": ["data"],
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "event": {
            "type": "string",
            "description": "queued, claimed, started, cell, restart, checks, requeued, done (the engine may add kinds)",
        },
        "data": {"type": "string", "contentMediaType": "application/json"},
        "retry": {"type": "integer"},
    },
}
INLINE_VALIDATION_BYTES = 64 * 1024  # larger notebooks are validated in a thread, off the event loop
IDEMPOTENCY_KEY = Header(
    max_length=200,
    pattern=r"^[\x21-\x7e]+$",
    description="makes a retried upload safe: the same key with the same request returns the "
    "first submission (200); with a different request it is a 422",
)


@router.post(
    "",
    status_code=202,
    response_model=SubmissionAccepted,
    responses={
        200: {
            "model": SubmissionAccepted,
            "description": "Idempotency-Key seen before with this request: the original submission",
        },
        **errors(403, 404, 413, 422, 429, 503),
    },
)
async def submit(
    user: CurrentUser,
    settings: SettingsDep,
    catalogue: CatalogueDep,
    lang: LangDep,
    writer: UploadWriterDep,
    open_read_session: ReadSessionFactoryDep,
    max_devices: MaxDevicesDep,
    notebook: Annotated[UploadFile | None, File(description="the .ipynb file")] = None,
    exercise_id: Annotated[
        str | None, Form(max_length=200, pattern=PRINTABLE, description="defaults to the notebook's metadata")
    ] = None,
    course: Annotated[
        str | None, Form(max_length=200, pattern=PRINTABLE, description="defaults to the token's (or your only) course")
    ] = None,
    idempotency_key: Annotated[str | None, IDEMPOTENCY_KEY] = None,
):
    """Validate the notebook now (4xx on bad input), then store it and its job; grading happens on a worker.

    Async: the validation of a small notebook runs on the event loop (a thread hop costs more), and the
    rows are stored by the process's UploadWriter, many uploads per transaction (service/submissions/writer.py).
    """
    if notebook is None:
        raise ServiceError(
            error("notebook_missing"),
            code="missing_notebook",
            status_code=422,
        )
    raw = await notebook.read(settings.max_upload_bytes + 1)
    fingerprint = service.request_hash(notebook=raw, exercise_id=exercise_id, course=course)
    if idempotency_key:  # a replay is answered without validating again; the writer re-checks in its transaction
        first = await run_in_threadpool(_replayed, open_read_session, user, idempotency_key, fingerprint)
        if first is not None:
            return accepted_response(first, status=200)
    load = functools.partial(_load, raw, exercise_id, catalogue, settings.max_upload_bytes)
    exercise = load() if len(raw) <= INLINE_VALIDATION_BYTES else await run_in_threadpool(load)
    chosen = service.choose_course(user, course or None)
    capacity = functools.partial(
        service.check_capacity,
        exercise=exercise,
        max_devices=max_devices,
        max_world_size=settings.worker_max_world_size,
    )
    if exercise.manifest.resources.devices:  # asks the database which workers there are
        await run_in_threadpool(capacity)
    else:
        capacity()
    item = Upload(
        user=user,
        exercise=exercise,
        course=chosen,
        notebook=raw,
        lang=lang,
        idempotency_key=idempotency_key,
        fingerprint=fingerprint,
    )
    stored = await writer.submit(item)
    return accepted_response(stored, status=202 if stored.created else 200)


def _replayed(open_read_session, user, key: str, fingerprint: str) -> Accepted | None:
    with open_read_session() as session:
        first = service.replay(session, user=user, key=key, fingerprint=fingerprint)
        found = accepted(first) if first is not None else None
        session.commit()
    return found


def _load(raw: bytes, exercise_id: str | None, catalogue, max_bytes: int) -> Exercise:
    return check_submission(raw, exercise_id=exercise_id or None, catalogue=catalogue, max_bytes=max_bytes)


def accepted_response(sub, *, status: int) -> Response:
    """SubmissionAccepted (the route's response_model documents it), encoded by orjson: every upload's
    answer, so no pydantic model and no json.dumps on the way out."""
    body = {
        "id": sub.id,
        "status": sub.status,
        "exercise_id": sub.exercise_id,
        "course": sub.course,
        "attempt": int(sub.attempt),
        "links": {"self": f"/api/v1/submissions/{sub.id}", "events": f"/api/v1/submissions/{sub.id}/events"},
    }
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


@router.get("", response_model=SubmissionList)
def list_submissions(
    user: CurrentUser,
    session: SessionDep,
    exercise_id: Annotated[str | None, Query(max_length=200, pattern=PRINTABLE)] = None,
    course: Annotated[str | None, Query(max_length=200, pattern=PRINTABLE)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> SubmissionList:
    """Learners see their own submissions; instructors their courses'; admins all."""
    subs = service.list_visible(session, user=user, exercise_id=exercise_id, course=course, limit=limit)
    shown = service.current_overrides(session, subs=subs)
    return SubmissionList(items=[service.to_public(s, override=shown.get(s.id)) for s in subs])


@router.get("/{submission_id}", response_model=SubmissionPublic, responses=errors(404))
def get_submission(
    submission_id: SUBMISSION, user: CurrentUser, session: SessionDep, settings: SettingsDep
) -> SubmissionPublic:
    """The submission; while it waits, `queue` has its position and estimated start and finish; a score an
    instructor set comes with `override` (their reason, who and when)."""
    sub = service.get(session, user=user, submission_id=submission_id)
    return service.to_public(
        sub,
        queue_estimate=service.wait_estimate(session, sub=sub, settings=settings),
        override=service.current_overrides(session, subs=[sub]).get(sub.id),
    )


@router.get(
    "/{submission_id}/notebook",
    response_class=Response,
    responses={
        200: {
            # a JSON object (every stored upload passed validation), served as the bytes that were uploaded
            "content": {NOTEBOOK_MEDIA_TYPE: {"schema": {"type": "object", "description": "an nbformat v4 notebook"}}},
            "description": "the notebook byte for byte as it was uploaded (Content-Disposition: attachment)",
        },
        **errors(404),
    },
)
def download_notebook(submission_id: SUBMISSION, user: CurrentUser, session: SessionDep) -> Response:
    """The uploaded .ipynb, unchanged; the same access as GET /submissions/{id} (someone else's is a 404)."""
    sub = service.get(session, user=user, submission_id=submission_id)
    return Response(
        bytes(sub.notebook),
        media_type=NOTEBOOK_MEDIA_TYPE,
        headers={"Content-Disposition": notebook_disposition(sub), "Cache-Control": "private, no-store"},
    )


@router.get(
    "/{submission_id}/events",
    # not response_class=EventSourceResponse: FastAPI then treats the route as a generator path operation and
    # iterates what it returns; the route returns its EventSourceResponse itself (service/submissions/events.py)
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {"schema": SSE_EVENT}},
            "description": "the current run's events: queued, estimate (position, start_in_s, "
            "finish_in_s; while queued, when it changes; no id), claimed, started, "
            "cell (index/total), checks, requeued (reason, and its cause key: service/queue/causes.py), "
            "done; ends after done",
        },
        204: {"description": "Last-Event-ID is the current run's done: nothing more to send"},
        **errors(404, 429),
    },
)
def submission_events(
    submission_id: SUBMISSION,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    open_session: SessionFactoryDep,
    slots: StreamSlotsDep,
    last_event_id: Annotated[str | None, Header(max_length=40, pattern=PRINTABLE)] = None,
) -> Response:
    """Server-sent progress events of the current grading run, from its start (or after Last-Event-ID)."""
    sub = service.get(session, user=user, submission_id=submission_id)
    raw_id = (last_event_id or "").strip()
    after = int(raw_id) if raw_id.isascii() and raw_id.isdigit() else None
    start = events.plan(session, sub=sub, last_event_id=after)
    session.commit()
    if start is None:
        return Response(status_code=204)
    release = slots.take(user.identity_id)  # 429 when the caller holds all of theirs
    estimate = events.estimator(open_session, submission_id=sub.id, settings=settings)
    frames = events.stream(
        open_session,
        submission_id=sub.id,
        start=start,
        poll_s=settings.events_poll_s,
        max_s=settings.events_max_s,
        estimate=estimate,
    )
    return EventSourceResponse(
        stream_slots.Held(events.encoded(frames), release),
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


@router.post(
    "/{submission_id}/regrade",
    status_code=202,
    response_model=RegradeAccepted,
    responses={
        200: {"model": RegradeAccepted, "description": "nothing queued; `skipped` says why"},
        **errors(403, 404),
    },
)
def regrade_submission(
    submission_id: SUBMISSION, user: StaffUser, session: SessionDep, settings: SettingsDep, catalogue: CatalogueDep
):
    sub = service.get_for_staff(session, user=user, submission_id=submission_id)
    ids, skipped = service.regrade(
        session, subs=[sub], priority=SINGLE_REGRADE_PRIORITY, max_attempts=settings.max_attempts, catalogue=catalogue
    )
    body = RegradeAccepted(
        queued=len(ids),
        submission_ids=ids,
        skipped=skipped,
        message=skipped[0].message if skipped else f"run {sub.run} queued",
    )
    return JSONResponse(body.model_dump(), status_code=202 if ids else 200)


@router.post("/{submission_id}/override", response_model=SubmissionPublic, responses=errors(403, 404))
def override_score(
    submission_id: SUBMISSION, body: OverrideCreate, user: StaffUser, session: SessionDep
) -> SubmissionPublic:
    """Set (or with score=null clear) a manual score; the reason is kept in the audit trail."""
    sub = service.get_for_staff(session, user=user, submission_id=submission_id)
    sub = service.override(session, user=user, sub=sub, score=body.score, reason=body.reason)
    return service.to_public(sub, override=service.current_overrides(session, subs=[sub]).get(sub.id))


@router.get("/{submission_id}/overrides", response_model=list[OverridePublic], responses=errors(403, 404))
def list_overrides(submission_id: SUBMISSION, user: StaffUser, session: SessionDep) -> list[OverridePublic]:
    """The audit trail of manual scores for one submission."""
    service.get_for_staff(session, user=user, submission_id=submission_id)
    return [
        OverridePublic(old_score=o.old_score, new_score=o.new_score, reason=o.reason, by=o.by_user, at=o.created_at)
        for o in service.overrides(session, submission_id=submission_id)
    ]
