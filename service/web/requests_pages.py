"""Pages of regrade requests and problem reports: the learner's form on their submission page, the course's
list for its staff (/teach/courses/{course}/requests) and the answer and close forms. The same service calls
and permission checks as /api/v1 (service/requests/); every POST carries the session's CSRF token."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response

from service.deps import CatalogueDep, SessionFactoryDep
from service.errors import Forbidden, ServiceError, clip
from service.messages import error
from service.requests import service as requests
from service.requests.models import RequestKind, RequestStatus
from service.web.core import PostViewerDep, ViewerDep, local_path, render
from service.web.learner import submission_context

router = APIRouter(include_in_schema=False)
FORM_CHARS = 8000  # a form field's bound; the service says what is too long (2000 characters, cleaned)
LIST_LIMIT = 500


@router.post("/submissions/{submission_id}/requests")
def ask(
    request: Request,
    submission_id: str,
    viewer: PostViewerDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    kind: Annotated[str, Form(max_length=40)] = "",
    text: Annotated[str, Form(max_length=FORM_CHARS)] = "",
) -> Response:
    """The learner's request; a refusal (empty text, one open already, the daily bound) shows on the page."""
    with open_session() as session:
        sub = requests.submission_for(session, user=viewer.principal, submission_id=submission_id)
        try:
            requests.open_request(session, user=viewer.principal, sub=sub, kind=requests.parse_kind(kind), text=text)
        except ServiceError as exc:
            session.rollback()
            context = submission_context(viewer, sub, catalogue=catalogue, session=session)
            page = render(
                request,
                "submission.html",
                viewer=viewer,
                request_error=exc.text(viewer.lang),
                status_code=exc.status_code,
                **context,
            )
            page.headers.update(exc.headers)  # Retry-After on a 429
            session.commit()
            return page
    return RedirectResponse(f"/submissions/{submission_id}#requests", status_code=303)


@router.get("/teach/courses/{course}/requests")
def course_requests(
    request: Request, course: str, viewer: ViewerDep, open_session: SessionFactoryDep, status: str = "", kind: str = ""
) -> Response:
    """Open requests first (oldest waiting first), then the others; lenient filters (unknown: all)."""
    if not viewer.principal.can_teach(course):
        raise Forbidden(error("not_instructor", course=clip(course)))
    chosen = status if status in set(RequestStatus) else ""
    chosen_kind = kind if kind in set(RequestKind) else ""
    with open_session() as session:
        rows = requests.for_course(
            session,
            user=viewer.principal,
            course=course,
            status=RequestStatus(chosen) if chosen else None,
            kind=RequestKind(chosen_kind) if chosen_kind else None,
            limit=LIST_LIMIT,
        )
        session.expunge_all()
        session.commit()
    return render(
        request,
        "requests.html",
        viewer=viewer,
        course=course,
        rows=rows,
        status=chosen,
        kind=chosen_kind,
        statuses=list(RequestStatus),
        kinds=list(RequestKind),
        base=f"/teach/courses/{quote(course, safe='')}/requests",
    )


def _back(next_path: str, row) -> str:
    return local_path(next_path, f"/teach/submissions/{row.submission_id}").split("#")[0] + f"#request-{row.id}"


@router.post("/teach/requests/{request_id}/answer")
def answer(
    request_id: int,
    viewer: PostViewerDep,
    open_session: SessionFactoryDep,
    answer: Annotated[str, Form(max_length=FORM_CHARS)] = "",
    close: Annotated[str, Form(max_length=10)] = "",
    next: Annotated[str, Form(max_length=500)] = "",
) -> Response:
    """Staff's answer; a refusal is a page naming it (the service's 4xx)."""
    with open_session() as session:
        row = requests.get_for_staff(session, user=viewer.principal, request_id=request_id)
        requests.answer(session, user=viewer.principal, row=row, text=answer, close=bool(close))
        target = _back(next, row)
    return RedirectResponse(target, status_code=303)


@router.post("/teach/requests/{request_id}/close")
def close(
    request_id: int,
    viewer: PostViewerDep,
    open_session: SessionFactoryDep,
    next: Annotated[str, Form(max_length=500)] = "",
) -> Response:
    with open_session() as session:
        row = requests.get_for_staff(session, user=viewer.principal, request_id=request_id)
        requests.close(session, user=viewer.principal, row=row)
        target = _back(next, row)
    return RedirectResponse(target, status_code=303)
