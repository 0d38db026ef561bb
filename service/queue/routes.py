"""The queue health API for staff: failures and retries by cause, dead workers, the oldest queued job."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from service.deps import SessionDep, SettingsDep, StaffUser
from service.openapi import errors
from service.queue import health
from service.queue.schemas import QueueHealthPublic, to_public

router = APIRouter(prefix="/queue", tags=["queue"])
WINDOW_H = Annotated[float, Query(gt=0, le=168, description="the window in hours (at most 7 days)")]


@router.get("/health", response_model=QueueHealthPublic, responses=errors(403, 422))
def queue_health(
    user: StaffUser, session: SessionDep, settings: SettingsDep, window_h: WINDOW_H = 24
) -> QueueHealthPublic:
    """Faulted jobs of the window grouped by cause (failed, recovered, retrying), live and dead workers (no
    heartbeat for `lease_s`) with the jobs they hold, each lane's oldest queued job, and the newest
    not-gradable runs of the submissions you may read (also those regraded since)."""
    report = health.build(session, user=user, window_s=window_h * 3600, dead_after_s=settings.lease_s)
    return to_public(report)
