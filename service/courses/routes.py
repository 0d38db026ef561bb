"""Instructor views of a course."""
from __future__ import annotations

from typing import Literal

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse

from service.courses import service
from service.courses.schemas import CourseSettingsPublic, CourseSettingsUpdate
from service.deps import SessionDep, SettingsDep, StaffUser
from service.errors import Forbidden

router = APIRouter(prefix="/courses", tags=["courses"])


@router.get("/{course}/gradebook", responses={200: {"content": {"text/csv": {}}}})
def gradebook(course: str, user: StaffUser, session: SessionDep, policy: Literal["best", "latest"] = "best",
              format: Literal["json", "csv"] = "json"):
    """Scores per learner and exercise under the best- or latest-attempt policy; `?format=csv` for a sheet."""
    if not user.can_see_course(course):
        raise Forbidden(f"your token is scoped to course {user.course!r}, not {course!r}")
    rows = service.gradebook(session, course=course, policy=policy)
    if format == "csv":
        return PlainTextResponse(service.to_csv(rows), media_type="text/csv",
                                 headers={"Content-Disposition": f'attachment; filename="{course}-gradebook.csv"'})
    return {"course": course, "policy": policy, "rows": rows}


def _settings_public(session, *, course: str, default: str) -> CourseSettingsPublic:
    policy = service.supersede_policy(session, course=course, default=default)
    row = service.get_settings(session, course=course)
    return CourseSettingsPublic(course=course, supersede=policy,
                                supersede_is_default=row is None or row.supersede is None)


@router.get("/{course}/settings", response_model=CourseSettingsPublic)
def course_settings(course: str, user: StaffUser, session: SessionDep, settings: SettingsDep) -> CourseSettingsPublic:
    """The course's policies (today: whether a new attempt supersedes queued ones)."""
    if not user.can_see_course(course):
        raise Forbidden(f"your token is scoped to course {user.course!r}, not {course!r}")
    return _settings_public(session, course=course, default=settings.supersede_queued)


@router.put("/{course}/settings", response_model=CourseSettingsPublic)
def update_course_settings(course: str, body: CourseSettingsUpdate, user: StaffUser, session: SessionDep,
                           settings: SettingsDep) -> CourseSettingsPublic:
    """Set the course's supersede policy (`null` returns to the service default)."""
    if not user.can_see_course(course):
        raise Forbidden(f"your token is scoped to course {user.course!r}, not {course!r}")
    service.update_settings(session, course=course, supersede=body.supersede, by_user=user.user)
    return _settings_public(session, course=course, default=settings.supersede_queued)
