"""Instructor pages: gradebook, a submission's detail with override and regrade, and queue health (the
statistics pages and bulk regrade are service/web/stats_pages.py). Every page checks `can_teach` exactly as
the API routes do."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response

from service.catalogue import service as catalogue_service
from service.courses import gradebook as books
from service.courses import matrix
from service.courses import service as courses
from service.deps import CatalogueDep, SessionFactoryDep, SettingsDep
from service.errors import Forbidden, ServiceError, clip
from service.messages import error
from service.queue import health as queue_health
from service.queue.service import SINGLE_REGRADE_PRIORITY
from service.requests import service as requests
from service.submissions import service as submissions
from service.web.core import PostViewerDep, ViewerDep, render
from service.web.learner import submission_context
from service.web.notices import page_error

router = APIRouter(prefix="/teach", include_in_schema=False)


def _staff(viewer) -> None:
    if not viewer.principal.is_staff:
        raise Forbidden(error("staff_pages"))


def _teaches(viewer, course: str) -> None:
    if not viewer.principal.can_teach(course):
        raise Forbidden(error("not_instructor", course=clip(course)))


@router.get("")
def teach_home(
    request: Request, viewer: ViewerDep, catalogue: CatalogueDep, open_session: SessionFactoryDep
) -> Response:
    _staff(viewer)
    with open_session() as session:
        open_requests = requests.open_counts(session, courses=viewer.principal.teaching())
        session.commit()
    return render(
        request,
        "teach.html",
        viewer=viewer,
        courses=viewer.principal.teaching(),
        exercises=catalogue_service.list_all(catalogue),
        open_requests=open_requests,
    )


@router.get("/courses/{course}/gradebook")
def gradebook_page(
    request: Request,
    course: str,
    viewer: ViewerDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    policy: str = "best",
    sort: str = "user",
    dir: str = "",
    q: str = "",
    exercise: str = "",
    status: str = "",
    late: str = "",
    page: str = "1",
    per_page: str = "",
) -> Response:
    """The matrix, one page of learners; every parameter is lenient (a bad one shows the default)."""
    _teaches(viewer, course)
    chosen: books.Policy = "latest" if policy == "latest" else "best"
    with open_session() as session:
        book = books.build(session, course=course, policy=chosen, catalogue=catalogue)
        session.commit()
    view = matrix.parse_view(
        book, sort=sort, direction=dir, q=q, exercise=exercise, status=status, page=page, per_page=per_page, late=late
    )
    base = f"/teach/courses/{quote(course, safe='')}/gradebook"
    return render(
        request,
        "gradebook.html",
        viewer=viewer,
        course=course,
        policy=chosen,
        view=view,
        page=matrix.select_page(book, view),
        statuses=matrix.STATUSES,
        late_filters=matrix.LATE_FILTERS,
        all_exercises=book.exercises,
        learners_total=len(book.learners),
        link=lambda **over: matrix.href(base, policy=chosen, view=view, over=over),
    )


@router.get("/courses/{course}/gradebook.csv")
def gradebook_csv(
    course: str, viewer: ViewerDep, catalogue: CatalogueDep, open_session: SessionFactoryDep, policy: str = "best"
) -> Response:
    """Every learner x exercise row, whatever the page's filters (the sheet is the whole course)."""
    _teaches(viewer, course)
    with open_session() as session:
        chosen: books.Policy = "latest" if policy == "latest" else "best"
        book = books.build(session, course=course, policy=chosen, catalogue=catalogue)
        session.commit()
    return PlainTextResponse(
        courses.to_csv(book.rows()),
        media_type="text/csv",
        headers={
            "Content-Disposition": courses.attachment(f"{course}-gradebook.csv"),
            "Cache-Control": "no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )


@router.get("/submissions/{submission_id}")
def staff_submission(
    request: Request,
    submission_id: str,
    viewer: ViewerDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    error: str = "",
) -> Response:
    with open_session() as session:
        sub = submissions.get_for_staff(session, user=viewer.principal, submission_id=submission_id)
        history = submissions.overrides(session, submission_id=sub.id)
        context = submission_context(viewer, sub, catalogue=catalogue, session=session)
        page = render(
            request,
            "staff_submission.html",
            viewer=viewer,
            history=history,
            error=page_error(error, viewer.lang),
            **context,
        )
        session.commit()
    return page


@router.post("/submissions/{submission_id}/override")
def override(
    request: Request,
    submission_id: str,
    viewer: PostViewerDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    score: Annotated[str, Form(max_length=40)] = "",
    reason: Annotated[str, Form(max_length=2000)] = "",
) -> Response:
    with open_session() as session:
        sub = submissions.get_for_staff(session, user=viewer.principal, submission_id=submission_id)
        try:
            if len(reason.strip()) < 3:
                raise ServiceError(error("override_reason"))
            try:
                value = None if score.strip() == "" else float(score)
            except ValueError:
                raise ServiceError(error("override_not_number", score=clip(score))) from None
            if value is not None and not value >= 0:
                raise ServiceError(error("override_negative"))
            submissions.override(session, user=viewer.principal, sub=sub, score=value, reason=reason.strip())
        except ServiceError as exc:
            history = submissions.overrides(session, submission_id=sub.id)
            context = submission_context(viewer, sub, catalogue=catalogue, session=session)
            message = exc.zh if viewer.lang == "zh" and exc.zh else exc.message
            return render(
                request,
                "staff_submission.html",
                viewer=viewer,
                history=history,
                error=message,
                status_code=exc.status_code if exc.status_code < 500 else 422,
                **context,
            )
    return RedirectResponse(f"/teach/submissions/{submission_id}", status_code=303)


@router.post("/submissions/{submission_id}/regrade")
def regrade(
    submission_id: str,
    viewer: PostViewerDep,
    settings: SettingsDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
) -> Response:
    with open_session() as session:
        sub = submissions.get_for_staff(session, user=viewer.principal, submission_id=submission_id)
        submissions.regrade(
            session,
            subs=[sub],
            priority=SINGLE_REGRADE_PRIORITY,
            max_attempts=settings.max_attempts,
            catalogue=catalogue,
        )
    return RedirectResponse(f"/submissions/{submission_id}", status_code=303)


@router.get("/queue")
def queue_page(
    request: Request, viewer: ViewerDep, settings: SettingsDep, open_session: SessionFactoryDep, hours: str = "24"
) -> Response:
    """Queue health (service/queue/health.py); `hours` is lenient: a bad or out-of-range one shows 24."""
    _staff(viewer)
    window_h = int(hours) if hours.isascii() and hours.isdigit() and 1 <= int(hours) <= 168 else 24
    with open_session() as session:
        report = queue_health.build(
            session, user=viewer.principal, window_s=window_h * 3600, dead_after_s=settings.lease_s
        )
        session.commit()
    return render(request, "queue.html", viewer=viewer, report=report, window_h=window_h)
