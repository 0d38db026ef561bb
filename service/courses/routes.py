"""Instructor views of a course."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from service.courses import gradebook as books
from service.courses import risk, schedules, service
from service.courses import timing as timings
from service.courses.schemas import CourseSettingsPublic, CourseSettingsUpdate, GradebookPublic
from service.courses.stats_schemas import CourseStats
from service.deps import CatalogueDep, SessionDep, SettingsDep, StaffUser
from service.errors import Forbidden, clip
from service.messages import error
from service.openapi import errors
from service.params import COURSE

router = APIRouter(prefix="/courses", tags=["courses"])


def _require_teacher(user, course: str) -> None:
    if not user.can_teach(course):
        raise Forbidden(error("not_instructor", course=clip(course)))


@router.get(
    "/{course}/gradebook",
    response_model=GradebookPublic,
    responses={200: {"content": {"text/csv": {"schema": {"type": "string"}}}}, **errors(403)},
)
def gradebook(
    course: COURSE,
    user: StaffUser,
    session: SessionDep,
    catalogue: CatalogueDep,
    policy: Literal["best", "latest"] = "best",
    format: Literal["json", "csv"] = "json",
    late: Literal["late", "on_time"] | None = None,
):
    """Every learner of the course x every exercise of the catalogue, under the best- or latest-attempt
    policy (by the score after the late penalty), with a `missing` row (attempts 0, no score) where there is
    no attempt; `?late=late` keeps the rows counted late, `?late=on_time` the others; `?format=csv` for a sheet."""
    _require_teacher(user, course)
    book = books.build(session, course=course, policy=policy, catalogue=catalogue)
    rows = [r for r in book.rows() if late is None or r["late"] == (late == "late")]
    if format == "csv":
        return PlainTextResponse(
            service.to_csv(rows),
            media_type="text/csv",
            headers={
                "Content-Disposition": service.attachment(f"{course}-gradebook.csv"),
                "Cache-Control": "no-store",
                "X-Content-Type-Options": "nosniff",
            },
        )
    return {
        "course": course,
        "policy": policy,
        "rows": rows,
        "exercises": [{"exercise_id": ex_id, "max_score": m} for ex_id, m in book.exercises],
        "totals": book.totals(),
    }


@router.get("/{course}/stats", response_model=CourseStats, responses=errors(403))
def course_stats(
    course: COURSE,
    user: StaffUser,
    session: SessionDep,
    catalogue: CatalogueDep,
    threshold: Annotated[float, Query(ge=0, le=100, description="at risk below this % of the best total")] = (
        risk.DEFAULT_THRESHOLD_PERCENT
    ),
    within_days: Annotated[int, Query(ge=0, le=366, description="due within these days ranks first")] = (
        risk.DEFAULT_DUE_WITHIN_DAYS
    ),
    window_days: Annotated[int, Query(ge=1, le=timings.MAX_WINDOW_DAYS, description="time-to-grade window")] = (
        timings.DEFAULT_WINDOW_DAYS
    ),
) -> CourseStats:
    """The course's exercises side by side (each learner's best) and its learners at risk: nothing submitted,
    or a best total below `threshold` %."""
    _require_teacher(user, course)
    return risk.course_stats(
        session, course=course, catalogue=catalogue, threshold=threshold, within_days=within_days,
        window_days=window_days,
    )  # fmt: skip


def _settings_public(session, *, course: str, default: str) -> CourseSettingsPublic:
    policy = service.supersede_policy(session, course=course, default=default)
    row = service.get_settings(session, course=course)
    return CourseSettingsPublic(
        course=course,
        supersede=policy,
        supersede_is_default=row is None or row.supersede is None,
        timezone=schedules.zone_of(session, course=course),
    )


@router.get("/{course}/settings", response_model=CourseSettingsPublic, responses=errors(403))
def course_settings(
    course: COURSE, user: StaffUser, session: SessionDep, settings: SettingsDep
) -> CourseSettingsPublic:
    """The course's policies (today: whether a new attempt supersedes queued ones)."""
    _require_teacher(user, course)
    return _settings_public(session, course=course, default=settings.supersede_queued)


@router.put("/{course}/settings", response_model=CourseSettingsPublic, responses=errors(403))
def update_course_settings(
    course: COURSE, body: CourseSettingsUpdate, user: StaffUser, session: SessionDep, settings: SettingsDep
) -> CourseSettingsPublic:
    """Set the course's supersede policy (`null` returns to the service default) and its time zone (an IANA
    name); a field left out is unchanged."""
    _require_teacher(user, course)
    if body.timezone is not None:
        schedules.set_zone(session, course=course, zone=body.timezone, by_user=user.user)
    if "supersede" in body.model_fields_set:
        service.update_settings(session, course=course, supersede=body.supersede, by_user=user.user)
    session.commit()
    return _settings_public(session, course=course, default=settings.supersede_queued)
