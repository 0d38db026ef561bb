"""Progress events: written by workers into the database, streamed to clients as server-sent events."""
from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from service.submissions.models import ProgressEvent

POLL_S = 0.25
KEEPALIVE_S = 15.0


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


async def stream(factory: sessionmaker[Session], *, submission_id: str, after_id: int = 0) -> AsyncIterator[str]:
    """Yield SSE frames until the grade is stored ('done'); a comment line keeps idle connections open."""
    idle = 0.0
    while True:
        rows = await run_in_threadpool(_fetch, factory, submission_id, after_id)
        finished = False
        for event_id, event, data in rows:
            after_id = event_id
            yield format_sse(event_id, event, data)
            finished = finished or event == "done"
        if finished:
            return
        if rows:
            idle = 0.0
        else:
            idle += POLL_S
            if idle >= KEEPALIVE_S:
                idle = 0.0
                yield ": keep-alive\n\n"
        await asyncio.sleep(POLL_S)
