"""Progress events: written by workers into the database, streamed to clients as server-sent events.

Every event belongs to one grading run of a submission (ProgressEvent.run; a regrade starts run + 1).
A grading process writes its events fenced by its job's lease (`add_fenced`): once the lease is lost and
the job reclaimed, the old attempt's events are dropped instead of joining the new attempt's stream.
A stream follows the submission's current run and ends after that run's `done`. A client that reconnects
with the `done` event's id (as a browser's EventSource does after every normal close) gets 204 No
Content, which tells EventSource to stop. A stream also ends after `max_s`; the client resumes with
Last-Event-ID. While the database cannot be reached an open stream stays open (keep-alives) and resumes
when it answers; a new one is refused with 503 like any route.

Rows are typed events (grading/progress.py) and the stream is FastAPI's: `stream` yields
`fastapi.sse.ServerSentEvent`s and `encoded` frames them with `fastapi.sse.format_sse_event` for an
`EventSourceResponse`. The routes return that response themselves rather than being generator path
operations, because they answer 204 (run done) or 429 (no stream slot) before anything streams, and a
stream must not hold a request's database session for its whole life; so the keep-alive is ours too.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass

from fastapi.sse import ServerSentEvent, format_sse_event
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from grading.progress import Done, Estimate, Event, Requeued, from_row, kind_of
from service import signals
from service.outage import is_unavailable
from service.queue.causes import cause_of
from service.queue.models import Job
from service.states import JobStatus
from service.submissions.models import ProgressEvent, Submission

KEEPALIVE_S = 15.0
RETRY_MS = 3000  # how long EventSource waits before reconnecting after a timeout close
ESTIMATE_S = 3.0  # how often a queued submission's waiting-time estimate is recomputed on the stream


def add(session: Session, *, submission_id: str, event: Event) -> None:
    """Persist one progress event (so any API process can stream it); it joins the current run."""
    session.add(ProgressEvent.of(submission_id=submission_id, event=event))


def add_fenced(session: Session, *, submission_id: str, job_id: int, lease_token: str, batch: Sequence[Event]) -> bool:
    """Persist a grading run's events only while its lease is still held; False (nothing written) once the
    lease was lost, so a run that was reclaimed never writes into the new attempt's stream. The job row is
    locked (FOR SHARE) so a reclaim cannot commit between the check and the insert."""
    held = session.scalar(
        select(Job.id)
        .where(Job.id == job_id, Job.lease_token == lease_token, Job.status == JobStatus.RUNNING)
        .with_for_update(read=True)
    )
    if held is None:
        return False
    for event in batch:
        add(session, submission_id=submission_id, event=event)
    return True


def since(session: Session, *, submission_id: str, after_id: int, run: int | None = None) -> list[ProgressEvent]:
    stmt = select(ProgressEvent).where(ProgressEvent.submission_id == submission_id, ProgressEvent.id > after_id)
    if run is not None:
        stmt = stmt.where(ProgressEvent.run == run)
    return list(session.scalars(stmt.order_by(ProgressEvent.id)))


@dataclass(frozen=True, slots=True)
class StreamPlan:
    run: int
    after_id: int


def plan(session: Session, *, sub: Submission, last_event_id: int | None) -> StreamPlan | None:
    """Where a (re)connecting stream starts in the current run; None when that run is done and the client
    has already seen its `done` (answer 204)."""
    done_id = session.scalar(
        select(func.max(ProgressEvent.id)).where(
            ProgressEvent.submission_id == sub.id, ProgressEvent.run == sub.run, ProgressEvent.event == "done"
        )
    )
    if last_event_id is None:
        return StreamPlan(sub.run, 0)
    if done_id is not None and last_event_id >= done_id:
        return None
    newest = session.scalar(select(func.max(ProgressEvent.id)).where(ProgressEvent.submission_id == sub.id)) or 0
    return StreamPlan(sub.run, min(last_event_id, newest))  # an id from the future cannot hide new events


def _fetch(factory: sessionmaker[Session], submission_id: str, run: int, after_id: int) -> list[tuple[int, Event]]:
    with factory() as session:
        rows = since(session, submission_id=submission_id, after_id=after_id, run=run)
        out = [(r.id, from_row(r.event, r.data)) for r in rows]
        session.commit()
        return out


def estimator(factory: sessionmaker[Session], *, submission_id: str, settings) -> Callable[[], dict | None]:
    """A callable giving the submission's current waiting-time estimate (None once it is not queued)."""
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
    moved = abs(
        (dt.datetime.fromisoformat(new["finish_at"]) - dt.datetime.fromisoformat(last["finish_at"])).total_seconds()
    )
    return moved >= max(5.0, 0.1 * (new["finish_in_s"] or 0.0))


