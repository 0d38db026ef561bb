"""Instructor statistics pages: an exercise (each learner's best, check pass rates linking to the attempts
that failed, time to grade), the attempts that failed one check, a course side by side with its learners at
risk, and bulk regrade behind a confirmation page that says what will be queued and what skipped, and why.

The numbers are service/courses/stats.py's and risk.py's, the same as the API's; every page checks
`can_teach` as the API does. Query parameters are lenient (a bad one shows the default), like the gradebook.
"""

from __future__ import annotations

from collections import Counter
from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from service.catalogue import service as catalogue_service
from service.courses import risk, stats
from service.courses import timing as timings
from service.deps import CatalogueDep, SessionFactoryDep, SettingsDep
from service.errors import Forbidden, clip
from service.messages import error
from service.queue.service import BULK_REGRADE_PRIORITY
from service.submissions import service as submissions
from service.web import charts
from service.web.core import PostViewerDep, ViewerDep, render

router = APIRouter(prefix="/teach", include_in_schema=False)
SKIP_REASONS = ("already_pending", "exercise_removed")  # RegradeSkipped.reason, each with a skip_<reason> word


def _staff(viewer) -> None:
    if not viewer.principal.is_staff:
        raise Forbidden(error("staff_pages"))


def _number(text: str, default: float, *, low: float, high: float) -> float:
    try:
        value = float(text)
    except ValueError:
        return default
    return value if low <= value <= high else default


def _window(text: str) -> int:
    return int(_number(text, timings.DEFAULT_WINDOW_DAYS, low=1, high=timings.MAX_WINDOW_DAYS))


def _course(viewer, course: str) -> str | None:
    """A course filter the viewer may use: one they teach, else none (all their courses)."""
    return course if course and viewer.principal.can_teach(course) else None


def _counts(request: Request) -> tuple[int, dict[str, int]] | None:
    """What a bulk regrade just did, from the redirect's query (queued=N&skip_<reason>=M)."""
    q = request.query_params
    if not q.get("queued", "").isdigit():
        return None
    skipped = {r: int(q[f"skip_{r}"]) for r in SKIP_REASONS if q.get(f"skip_{r}", "").isdigit()}
    return int(q["queued"][:9]), {r: n for r, n in skipped.items() if n > 0}


@router.get("/exercises/{exercise_id}")
def stats_page(
    request: Request,
    exercise_id: str,
    viewer: ViewerDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    course: str = "",
    window: str = "",
) -> Response:
    _staff(viewer)
    exercise = catalogue.get(exercise_id)
    chosen = _course(viewer, course)
    with open_session() as session:
        found = stats.exercise_stats(
            session, user=viewer.principal, exercise=exercise, catalogue=catalogue, course=chosen,
            window_days=_window(window),
        )  # fmt: skip
        session.commit()
    done = _counts(request)
    return render(
        request,
        "stats.html",
        viewer=viewer,
        ex=catalogue_service.to_public(exercise),
        stats=found,
        course=chosen or "",
        hist=charts.histogram(found.score_histogram),
        done=done,
        skipped_total=sum(done[1].values()) if done else 0,
    )


@router.get("/exercises/{exercise_id}/failures")
def failures_page(
    request: Request,
    exercise_id: str,
    viewer: ViewerDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    check: str = "",
    course: str = "",
) -> Response:
    _staff(viewer)
    exercise = catalogue.get(exercise_id)
    with open_session() as session:
        found = stats.check_failures(
            session, user=viewer.principal, exercise=exercise, catalogue=catalogue, check=check[:200],
            course=_course(viewer, course),
        )  # fmt: skip
        session.commit()
    return render(request, "failures.html", viewer=viewer, ex=catalogue_service.to_public(exercise), found=found)


@router.get("/courses/{course}/stats")
def course_stats_page(
    request: Request,
    course: str,
    viewer: ViewerDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    threshold: str = "",
    window: str = "",
) -> Response:
    if not viewer.principal.can_teach(course):
        raise Forbidden(error("not_instructor", course=clip(course)))
    t = _number(threshold, risk.DEFAULT_THRESHOLD_PERCENT, low=0, high=100)
    with open_session() as session:
        found = risk.course_stats(session, course=course, catalogue=catalogue, threshold=t, window_days=_window(window))
        session.commit()
    titles = {e.id: (e.manifest.title.zh if viewer.lang == "zh" else e.manifest.title.en) for e in catalogue}
    return render(request, "course_stats.html", viewer=viewer, course=course, found=found, titles=titles)


@router.get("/exercises/{exercise_id}/regrade")
def bulk_regrade_confirm(
    request: Request, exercise_id: str, viewer: ViewerDep, catalogue: CatalogueDep, open_session: SessionFactoryDep
) -> Response:
    """The confirmation step: how many runs the button will queue and what it will skip, and why."""
    _staff(viewer)
    exercise = catalogue.get(exercise_id)
    with open_session() as session:
        subs = catalogue_service.bulk_candidates(session, user=viewer.principal, exercise_id=exercise.id)
        ready, skipped = submissions.regrade_plan(session, subs=subs, catalogue=catalogue)
        session.commit()
    return render(
        request,
        "regrade_confirm.html",
        viewer=viewer,
        ex=catalogue_service.to_public(exercise),
        ready=len(ready),
        skipped=dict(sorted(Counter(s.reason for s in skipped).items())),
        skipped_total=len(skipped),
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
    exercise = catalogue.get(exercise_id)
    with open_session() as session:
        subs = catalogue_service.bulk_candidates(session, user=viewer.principal, exercise_id=exercise.id)
        ids, skipped = submissions.regrade(
            session, subs=subs, priority=BULK_REGRADE_PRIORITY, max_attempts=settings.max_attempts, catalogue=catalogue
        )
    by_reason = Counter(s.reason for s in skipped)
    query = "".join(f"&skip_{r}={by_reason[r]}" for r in SKIP_REASONS if by_reason[r])
    return RedirectResponse(f"/teach/exercises/{quote(exercise.id, safe='')}?queued={len(ids)}{query}", 303)
