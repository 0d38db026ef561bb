"""What a resource-link launch leaves for after its answer: a roster sync of its course (NRPS) and the
tool's own line item (AGS), each run as a background task once the browser has its answer, so a launch
never waits on the platform and holds no database connection while the platform is called."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from sqlalchemy.orm import Session, sessionmaker
from starlette.background import BackgroundTasks

from grading.exercise import Catalogue
from service.lti import lineitems, nrps
from service.lti.calls import PlatformCalls
from service.lti.models import LtiPlatform, PlatformRef

FollowUp = Callable[[sessionmaker[Session], PlatformCalls], None]


def after_launch(
    session: Session, *, platform: PlatformRef, claims: dict, launched: dict, catalogue: Catalogue, settings
) -> list[FollowUp]:
    """In the launch's transaction: note what the claims offer and claim the follow-ups that are due."""
    found: list[FollowUp] = []
    context_id = nrps.note_launch(
        session, platform_id=platform.id, claims=claims, throttle_s=settings.lti_roster_sync_s
    )
    if context_id is not None:
        found.append(
            lambda sessions, calls: nrps.sync_in_background(
                sessions, calls=calls, context_id=context_id, max_members=settings.lti_roster_max_members
            )
        )
    row = session.get(LtiPlatform, platform.id)
    job = lineitems.note_launch(
        session,
        platform=platform,
        token_url=row.auth_token_url if row is not None else "",
        claims=claims,
        course=launched["course"],
        exercise_id=launched.get("exercise_id"),
        catalogue=catalogue,
    )
    if job is not None:
        found.append(lambda sessions, calls: lineitems.ensure_in_background(sessions, calls=calls, job=job))
    return found


def tasks(follow_ups: list[FollowUp], *, sessions: sessionmaker[Session], calls: PlatformCalls) -> BackgroundTasks:
    """The follow-ups as the answer's background tasks (Starlette runs them after the answer is sent)."""
    background = BackgroundTasks()
    for follow_up in follow_ups:
        background.add_task(partial(follow_up, sessions, calls))
    return background
