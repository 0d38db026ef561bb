"""HTTP routes for regrade requests and problem reports: thin wrappers over service.requests.service.

POST/GET /submissions/{id}/requests (the learner's own submission; GET also for the course's staff),
GET /courses/{course}/requests (staff), GET /requests/{id}, POST /requests/{id}/answer and /close (staff).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query

from service.deps import CurrentUser, SessionDep
from service.openapi import errors
from service.params import COURSE, SUBMISSION
from service.requests import service
from service.requests.models import RequestKind, RequestStatus
from service.requests.schemas import RequestAnswer, RequestCreate, RequestList, RequestPublic, to_public

router = APIRouter(tags=["requests"])
REQUEST_ID = Annotated[int, Path(ge=1, le=2**31 - 1)]  # the id column is a 32-bit integer on PostgreSQL


@router.post(
    "/submissions/{submission_id}/requests",
    status_code=201,
    response_model=RequestPublic,
    responses=errors(403, 404, 409, 422, 429),
)
def open_request(
    submission_id: SUBMISSION, body: RequestCreate, user: CurrentUser, session: SessionDep
) -> RequestPublic:
    """Ask for a regrade or report a problem on your own submission: 409 while one of yours is open on it,
    429 after 10 requests in 24 hours."""
    sub = service.submission_for(session, user=user, submission_id=submission_id)
    return to_public(service.open_request(session, user=user, sub=sub, kind=body.kind, text=body.text))


@router.get("/submissions/{submission_id}/requests", response_model=RequestList, responses=errors(404))
def submission_requests(submission_id: SUBMISSION, user: CurrentUser, session: SessionDep) -> RequestList:
    """A submission's requests, oldest first: its learner's own, or any for the course's staff."""
    sub = service.submission_for(session, user=user, submission_id=submission_id)
    return RequestList(items=[to_public(r) for r in service.for_submission(session, submission_id=sub.id)])


@router.get("/courses/{course}/requests", response_model=RequestList, responses=errors(403))
def course_requests(
    course: COURSE,
    user: CurrentUser,
    session: SessionDep,
    status: Literal["open", "answered", "closed"] | None = None,
    kind: Literal["regrade", "problem"] | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> RequestList:
    """The course's requests for its staff: open first (oldest waiting first), then the rest newest first."""
    rows = service.for_course(
        session,
        user=user,
        course=course,
        status=RequestStatus(status) if status else None,
        kind=RequestKind(kind) if kind else None,
        limit=limit,
    )
    return RequestList(items=[to_public(r) for r in rows])


@router.get("/requests/{request_id}", response_model=RequestPublic, responses=errors(404))
def get_request(request_id: REQUEST_ID, user: CurrentUser, session: SessionDep) -> RequestPublic:
    return to_public(service.get(session, user=user, request_id=request_id))


@router.post("/requests/{request_id}/answer", response_model=RequestPublic, responses=errors(403, 404, 409, 422))
def answer_request(
    request_id: REQUEST_ID, body: RequestAnswer, user: CurrentUser, session: SessionDep
) -> RequestPublic:
    """Answer an open request (staff of its course); `close: true` closes it with the answer."""
    row = service.get_for_staff(session, user=user, request_id=request_id)
    return to_public(service.answer(session, user=user, row=row, text=body.text, close=body.close))


@router.post("/requests/{request_id}/close", response_model=RequestPublic, responses=errors(403, 404, 409))
def close_request(request_id: REQUEST_ID, user: CurrentUser, session: SessionDep) -> RequestPublic:
    """Close an open or answered request without (another) answer (staff of its course)."""
    row = service.get_for_staff(session, user=user, request_id=request_id)
    return to_public(service.close(session, user=user, row=row))
