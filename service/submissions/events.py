"""Progress events: written by workers into the database, streamed to clients as server-sent events."""
from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import AsyncIterator, Callable

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from service.submissions.models import ProgressEvent

POLL_S = 0.25
KEEPALIVE_S = 15.0
ESTIMATE_S = 3.0  # how often a queued submission's waiting-time estimate is recomputed on the stream


def add(session: Session, *, submission_id: str, event: dict) -> None:
    """Persist one engine progress event (so any API process can stream it)."""
    data = {k: v for k, v in event.items() if k != "event"}
    session.add(ProgressEvent(submission_id=submission_id, event=str(event.get("event", "progress"))[:20], data=data))


def since(session: Session, *, submission_id: str, after_id: int) -> list[ProgressEvent]:
    return list(session.scalars(select(ProgressEvent).where(ProgressEvent.submission_id == submission_id,
                                                            ProgressEvent.id > after_id)
                                .order_by(ProgressEvent.id)))


def _fetch(factory: sessionmaker[Session], submission_id: str, after_id: int) -> list[tuple[int, str, dict]]:
    with factory() as session:
        rows = since(session, submission_id=submission_id, after_id=after_id)
        out = [(r.id, r.event, r.data) for r in rows]
        session.commit()
        return out


def format_sse(event_id: int, event: str, data: dict) -> str:
    return f"id: {event_id}\nevent: {event}\ndata: {json.dumps({'event': event, **data})}\n\n"


def estimator(factory: sessionmaker[Session], *, submission_id: str, settings) -> Callable[[], dict | None]:
    """A callable giving the submission's current waiting-time estimate (None once it is not queued)."""
    from service.submissions.models import Submission
    from service.submissions.service import wait_estimate

    def current() -> dict | None:
        with factory() as session:
            sub = session.get(Submission, submission_id)
            found = wait_estimate(session, sub=sub, settings=settings) if sub is not None else None
            session.commit()
            return found

    return current


def _worth_sending(new: dict, last: dict | None) -> bool:
    """Send an estimate when the position or capacity changes, or the finish moves by 5 s or 10 %."""
    if last is None or (new["position"], new["worker_slots"]) != (last["position"], last["worker_slots"]):
        return True
    if (new["finish_at"] is None) != (last["finish_at"] is None):
        return True
    if new["finish_at"] is None:
        return False
    moved = abs((dt.datetime.fromisoformat(new["finish_at"][:-1])
                 - dt.datetime.fromisoformat(last["finish_at"][:-1])).total_seconds())
    return moved >= max(5.0, 0.1 * (new["finish_in_s"] or 0.0))


async def stream(factory: sessionmaker[Session], *, submission_id: str, after_id: int = 0,
                 estimate: Callable[[], dict | None] | None = None) -> AsyncIterator[str]:
    """Yield SSE frames until the grade is stored ('done'); a comment line keeps idle connections open.
    With `estimate`, an `estimate` frame (no id: it is not replayed) reports the waiting time while queued."""
    idle, since_estimate, last_estimate = 0.0, ESTIMATE_S, None
    while True:
        rows = await run_in_threadpool(_fetch, factory, submission_id, after_id)
        finished = False
        for event_id, event, data in rows:
            after_id = event_id
            yield format_sse(event_id, event, data)
            finished = finished or event == "done"
        if finished:
            return
        if estimate is not None and since_estimate >= ESTIMATE_S:
            since_estimate = 0.0
            found = await run_in_threadpool(estimate)
            if found is not None and _worth_sending(found, last_estimate):
                last_estimate = found
                idle = 0.0
                yield f"event: estimate\ndata: {json.dumps({'event': 'estimate', **found})}\n\n"
        since_estimate += POLL_S
        if rows:
            idle = 0.0
        else:
            idle += POLL_S
            if idle >= KEEPALIVE_S:
                idle = 0.0
                yield ": keep-alive\n\n"
        await asyncio.sleep(POLL_S)
