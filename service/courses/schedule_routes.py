"""Deadlines of a course over the API: exercise schedules, per-learner extensions (instructors only)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response

from service.courses import schedules
from service.courses.lateness import LateKind, LatePolicy
from service.courses.schemas import (
    ExtensionCreate,
    ExtensionList,
    ExtensionPublic,
    ScheduleList,
    SchedulePublic,
    ScheduleUpdate,
)
from service.deps import CatalogueDep, SessionDep, StaffUser
from service.errors import Forbidden, clip
from service.messages import error
from service.openapi import errors
from service.params import COURSE, EXERCISE

router = APIRouter(prefix="/courses", tags=["courses"])


def _require_teacher(user, course: str) -> None:
    if not user.can_teach(course):
        raise Forbidden(error("not_instructor", course=clip(course)))


@router.get("/{course}/schedule", response_model=ScheduleList, responses=errors(403))
def list_schedules(course: COURSE, user: StaffUser, session: SessionDep, catalogue: CatalogueDep) -> ScheduleList:
    """Every exercise's opening, due time and late policy, in UTC and in the course's zone."""
    _require_teacher(user, course)
    return schedules.course_schedules(session, course=course, exercise_ids=[e.id for e in catalogue])


@router.get("/{course}/exercises/{exercise_id}/schedule", response_model=SchedulePublic, responses=errors(403, 404))
def get_schedule(
    course: COURSE, exercise_id: EXERCISE, user: StaffUser, session: SessionDep, catalogue: CatalogueDep
) -> SchedulePublic:
    _require_teacher(user, course)
    catalogue.get(exercise_id)  # an unknown exercise is a 404 naming it
    row = schedules.schedules(session, course=course).get(exercise_id)
    zone = schedules.zone_of(session, course=course)
    return schedules.schedule_public(row, course=course, exercise_id=exercise_id, zone=zone)


@router.put(
    "/{course}/exercises/{exercise_id}/schedule", response_model=SchedulePublic, responses=errors(403, 404, 422)
)
def put_schedule(
    course: COURSE,
    exercise_id: EXERCISE,
    body: ScheduleUpdate,
    user: StaffUser,
    session: SessionDep,
    catalogue: CatalogueDep,
) -> SchedulePublic:
    """Replace the exercise's schedule; the lateness of its existing submissions is recomputed."""
    _require_teacher(user, course)
    catalogue.get(exercise_id)
    p = body.late_policy
    policy = LatePolicy(kind=LateKind(p.kind), percent=p.percent, floor_percent=p.floor_percent)
    row = schedules.put_schedule(
        session,
        course=course,
        exercise_id=exercise_id,
        opens_at=body.opens_at,
        due_at=body.due_at,
        policy=policy,
        by_user=user.user,
    )
    session.commit()
    zone = schedules.zone_of(session, course=course)
    return schedules.schedule_public(row, course=course, exercise_id=exercise_id, zone=zone)


@router.get("/{course}/extensions", response_model=ExtensionList, responses=errors(403))
def list_extensions(course: COURSE, user: StaffUser, session: SessionDep) -> ExtensionList:
    _require_teacher(user, course)
    zone = schedules.zone_of(session, course=course)
    items = [schedules.extension_public(e, i, zone=zone) for e, i in schedules.extensions(session, course=course)]
    return ExtensionList(course=course, timezone=zone, items=items)


@router.post("/{course}/extensions", status_code=201, response_model=ExtensionPublic, responses=errors(403, 404, 422))
def grant_extension(
    course: COURSE, body: ExtensionCreate, user: StaffUser, session: SessionDep, catalogue: CatalogueDep
) -> ExtensionPublic:
    """Give a learner their own due time for one exercise (a second grant replaces the first); their
    submissions' lateness is recomputed."""
    _require_teacher(user, course)
    catalogue.get(body.exercise_id)
    ident = schedules.find_learner(session, subject=body.user, issuer=body.issuer)
    ext = schedules.grant_extension(
        session, course=course, identity=ident, exercise_id=body.exercise_id, due_at=body.due_at, by_user=user.user
    )
    session.commit()
    return schedules.extension_public(ext, ident, zone=schedules.zone_of(session, course=course))


@router.delete("/{course}/extensions/{extension_id}", status_code=204, responses=errors(403, 404))
def revoke_extension(
    course: COURSE, extension_id: Annotated[int, Path(ge=1, le=2**31 - 1)], user: StaffUser, session: SessionDep
) -> Response:
    _require_teacher(user, course)
    schedules.revoke_extension(session, course=course, extension_id=extension_id)
    session.commit()
    return Response(status_code=204)
