"""Request verbs: open (a learner, on their own submission), list (the author, or the course's staff), answer
and close (the course's staff only).

Bounded: one open request per submission (a partial unique index holds it even for racing requests) and
`MAX_PER_DAY` requests per learner in 24 hours. Texts are untrusted: cleaned (grading/text.py) and clipped
before they are stored; someone else's request looks exactly like a missing one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy import case, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grading.text import clean_text
from service.auth.principal import Principal
from service.db import utcnow
from service.errors import Conflict, Forbidden, NotFound, ServiceError, TooMany, clip
from service.messages import error
from service.requests.models import RequestKind, RequestStatus, SubmissionRequest
from service.submissions import service as submissions
from service.submissions.models import Submission

TEXT_CHARS = 2000  # of a learner's message or a staff answer, after cleaning
MAX_PER_DAY = 10  # requests one learner may open in 24 hours (every course together)
DAY = dt.timedelta(hours=24)
_RANK = case(
    (SubmissionRequest.status == RequestStatus.OPEN, 0),
    (SubmissionRequest.status == RequestStatus.ANSWERED, 1),
    else_=2,
)


def clean_message(raw: str, *, key: str) -> str:
    """`raw` as it may be stored: valid Unicode without controls (NUL, lone surrogates, bidi), trimmed,
    1 to TEXT_CHARS characters; otherwise a 422 naming the bound (`key`: the error's catalogue key)."""
    text = clean_text(raw).strip()
    if not text or len(text) > TEXT_CHARS:
        raise ServiceError(error(key, limit=TEXT_CHARS), code="invalid_text", status_code=422)
    return text


def parse_kind(raw: str) -> RequestKind:
    try:
        return RequestKind(raw)
    except ValueError:
        raise ServiceError(error("request_kind"), code="invalid_kind", status_code=422) from None


def open_request(
    session: Session, *, user: Principal, sub: Submission, kind: RequestKind, text: str
) -> SubmissionRequest:
    """A new open request by the submission's own learner (committed). 403 for anyone else, 409 while the
    submission has an open request, 429 past the learner's daily bound, 422 for an empty or long text."""
    if sub.identity_id != user.identity_id:
        raise Forbidden(error("request_own_only", submission=clip(sub.id)), code="not_the_author")
    body = clean_message(text, key="request_text")
    _check_open(session, sub)
    _check_rate(session, user)
    row = SubmissionRequest(
        submission_id=sub.id,
        course=sub.course,
        exercise_id=sub.exercise_id,
        identity_id=user.identity_id,
        author=clean_text(user.name)[:200],
        kind=kind,
        text=body,
        status=RequestStatus.OPEN,
    )
    session.add(row)
    try:
        session.commit()
    except IntegrityError:  # a second request raced in between the check and the insert
        session.rollback()
        _check_open(session, sub)
        raise
    return row


def _check_open(session: Session, sub: Submission) -> None:
    found = session.scalar(
        select(SubmissionRequest.id).where(
            SubmissionRequest.submission_id == sub.id, SubmissionRequest.status == RequestStatus.OPEN
        )
    )
    if found is not None:
        raise Conflict(error("request_open_exists", submission=clip(sub.id), request=found), code="request_open")


def _check_rate(session: Session, user: Principal) -> None:
    since = utcnow() - DAY
    count, oldest = session.execute(
        select(func.count(), func.min(SubmissionRequest.created_at)).where(
            SubmissionRequest.identity_id == user.identity_id, SubmissionRequest.created_at >= since
        )
    ).one()
    if count >= MAX_PER_DAY:
        wait_s = max(1, round((oldest + DAY - utcnow()).total_seconds())) if oldest else 60
        raise TooMany(error("request_rate", limit=MAX_PER_DAY, wait_s=wait_s), retry_after_s=wait_s)


def for_submission(session: Session, *, submission_id: str) -> list[SubmissionRequest]:
    """A submission's requests, oldest first (the thread); the caller has checked it may read the submission."""
    stmt = select(SubmissionRequest).where(SubmissionRequest.submission_id == submission_id)
    return list(session.scalars(stmt.order_by(SubmissionRequest.created_at, SubmissionRequest.id)))


def for_course(
    session: Session,
    *,
    user: Principal,
    course: str,
    status: RequestStatus | None = None,
    kind: RequestKind | None = None,
    limit: int = 100,
) -> list[SubmissionRequest]:
    """The course's requests for its staff: open first (oldest waiting first), then the others newest first."""
    if not user.can_teach(course):
        raise Forbidden(error("not_instructor", course=clip(course)))
    stmt = select(SubmissionRequest).where(SubmissionRequest.course == course)
    if status is not None:
        stmt = stmt.where(SubmissionRequest.status == status)
    if kind is not None:
        stmt = stmt.where(SubmissionRequest.kind == kind)
    waiting = case((SubmissionRequest.status == RequestStatus.OPEN, SubmissionRequest.created_at))
    order = (_RANK, waiting.asc(), SubmissionRequest.created_at.desc(), SubmissionRequest.id)
    return list(session.scalars(stmt.order_by(*order).limit(limit)))


def open_counts(session: Session, *, courses: Sequence[str]) -> dict[str, int]:
    """Open requests per course (the teach page's links)."""
    if not courses:
        return {}
    stmt = (
        select(SubmissionRequest.course, func.count())
        .where(SubmissionRequest.course.in_(list(courses)), SubmissionRequest.status == RequestStatus.OPEN)
        .group_by(SubmissionRequest.course)
    )
    return {course: int(n) for course, n in session.execute(stmt).all()}


def get(session: Session, *, user: Principal, request_id: int) -> SubmissionRequest:
    """A request the caller may read: their own (on a submission they may still read), or one of a course
    they teach; anything else is a 404."""
    row = session.get(SubmissionRequest, request_id) if 0 < request_id < 2**31 else None  # a 32-bit column
    if row is not None:
        own = row.identity_id == user.identity_id and user.in_scope(row.course)
        if own or user.can_teach(row.course):
            return row
    raise NotFound(error("request_not_found", request=request_id), code="request_not_found")


def get_for_staff(session: Session, *, user: Principal, request_id: int) -> SubmissionRequest:
    """A request of a course the caller teaches; its author gets a 403, anyone else a 404."""
    row = get(session, user=user, request_id=request_id)
    if not user.can_teach(row.course):
        raise Forbidden(error("instructors_only", course=clip(row.course)))
    return row


def answer(session: Session, *, user: Principal, row: SubmissionRequest, text: str, close: bool) -> SubmissionRequest:
    """Staff's answer to an open request (committed): answered, or closed with `close`; 409 if not open."""
    if not user.can_teach(row.course):
        raise Forbidden(error("instructors_only", course=clip(row.course)))
    body = clean_message(text, key="answer_text")
    if row.status != RequestStatus.OPEN:
        raise Conflict(error("request_not_open", request=row.id, status=row.status), code="request_not_open")
    now, who = utcnow(), clean_text(user.name)[:200]
    row.answer, row.answered_by, row.answered_at = body, who, now
    row.status = RequestStatus.ANSWERED
    if close:
        row.status, row.closed_by, row.closed_at = RequestStatus.CLOSED, who, now
    session.commit()
    return row


def close(session: Session, *, user: Principal, row: SubmissionRequest) -> SubmissionRequest:
    """Close an open or answered request (committed); 409 if it is closed already."""
    if not user.can_teach(row.course):
        raise Forbidden(error("instructors_only", course=clip(row.course)))
    if row.status == RequestStatus.CLOSED:
        raise Conflict(error("request_already_closed", request=row.id), code="request_closed")
    row.status, row.closed_by, row.closed_at = RequestStatus.CLOSED, clean_text(user.name)[:200], utcnow()
    session.commit()
    return row


def submission_for(session: Session, *, user: Principal, submission_id: str) -> Submission:
    """The submission a request is about, with the submissions' own access rule (someone else's: 404)."""
    return submissions.get(session, user=user, submission_id=submission_id)
