"""Instructor pages: gradebook, exercise statistics, a submission's detail with override and regrade,
bulk regrade, and queue health. Every page checks `can_teach` exactly as the API routes do."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import PlainTextResponse, RedirectResponse, Response
from sqlalchemy import select

from service.catalogue import service as catalogue_service
from service.courses import gradebook as books
from service.courses import matrix
from service.courses import service as courses
from service.deps import CatalogueDep, SessionFactoryDep, SettingsDep
from service.errors import Forbidden, ServiceError, clip
from service.messages import error
from service.queue import service as queue
from service.queue.service import BULK_REGRADE_PRIORITY, SINGLE_REGRADE_PRIORITY
from service.states import SubmissionStatus
from service.submissions import service as submissions
from service.submissions.models import Submission
from service.web import charts
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
def teach_home(request: Request, viewer: ViewerDep, catalogue: CatalogueDep) -> Response:
    _staff(viewer)
    return render(
        request,
        "teach.html",
        viewer=viewer,
        courses=viewer.principal.teaching(),
        exercises=catalogue_service.list_all(catalogue),
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


@router.get("/exercises/{exercise_id}")
def stats_page(
    request: Request,
    exercise_id: str,
    viewer: ViewerDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    queued: int | None = None,
) -> Response:
    _staff(viewer)
    exercise = catalogue.get(exercise_id)
    with open_session() as session:
        stats = catalogue_service.stats(session, user=viewer.principal, exercise=exercise)
        session.commit()
    return render(
        request,
        "stats.html",
        viewer=viewer,
        ex=catalogue_service.to_public(exercise),
        stats=stats,
        hist=charts.histogram(stats.score_histogram),
        queued=queued,
    )


@router.post("/exercises/{exercise_id}/regrade")
def bulk_regrade(
    exercise_id: str,
    viewer: PostViewerDep,
    settings: SettingsDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
) -> Response:
    _staff(viewer)
    catalogue.get(exercise_id)
    with open_session() as session:
        stmt = select(Submission).where(
            Submission.exercise_id == exercise_id, catalogue_service.taught_by(viewer.principal)
        )
        subs = list(session.scalars(stmt.order_by(Submission.created_at, Submission.id)))
        ids, _ = submissions.regrade(
            session, subs=subs, priority=BULK_REGRADE_PRIORITY, max_attempts=settings.max_attempts, catalogue=catalogue
        )
    return RedirectResponse(f"/teach/exercises/{exercise_id}?queued={len(ids)}", status_code=303)


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
def queue_page(request: Request, viewer: ViewerDep, open_session: SessionFactoryDep) -> Response:
    _staff(viewer)
    with open_session() as session:
        depth = queue.depth_by_lane(session)
        workers = queue.live_workers(session, within_s=300)
        recent = [
            s
            for s in submissions.list_visible(session, user=viewer.principal, limit=500)
            if s.status == SubmissionStatus.NOT_GRADABLE
        ][:20]
        page = render(
            request,
            "queue.html",
            viewer=viewer,
            depth=depth,
            workers=workers,
            recent=recent,
            jobs=queue.jobs_by_status(session),
        )
        session.commit()
    return page