async def stream(
    factory: sessionmaker[Session],
    *,
    submission_id: str,
    start: StreamPlan,
    poll_s: float,
    max_s: float,
    estimate: Callable[[], dict | None] | None = None,
) -> AsyncGenerator[ServerSentEvent]:
    """Yield the run's events until its `done` (or `max_s`), each with its row id for Last-Event-ID, after a
    `retry` (EventSource's reconnect delay); comments keep idle connections open. With `estimate`, an
    `estimate` event (no id: it is not replayed) reports the waiting time while queued.

    A committed event of this submission wakes the stream at once (written in this process, or NOTIFY on
    PostgreSQL: service/signals.py); `poll_s` is the fallback, e.g. for events another process wrote to SQLite.
    """
    deadline = time.monotonic() + max_s
    after_id, quiet_since = start.after_id, time.monotonic()
    last_estimate, estimated_at = None, float("-inf")
    loop, new_event = asyncio.get_running_loop(), asyncio.Event()

    def wake(key: str) -> None:
        if key == submission_id:
            loop.call_soon_threadsafe(new_event.set)

    unsubscribe = signals.subscribe(signals.EVENTS, wake)
    try:
        yield ServerSentEvent(retry=RETRY_MS)
        while True:
            new_event.clear()  # before the fetch: an event committed after it sets this again
            try:
                rows = await run_in_threadpool(_fetch, factory, submission_id, start.run, after_id)
            except Exception as exc:  # the response has started: no 503 now; keep the stream, poll again
                if not is_unavailable(exc):
                    raise
                rows = []
            for event_id, event in rows:
                after_id = event_id
                kind = kind_of(event)
                data = {**event.to_json(), "run": start.run}
                if isinstance(event, Requeued):  # the page says why in its own words, by cause key
                    data["cause"] = cause_of(event.reason)
                yield ServerSentEvent(id=str(event_id), event=kind, data=data)
                if kind == Done.kind:
                    return
            now = time.monotonic()
            if estimate is not None and now - estimated_at >= ESTIMATE_S:
                estimated_at = now
                try:
                    found = await run_in_threadpool(estimate)
                except Exception as exc:
                    if not is_unavailable(exc):
                        raise
                    found = None
                if found is None:  # not waiting (claimed): a requeue later sends its estimate afresh
                    last_estimate = None
                elif _worth_sending(found, last_estimate):
                    last_estimate, quiet_since = found, now
                    yield ServerSentEvent(event=Estimate.kind, data=Estimate(estimate=found).to_json())
            if rows:
                quiet_since = now
            elif now - quiet_since >= KEEPALIVE_S:
                quiet_since = now
                yield ServerSentEvent(comment="keep-alive")
            if now >= deadline:
                yield ServerSentEvent(comment="stream time limit reached; reconnect with Last-Event-ID")
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(new_event.wait(), poll_s)
    finally:
        unsubscribe()


async def encoded(events: AsyncGenerator[ServerSentEvent]) -> AsyncIterator[bytes]:
    """The events in the text/event-stream wire format, for an EventSourceResponse (`data` as JSON); closing
    this closes `events` (its wake-up subscription ends with it)."""
    async with contextlib.aclosing(events):
        async for sse in events:
            data = None if sse.data is None else json.dumps(sse.data)
            yield format_sse_event(data_str=data, event=sse.event, id=sse.id, retry=sse.retry, comment=sse.comment)
