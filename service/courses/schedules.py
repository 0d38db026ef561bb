"""Deadlines of a course: exercise schedules, per-learner extensions and the course's time zone.

The rules are in service/courses/lateness.py; this module stores them and keeps each submission's stored
lateness (`late_by_s`, `penalty_percent`) right: set at upload by the intake (`Deadlines`), recomputed here
whenever a schedule or an extension changes, so the gradebook, the API and the grade events read one value.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.auth.models import LOCAL_ISSUER, Identity
from service.courses import lateness
from service.courses.lateness import LateKind, LatePolicy, Schedule, Window
from service.courses.models import CourseSettings
from service.courses.schedule_models import ExerciseSchedule, Extension
from service.courses.schemas import ExtensionPublic, LatePolicyBody, ScheduleList, SchedulePublic
from service.errors import Forbidden, NotFound, ServiceError, clip
from service.messages import error
from service.submissions.models import Submission
from service.timefmt import rfc3339

DEFAULT_ZONE = "UTC"


EARLIEST, LATEST = dt.datetime(1970, 1, 1), dt.datetime(9000, 1, 1)  # shown in any zone without overflow


def naive_utc(value: dt.datetime | None) -> dt.datetime | None:
    """An aware time as stored: naive UTC; one outside 1970..9000 is a 422 (no zone could show it)."""
    if value is None:
        return None
    try:
        stored = value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo is not None else value
    except OverflowError:
        stored = LATEST
    if not EARLIEST <= stored < LATEST:
        raise ServiceError(
            f"{clip(value.isoformat())} is outside the years 1970 to 9000; give a real deadline",
            code="bad_time",
            status_code=422,
        )
    return stored


def local_rfc3339(value: dt.datetime | None, zone: str) -> str | None:
    """RFC 3339 in the course's zone (the offset of that instant there), for people; APIs also send UTC."""
    if value is None:
        return None
    aware = value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value
    return aware.astimezone(zoneinfo.ZoneInfo(zone)).isoformat(timespec="minutes")


def check_zone(name: str) -> str:
    """An IANA zone name zoneinfo knows, or a 422 naming the problem."""
    try:
        if not name or len(name) > 64 or name != name.strip():
            raise ValueError(name)
        zoneinfo.ZoneInfo(name)
    except (ValueError, zoneinfo.ZoneInfoNotFoundError):
        raise ServiceError(error("bad_timezone", zone=clip(name)), code="bad_timezone", status_code=422) from None
    return name


def zone_of(session: Session, *, course: str) -> str:
    row = session.get(CourseSettings, course)
    return row.timezone if row is not None and row.timezone else DEFAULT_ZONE


def set_zone(session: Session, *, course: str, zone: str, by_user: str) -> None:
    row = session.get(CourseSettings, course)
    if row is None:
        row = CourseSettings(course=course)
        session.add(row)
    row.timezone, row.updated_by = check_zone(zone), by_user


def to_schedule(row: ExerciseSchedule | None) -> Schedule:
    if row is None:
        return Schedule()
    policy = LatePolicy(kind=LateKind(row.late_kind), percent=row.late_percent, floor_percent=row.floor_percent)
    return Schedule(opens_at=row.opens_at, due_at=row.due_at, policy=policy)


def schedules(session: Session, *, course: str) -> dict[str, ExerciseSchedule]:
    rows = session.scalars(select(ExerciseSchedule).where(ExerciseSchedule.course == course))
    return {row.exercise_id: row for row in rows}


def check_policy(*, opens_at: dt.datetime | None, due_at: dt.datetime | None, policy: LatePolicy) -> None:
    """A schedule that can be applied, or a 422 naming what to change."""

    def bad(problem: str) -> ServiceError:
        return ServiceError(
            error("bad_late_policy", kind=policy.kind, problem=problem), code="bad_late_policy", status_code=422
        )

    if opens_at is not None and due_at is not None and opens_at >= due_at:
        raise ServiceError(
            error("bad_schedule", opens_at=rfc3339(opens_at), due_at=rfc3339(due_at)),
            code="bad_schedule",
            status_code=422,
        )
    for name, value in (("percent", policy.percent), ("floor_percent", policy.floor_percent)):
        if not 0.0 <= value <= 100.0:
            raise bad(f"{name} must be between 0 and 100, not {value}")
    if policy.kind in (LateKind.PER_DAY, LateKind.PER_HOUR) and policy.percent <= 0:
        raise bad("percent must be above 0 (or use kind none)")
    if policy.kind != LateKind.NONE and due_at is None:
        raise ServiceError(error("no_due_date", kind=policy.kind), code="no_due_date", status_code=422)


