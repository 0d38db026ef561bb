"""Deadlines on the pages: the instructor's schedule page of a course (every exercise's opening, due time and
late policy, extensions, the course's zone), and what learner pages show of deadlines and lateness.

Forms take times as the browser's `datetime-local` (no zone) in the course's zone, named beside the field;
they are stored as UTC instants, like the API's RFC 3339 times. Same services, same checks as the API.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from collections.abc import Iterable
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session

from service.courses import schedules
from service.courses.lateness import LateKind, LatePolicy
from service.deps import CatalogueDep, SessionFactoryDep
from service.errors import Forbidden, ServiceError, clip
from service.messages import WEB, error
from service.web.core import PostViewerDep, ViewerDep, render
from service.web.i18n import t

router = APIRouter(prefix="/teach", include_in_schema=False)
FORM_TIME = "%Y-%m-%dT%H:%M"  # what a datetime-local field sends and shows


def _teaches(viewer, course: str) -> None:
    if not viewer.principal.can_teach(course):
        raise Forbidden(error("not_instructor", course=clip(course)))


# ---- what every page shows ------------------------------------------------------------------------------


def shown_time(value: dt.datetime | None, zone: str) -> str:
    """`2026-09-30 23:59 +08:00` in the course's zone (the zone's name is shown beside it)."""
    if value is None:
        return ""
    aware = value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value
    return aware.astimezone(zoneinfo.ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M %z").replace("+0000", "+00:00")


def duration(seconds: int, lang: str) -> str:
    """`1 d 2 h 5 min` (the two largest units; seconds only under a minute)."""
    days, rest = divmod(max(0, seconds), 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [(days, "dur_d"), (hours, "dur_h"), (minutes, "dur_min")]
    shown = [t(key, lang, n=n) for n, key in parts if n][:2]
    return " ".join(shown) or t("dur_s", lang, n=secs)


def policy_text(policy: LatePolicy, lang: str) -> str:
    key = {LateKind.PER_DAY: "late_per_day", LateKind.PER_HOUR: "late_per_hour"}.get(policy.kind)
    if key is not None:
        return t(key, lang, percent=f"{policy.percent:g}", floor=f"{policy.floor_percent:g}")
    return t("late_closed" if policy.kind == LateKind.CLOSED else "late_none", lang)


def submission_stamp(session: Session, *, sub, lang: str) -> dict:
    """The time stamp and lateness line of a submission page."""
    zone = schedules.zone_of(session, course=sub.course)
    late = sub.late_by_s > 0
    text = t("late_by", lang, duration=duration(sub.late_by_s, lang), penalty=f"{sub.penalty_percent:g}")
    return {
        "zone": zone,
        "submitted": shown_time(sub.created_at, zone),
        "iso": sub.created_at.replace(tzinfo=dt.UTC).isoformat(timespec="seconds"),
        "late": late,
        "late_text": text if late else t("on_time", lang),
    }


def learner_deadlines(
    session: Session, *, courses: Iterable[str], identity_id: int, lang: str
) -> dict[str, list[dict]]:
    """Per exercise id, its due time in each offered course that scheduled it (the learner's extension wins),
    in that course's zone, and the late policy in words."""
    found = schedules.Deadlines.load(session, courses=courses, identity_ids=[identity_id])
    out: dict[str, list[dict]] = {}
    for (course, ex_id), sched in sorted(found.schedules.items()):
        zone = found.zones.get(course, schedules.DEFAULT_ZONE)
        extended = found.extended.get((course, identity_id, ex_id))
        due = sched.due_for(extended)
        out.setdefault(ex_id, []).append(
            {
                "course": course,
                "zone": zone,
                "due": shown_time(due, zone),
                "due_iso": due.replace(tzinfo=dt.UTC).isoformat() if due else "",
                "opens": shown_time(sched.opens_at, zone)
                if sched.opens_at and sched.opens_at > dt.datetime.now(dt.UTC).replace(tzinfo=None)
                else "",
                "opens_iso": sched.opens_at.replace(tzinfo=dt.UTC).isoformat() if sched.opens_at else "",
                "extended": extended is not None,
                "policy": policy_text(sched.policy, lang),
            }
        )
    return out


# ---- the instructor's schedule page ---------------------------------------------------------------------


def _form_time(value: dt.datetime | None, zone: str) -> str:
    if value is None:
        return ""
    return value.replace(tzinfo=dt.UTC).astimezone(zoneinfo.ZoneInfo(zone)).strftime(FORM_TIME)


def _parse_local(text: str, zone: str) -> dt.datetime | None:
    """A datetime-local value in the course's zone as an aware instant; empty: none."""
    text = text.strip()
    if not text:
        return None
    try:
        naive = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ServiceError(WEB.fill("bad_local_time", value=clip(text)), code="bad_time", status_code=422) from None
    if naive.tzinfo is not None:
        return naive
    return naive.replace(tzinfo=zoneinfo.ZoneInfo(zone))


def _refused(request: Request, viewer, exc: ServiceError, *, course: str, catalogue, open_session):
    """A refused form: the schedule page again, with the reason in the page's language and its status."""
    return _page(
        request,
        viewer,
        course=course,
        catalogue=catalogue,
        open_session=open_session,
        message=exc.text(viewer.lang),
        status=exc.status_code,
    )


def _page(request: Request, viewer, *, course: str, catalogue, open_session, message: str = "", status: int = 200):
    with open_session() as session:
        zone = schedules.zone_of(session, course=course)
        rows = schedules.schedules(session, course=course)
        ext = schedules.extensions(session, course=course)
        session.expunge_all()
        session.commit()
    items = []
    for ex in catalogue:
        row = rows.get(ex.id)
        sched = schedules.to_schedule(row)
        items.append(
            {
                "id": ex.id,
                "title": ex.manifest.title.zh if viewer.lang == "zh" else ex.manifest.title.en,
                "opens": shown_time(sched.opens_at, zone),
                "due": shown_time(sched.due_at, zone),
                "opens_form": _form_time(sched.opens_at, zone),
                "due_form": _form_time(sched.due_at, zone),
                "policy": sched.policy,
                "policy_text": policy_text(sched.policy, viewer.lang),
            }
        )
    extensions = [
        {"id": e.id, "who": f"{i.name} ({i.issuer}:{i.subject})", "exercise_id": e.exercise_id,
         "due": shown_time(e.due_at, zone)}
        for e, i in ext
    ]  # fmt: skip
    return render(
        request,
        "schedule.html",
        viewer=viewer,
        status_code=status,
        course=course,
        zone=zone,
        items=items,
        extensions=extensions,
        kinds=[k.value for k in LateKind],
        message=message,
        saved=request.query_params.get("saved") == "1",
    )


def _back(course: str) -> RedirectResponse:
    return RedirectResponse(f"/teach/courses/{quote(course, safe='')}/schedule?saved=1", status_code=303)


@router.get("/courses/{course}/schedule")
def schedule_page(
    request: Request, course: str, viewer: ViewerDep, catalogue: CatalogueDep, open_session: SessionFactoryDep
) -> Response:
    _teaches(viewer, course)
    return _page(request, viewer, course=course, catalogue=catalogue, open_session=open_session)


@router.post("/courses/{course}/schedule/{exercise_id}")
def set_schedule(
    request: Request,
    course: str,
    exercise_id: str,
    viewer: PostViewerDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    opens_at: Annotated[str, Form(max_length=40)] = "",
    due_at: Annotated[str, Form(max_length=40)] = "",
    kind: Annotated[str, Form(max_length=10)] = "none",
    percent: Annotated[float, Form(ge=0, le=100)] = 0.0,
    floor_percent: Annotated[float, Form(ge=0, le=100)] = 0.0,
) -> Response:
    _teaches(viewer, course)
    catalogue.get(exercise_id)
    try:
        with open_session() as session:
            zone = schedules.zone_of(session, course=course)
            policy = LatePolicy(
                kind=LateKind(kind) if kind in LateKind.__members__.values() else LateKind.NONE,
                percent=percent,
                floor_percent=floor_percent,
            )
            schedules.put_schedule(
                session,
                course=course,
                exercise_id=exercise_id,
                opens_at=_parse_local(opens_at, zone),
                due_at=_parse_local(due_at, zone),
                policy=policy,
                by_user=viewer.principal.user,
            )
            session.commit()
    except ServiceError as exc:
        return _refused(request, viewer, exc, course=course, catalogue=catalogue, open_session=open_session)
    return _back(course)


@router.post("/courses/{course}/extensions")
def add_extension(
    request: Request,
    course: str,
    viewer: PostViewerDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    user: Annotated[str, Form(min_length=1, max_length=200)],
    exercise_id: Annotated[str, Form(min_length=1, max_length=100)],
    due_at: Annotated[str, Form(min_length=1, max_length=40)],
    issuer: Annotated[str, Form(min_length=1, max_length=200)] = "titangrade",
) -> Response:
    _teaches(viewer, course)
    try:
        catalogue.get(exercise_id)
        with open_session() as session:
            zone = schedules.zone_of(session, course=course)
            due = _parse_local(due_at, zone)
            assert due is not None  # min_length=1
            ident = schedules.find_learner(session, subject=user.strip(), issuer=issuer.strip())
            schedules.grant_extension(
                session,
                course=course,
                identity=ident,
                exercise_id=exercise_id,
                due_at=due,
                by_user=viewer.principal.user,
            )
            session.commit()
    except ServiceError as exc:
        return _refused(request, viewer, exc, course=course, catalogue=catalogue, open_session=open_session)
    return _back(course)


@router.post("/courses/{course}/timezone")
def set_timezone(
    request: Request,
    course: str,
    viewer: PostViewerDep,
    catalogue: CatalogueDep,
    open_session: SessionFactoryDep,
    zone: Annotated[str, Form(min_length=1, max_length=64)],
) -> Response:
    _teaches(viewer, course)
    try:
        with open_session() as session:
            schedules.set_zone(session, course=course, zone=zone.strip(), by_user=viewer.principal.user)
            session.commit()
    except ServiceError as exc:
        return _refused(request, viewer, exc, course=course, catalogue=catalogue, open_session=open_session)
    return _back(course)
