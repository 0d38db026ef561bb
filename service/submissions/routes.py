"""HTTP routes for submissions: thin wrappers over service.submissions.service."""
from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, Header, Request, UploadFile
from fastapi.responses import JSONResponse, StreamingResponse

from service.deps import CatalogueDep, CurrentUser, SessionDep, SettingsDep, StaffUser
from service.errors import ServiceError
from service.queue.service import SINGLE_REGRADE_PRIORITY
from service.submissions import events, service
from service.submissions.schemas import (OverrideCreate, RegradeAccepted, SubmissionAccepted, SubmissionList,
                                         SubmissionPublic)

router = APIRouter(prefix="/submissions", tags=["submissions"])


def preferred_lang(accept_language: str | None) -> str:
    """zh if the client's most preferred language is Chinese, else en (the fallback)."""
    best, best_q = "en", -1.0
    for part in (accept_language or "").split(","):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        tag = tag.strip().lower()
        if tag and q > best_q:
            best, best_q = ("zh" if tag.startswith("zh") else "en"), q
    return best


@router.post("", status_code=202, response_model=SubmissionAccepted,
             responses={200: {"description": "Idempotency-Key seen before: the original submission"},
                        404: {"description": "unknown exercise"}, 413: {"description": "notebook too large"},
                        422: {"description": "not a notebook, missing field, or resources no worker has"},
                        429: {"description": "rate or attempt limit"}})
def submit(request: Request, user: CurrentUser, session: SessionDep, settings: SettingsDep,
           catalogue: CatalogueDep,
           notebook: Annotated[UploadFile | None, File(description="the .ipynb file")] = None,
           exercise_id: Annotated[str | None, Form(description="defaults to the notebook's metadata")] = None,
           idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
           accept_language: Annotated[str | None, Header()] = None):
    """Validate the notebook now (4xx on bad input), then store it and its job; grading happens on a worker."""
    from grading.pipeline import load_submission

    if notebook is None:
        raise ServiceError("the multipart field `notebook` (the .ipynb file) is missing; send it with "
                           "-F notebook=@file.ipynb", code="missing_notebook", status_code=422)
    raw = notebook.file.read(settings.max_upload_bytes + 1)
    if len(raw) > settings.max_upload_bytes:
        raise ServiceError(f"the notebook is larger than {settings.max_upload_mb} MB; clear large outputs "
                           "(Kernel > Restart & Clear Output) and submit again", code="too_large", status_code=413)
    _, exercise = load_submission(raw, exercise_id=exercise_id or None, catalogue=catalogue,
                                  max_bytes=settings.max_upload_bytes)
    service.check_capacity(exercise=exercise, max_devices=request.app.state.max_devices,
                           max_world_size=settings.worker_max_world_size)
    sub, created = service.create(session, user=user, exercise=exercise, notebook=raw,
                                  lang=preferred_lang(accept_language), idempotency_key=idempotency_key,
                                  settings=settings)
    body = SubmissionAccepted(id=sub.id, status=sub.status, exercise_id=sub.exercise_id, attempt=sub.attempt,
                              links={"self": f"/api/v1/submissions/{sub.id}",
                                     "events": f"/api/v1/submissions/{sub.id}/events"})
    return JSONResponse(body.model_dump(), status_code=202 if created else 200)


@router.get("", response_model=SubmissionList)
def list_submissions(user: CurrentUser, session: SessionDep, exercise_id: str | None = None,
                     course: str | None = None, limit: int = 100) -> SubmissionList:
    """Learners see their own submissions; instructors their course's; admins all."""
    subs = service.list_visible(session, user=user, exercise_id=exercise_id, course=course,
                                limit=max(1, min(limit, 1000)))
    return SubmissionList(items=[service.to_public(s) for s in subs])


@router.get("/{submission_id}", response_model=SubmissionPublic)
def get_submission(submission_id: str, user: CurrentUser, session: SessionDep,
                   settings: SettingsDep) -> SubmissionPublic:
    """The submission; while it waits, `queue` has its position and estimated start and finish."""
    sub = service.get(session, user=user, submission_id=submission_id)
    return service.to_public(sub, queue_estimate=service.wait_estimate(session, sub=sub, settings=settings))


@router.get("/{submission_id}/events", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}},
                             "description": "queued, estimate (position, start_in_s, finish_in_s; "
                                            "while queued, when it changes), claimed, started, cell "
                                            "(index/total), checks, done"}})
def submission_events(request: Request, submission_id: str, user: CurrentUser, session: SessionDep,
                      last_event_id: Annotated[str | None, Header()] = None) -> StreamingResponse:
    """Server-sent progress events, replayed from the start (or after Last-Event-ID) until `done`."""
    service.get(session, user=user, submission_id=submission_id)
    session.commit()
    after = int(last_event_id) if (last_event_id or "").isdigit() else 0
    estimate = events.estimator(request.app.state.sessions, submission_id=submission_id,
                                settings=request.app.state.settings)
    return StreamingResponse(events.stream(request.app.state.sessions, submission_id=submission_id, after_id=after,
                                           estimate=estimate),
                             media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


@router.post("/{submission_id}/regrade", status_code=202, response_model=RegradeAccepted)
def regrade_submission(submission_id: str, user: StaffUser, session: SessionDep, settings: SettingsDep,
                       catalogue: CatalogueDep) -> RegradeAccepted:
    sub = service.get(session, user=user, submission_id=submission_id)
    ids = service.regrade(session, subs=[sub], priority=SINGLE_REGRADE_PRIORITY,
                          max_attempts=settings.max_attempts, catalogue=catalogue)
    return RegradeAccepted(queued=len(ids), submission_ids=ids)


@router.post("/{submission_id}/override", response_model=SubmissionPublic)
def override_score(submission_id: str, body: OverrideCreate, user: StaffUser, session: SessionDep) -> SubmissionPublic:
    """Set (or with score=null clear) a manual score; the reason is kept in the audit trail."""
    sub = service.get(session, user=user, submission_id=submission_id)
    return service.to_public(service.override(session, user=user, sub=sub, score=body.score, reason=body.reason))


@router.get("/{submission_id}/overrides")
def list_overrides(submission_id: str, user: StaffUser, session: SessionDep) -> list[dict]:
    """The audit trail of manual scores for one submission."""
    service.get(session, user=user, submission_id=submission_id)
    return [{"old_score": o.old_score, "new_score": o.new_score, "reason": o.reason, "by": o.by_user,
             "at": o.created_at.isoformat()} for o in service.overrides(session, submission_id=submission_id)]