def put_schedule(
    session: Session,
    *,
    course: str,
    exercise_id: str,
    opens_at: dt.datetime | None,
    due_at: dt.datetime | None,
    policy: LatePolicy,
    by_user: str,
) -> ExerciseSchedule:
    """Set (replace) one exercise's schedule and recompute its submissions' lateness (the caller commits)."""
    opens_at, due_at = naive_utc(opens_at), naive_utc(due_at)
    check_policy(opens_at=opens_at, due_at=due_at, policy=policy)
    row = session.get(ExerciseSchedule, (course, exercise_id))
    if row is None:
        row = ExerciseSchedule(course=course, exercise_id=exercise_id)
        session.add(row)
    row.opens_at, row.due_at, row.updated_by = opens_at, due_at, by_user
    row.late_kind, row.late_percent, row.floor_percent = policy.kind.value, policy.percent, policy.floor_percent
    session.flush()
    recompute(session, course=course, exercise_id=exercise_id)
    return row


def find_learner(session: Session, *, subject: str, issuer: str = LOCAL_ISSUER) -> Identity:
    found = session.scalar(select(Identity).where(Identity.issuer == issuer, Identity.subject == subject))
    if found is None:
        raise NotFound(error("unknown_learner", subject=clip(subject), issuer=clip(issuer)), code="unknown_learner")
    return found


def grant_extension(
    session: Session, *, course: str, identity: Identity, exercise_id: str, due_at: dt.datetime, by_user: str
) -> Extension:
    """Give one learner their own due time for one exercise (a second grant replaces the first; the caller commits)."""
    due = naive_utc(due_at)
    assert due is not None
    row = session.scalar(
        select(Extension).where(
            Extension.course == course, Extension.identity_id == identity.id, Extension.exercise_id == exercise_id
        )
    )
    if row is None:
        row = Extension(course=course, identity_id=identity.id, exercise_id=exercise_id)
        session.add(row)
    row.due_at, row.granted_by = due, by_user
    session.flush()
    recompute(session, course=course, exercise_id=exercise_id, identity_id=identity.id)
    return row


def revoke_extension(session: Session, *, course: str, extension_id: int) -> None:
    row = session.get(Extension, extension_id)
    if row is None or row.course != course:
        raise NotFound(f"no extension {extension_id} in course {clip(course)}", code="unknown_extension")
    session.delete(row)
    session.flush()
    recompute(session, course=course, exercise_id=row.exercise_id, identity_id=row.identity_id)


def extensions(session: Session, *, course: str) -> list[tuple[Extension, Identity]]:
    stmt = (
        select(Extension, Identity)
        .join(Identity, Identity.id == Extension.identity_id)
        .where(Extension.course == course)
        .order_by(Extension.exercise_id, Identity.issuer, Identity.subject)
    )
    return [(e, i) for e, i in session.execute(stmt)]


def recompute(session: Session, *, course: str, exercise_id: str, identity_id: int | None = None) -> int:
    """Each submission's lateness from its time (created_at: a regrade keeps it) under today's rules."""
    schedule = to_schedule(session.get(ExerciseSchedule, (course, exercise_id)))
    ext_rows = select(Extension.identity_id, Extension.due_at).where(
        Extension.course == course, Extension.exercise_id == exercise_id
    )
    subs = select(Submission).where(Submission.course == course, Submission.exercise_id == exercise_id)
    if identity_id is not None:
        ext_rows, subs = (
            ext_rows.where(Extension.identity_id == identity_id),
            subs.where(Submission.identity_id == identity_id),
        )
    extended: dict[int, dt.datetime] = dict(session.execute(ext_rows).all())
    changed = 0
    for sub in session.scalars(subs):
        due = schedule.due_for(extended.get(sub.identity_id))
        late = lateness.assess(schedule.policy, submitted_at=sub.created_at, due_at=due)
        if (sub.late_by_s, sub.penalty_percent) != (late.late_by_s, late.penalty_percent):
            sub.late_by_s, sub.penalty_percent = late.late_by_s, late.penalty_percent
            changed += 1
    return changed


@dataclass(slots=True)
class Deadlines:
    """The schedules, extensions and zones an intake batch needs, read in three queries."""

    schedules: dict[tuple[str, str], Schedule] = field(default_factory=dict)
    extended: dict[tuple[str, int, str], dt.datetime] = field(default_factory=dict)
    zones: dict[str, str] = field(default_factory=dict)

    @classmethod
    def load(cls, session: Session, *, courses: Iterable[str], identity_ids: Iterable[int]) -> Deadlines:
        wanted, ids = sorted(set(courses)), sorted(set(identity_ids))
        found = cls()
        for row in session.scalars(select(ExerciseSchedule).where(ExerciseSchedule.course.in_(wanted))):
            found.schedules[(row.course, row.exercise_id)] = to_schedule(row)
        if found.schedules and ids:
            stmt = select(Extension.course, Extension.identity_id, Extension.exercise_id, Extension.due_at).where(
                Extension.course.in_(wanted), Extension.identity_id.in_(ids)
            )
            for course, ident, ex_id, due in session.execute(stmt):
                found.extended[(course, ident, ex_id)] = due
            zones = select(CourseSettings.course, CourseSettings.timezone).where(CourseSettings.course.in_(wanted))
            found.zones = {course: zone or DEFAULT_ZONE for course, zone in session.execute(zones)}
        return found

    def admit(
        self, *, course: str, exercise_id: str, identity_id: int, at: dt.datetime, exempt: bool
    ) -> lateness.Lateness:
        """The upload's lateness, or a 403 when the exercise is not open yet or closed (the course's staff may
        always upload, to try an exercise)."""
        schedule = self.schedules.get((course, exercise_id))
        if schedule is None:
            return lateness.ON_TIME
        due = schedule.due_for(self.extended.get((course, identity_id, exercise_id)))
        state = lateness.window(schedule, at=at, due_at=due)
        zone = self.zones.get(course, DEFAULT_ZONE)
        if state == Window.NOT_OPEN and not exempt:
            opens = local_rfc3339(schedule.opens_at, zone)
            raise Forbidden(
                error("exercise_not_open", exercise=exercise_id, opens_at=opens, zone=zone), code="exercise_not_open"
            )
        if state == Window.CLOSED and not exempt:
            closed = local_rfc3339(due, zone)
            raise Forbidden(
                error("exercise_closed", exercise=exercise_id, due_at=closed, zone=zone), code="exercise_closed"
            )
        return lateness.assess(schedule.policy, submitted_at=at, due_at=due)


def schedule_public(row: ExerciseSchedule | None, *, course: str, exercise_id: str, zone: str) -> SchedulePublic:
    """The API's (and the CLI's and the page's) view of one exercise's schedule; no row: no deadlines."""
    s = to_schedule(row)
    return SchedulePublic(
        course=course,
        exercise_id=exercise_id,
        timezone=zone,
        opens_at=s.opens_at,
        due_at=s.due_at,
        opens_at_local=local_rfc3339(s.opens_at, zone),
        due_at_local=local_rfc3339(s.due_at, zone),
        late_policy=LatePolicyBody(
            kind=s.policy.kind.value, percent=s.policy.percent, floor_percent=s.policy.floor_percent
        ),
        updated_by=row.updated_by if row is not None else "",
        updated_at=row.updated_at if row is not None else None,
    )


def extension_public(ext: Extension, ident: Identity, *, zone: str) -> ExtensionPublic:
    return ExtensionPublic(
        id=ext.id,
        course=ext.course,
        user=ident.subject,
        issuer=ident.issuer,
        name=ident.name,
        exercise_id=ext.exercise_id,
        due_at=ext.due_at,
        due_at_local=local_rfc3339(ext.due_at, zone) or "",
        granted_by=ext.granted_by,
        granted_at=ext.granted_at,
    )


def course_schedules(session: Session, *, course: str, exercise_ids: Iterable[str]) -> ScheduleList:
    """Every exercise of the catalogue (and any scheduled one no longer in it), by id."""
    zone = zone_of(session, course=course)
    rows = schedules(session, course=course)
    ids = sorted(set(exercise_ids) | set(rows))
    items = [schedule_public(rows.get(i), course=course, exercise_id=i, zone=zone) for i in ids]
    return ScheduleList(course=course, timezone=zone, items=items)
