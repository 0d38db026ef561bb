"""The intake's write: validated uploads stored together, in one transaction (group commit).

Whatever needs no lock (authentication, parsing, notebook validation, course choice, capacity) is done by
the request before; `write` does only what must see the database inside the transaction that stores the
rows: Idempotency-Keys, the rate and attempt limits and supersede, then every row with one executemany
INSERT per table and one commit. On SQLite that transaction holds the single writer lock, so its queries
and Python work are paid once per batch, not once per request.

Items are taken in order, each seeing the ones before it as if they had committed one at a time: two
uploads of one learner count against each other's limits, a repeated key returns the first submission,
and a later attempt supersedes an earlier queued one. One item's refusal (429, 403, 422) is its own; the
others are stored.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import cast

from sqlalchemy import Row, Table, bindparam, func, insert, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from grading.exercise import Exercise
from service import signals
from service.auth.principal import Principal
from service.config import Settings
from service.courses import service as courses
from service.courses.schedules import Deadlines
from service.db import utcnow
from service.errors import Forbidden, ServiceError, TooMany, clip
from service.messages import error
from service.outbox.receivers import Receivers
from service.queue import service as queue
from service.queue.models import Job, job_row, learner_key
from service.states import SubmissionStatus
from service.submissions import received
from service.submissions.models import ProgressEvent, Submission
from service.submissions.supersede import supersede_queued, superseded_message, supersedes


@dataclass(frozen=True, slots=True, kw_only=True)
class Upload:
    """One validated upload, ready to be stored."""

    user: Principal
    exercise: Exercise
    course: str
    notebook: bytes
    lang: str
    idempotency_key: str | None
    fingerprint: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Accepted:
    """What the response tells about a stored submission; `created` is False for an Idempotency-Key replay."""

    id: str
    status: str
    exercise_id: str
    course: str
    attempt: int
    created: bool = True


Admission = Accepted | ServiceError  # an upload's answer: stored (or replayed), or refused


def key_reused(key: str, submission_id: str) -> ServiceError:
    return ServiceError(
        error("idempotency_key_reused", key=clip(key), submission_id=submission_id),
        code="idempotency_key_reused",
        status_code=422,
    )


_Group = tuple[int, str, str]  # (identity, course, exercise): what the limits count per


@dataclass(slots=True)
class _Counts:
    """The limit counters of the batch's learners per course and exercise, from the database and then from
    the batch itself. Per course: what a learner does in one course (or what an integration files for them
    there) never uses up their submissions in another."""

    recent: Counter[_Group] = field(default_factory=Counter)  # submissions in the last minute
    oldest: dict[_Group, dt.datetime] = field(default_factory=dict)  # the oldest of those
    done: Counter[_Group] = field(default_factory=Counter)  # attempts
    superseded: Counter[_Group] = field(default_factory=Counter)  # attempts not counted: superseded, not gradable


@dataclass(slots=True)
class _New:
    row: dict
    created: bool = True


def write(
    session: Session, items: Sequence[Upload], *, settings: Settings, receivers: Receivers | None = None
) -> list[Admission]:
    """Store what may be stored of `items`, in order, and commit; one admission per item. A database error
    propagates (the caller rolls back): then nothing of the batch was written. `receivers`: who listens for
    "submission received" (received.py); None writes no such row."""
    earlier = _earlier_keys(session, items)
    counts = limit_counts(session, identity_ids={i.user.identity_id for i in items})
    policies = courses.supersede_policies(session, courses={i.course for i in items}, default=settings.supersede_queued)
    deadlines = Deadlines.load(
        session, courses={i.course for i in items}, identity_ids={i.user.identity_id for i in items}
    )
    results: list[ServiceError | Accepted | _New] = []
    rows: list[dict] = []
    by_key: dict[tuple[int, str], _New] = {}
    latest: dict[tuple[int, str, str], dict] = {}  # (identity, course, exercise) -> the batch's latest queued row
    for item in items:
        uid = item.user.identity_id
        key = (uid, item.idempotency_key) if item.idempotency_key else None
        if key is not None and (first := by_key.get(key)) is not None:  # the same key earlier in this batch
            same = first.row["request_hash"] == item.fingerprint
            results.append(_New(first.row, created=False) if same else key_reused(key[1], first.row["id"]))
            continue
        if key is not None and (stored := earlier.get(key)) is not None:
            same = stored.request_hash is None or stored.request_hash == item.fingerprint
            results.append(accepted(stored) if same else key_reused(key[1], stored.id))
            continue
        now = utcnow()
        try:
            late = deadlines.admit(
                course=item.course,
                exercise_id=item.exercise.id,
                identity_id=uid,
                at=now,
                exempt=limits_exempt(item.user, item.course),
            )
            attempt = _admit(item, counts, now=now, settings=settings)
        except ServiceError as exc:
            results.append(exc)
            continue
        row = _row(item, attempt=attempt, now=now)
        row["late_by_s"], row["penalty_percent"] = late.late_by_s, late.penalty_percent
        rows.append(row)
        new = _New(row)
        results.append(new)
        if key is not None:
            by_key[key] = new
        if supersedes(policies[item.course], item.exercise):
            _supersede(session, row, latest, counts)
    if rows:
        _insert(session, rows, receivers, settings=settings)
    session.commit()
    return [_accepted(r) if isinstance(r, _New) else r for r in results]


_EARLIER_KEYS = select(  # built once, as the other statements every batch runs
    Submission.id,
    Submission.identity_id,
    Submission.idempotency_key,
    Submission.request_hash,
    Submission.status,
    Submission.exercise_id,
    Submission.course,
    Submission.attempt,
).where(
    Submission.identity_id.in_(bindparam("ids", expanding=True)),
    Submission.idempotency_key.in_(bindparam("keys", expanding=True)),
)


def _earlier_keys(session: Session, items: Sequence[Upload]) -> dict[tuple[int, str], Row]:
    """The stored submissions the batch's Idempotency-Keys already made."""
    keys = {(i.user.identity_id, i.idempotency_key) for i in items if i.idempotency_key}
    if not keys:
        return {}
    found = session.connection().execute(
        _EARLIER_KEYS, {"ids": sorted({uid for uid, _ in keys}), "keys": sorted({k for _, k in keys})}
    )
    return {(r.identity_id, r.idempotency_key): r for r in found if (r.identity_id, r.idempotency_key) in keys}


_RECENT = Submission.created_at >= bindparam("since")
_LIMIT_COUNTS = (  # built once: building a statement per batch cost more than compiling it (that is cached)
    select(
        Submission.identity_id,
        Submission.course,
        Submission.exercise_id,
        func.count().filter(_RECENT),
        func.min(Submission.created_at).filter(_RECENT),
        func.count(),
        # never graded, so not counted against the limit: superseded, and not gradable (a grader fault)
        func.count().filter(Submission.status.in_((SubmissionStatus.SUPERSEDED, SubmissionStatus.NOT_GRADABLE))),
    )
    .where(Submission.identity_id.in_(bindparam("ids", expanding=True)))
    .group_by(Submission.identity_id, Submission.course, Submission.exercise_id)
)


def limit_counts(session: Session, *, identity_ids: set[int]) -> _Counts:
    """One query for the learners' counters (it reads ix_submissions_learner_limits only); the intake's
    write and the learner page's "attempts left" both count from it."""
    since = utcnow() - dt.timedelta(seconds=60)
    counts = _Counts()
    rows = session.connection().execute(_LIMIT_COUNTS, {"since": since, "ids": sorted(identity_ids)})
    for uid, course, exercise_id, n_recent, oldest, done, superseded in rows:
        group = (uid, course, exercise_id)
        counts.recent[group] = n_recent
        if oldest is not None:
            counts.oldest[group] = oldest
        counts.done[group] = done
        counts.superseded[group] = superseded
    return counts


def limits_exempt(user: Principal, course: str) -> bool:
    """A course's own staff (its instructors, admins) are held to none of its limits; staff of another
    course are limited there as any learner."""
    return user.can_teach(course)


def attempts_left(counts: _Counts, *, user: Principal, course: str, exercise_id: str, limit: int) -> int | None:
    """Graded attempts `user` may still make at `exercise_id` in `course` (superseded and not-gradable ones
    were never graded and do not count); None when unlimited: no limit set, or the course's staff."""
    if not limit or limits_exempt(user, course):
        return None
    key = (user.identity_id, course, exercise_id)
    return max(0, limit - (counts.done[key] - counts.superseded[key]))


def _admit(item: Upload, counts: _Counts, *, now: dt.datetime, settings: Settings) -> int:
    """Enforce the rate and attempt limits of the learner's course and exercise (the course's staff are
    exempt), count the item in; return its attempt number."""
    key = (item.user.identity_id, item.course, item.exercise.id)
    if counts.recent[key] >= settings.submissions_per_minute and not limits_exempt(item.user, item.course):
        oldest = counts.oldest.get(key)
        wait_s = 60 - (now - oldest).total_seconds() if oldest else 60
        raise TooMany(
            error(
                "rate_limited",
                per_minute=settings.submissions_per_minute,
                exercise=item.exercise.id,
                wait_s=max(1, round(wait_s)),
            ),
            retry_after_s=int(wait_s) + 1,
        )
    limit = settings.max_attempts_per_exercise
    if attempts_left(counts, user=item.user, course=item.course, exercise_id=item.exercise.id, limit=limit) == 0:
        raise Forbidden(
            error("attempt_limit", limit=limit, exercise=item.exercise.id),
            code="attempt_limit",
        )
    counts.recent[key] += 1
    counts.oldest.setdefault(key, now)
    counts.done[key] += 1
    return counts.done[key]


def _row(item: Upload, *, attempt: int, now: dt.datetime) -> dict:
    manifest = item.exercise.manifest
    return {
        "id": uuid.uuid4().hex,
        "identity_id": item.user.identity_id,
        "user": item.user.name,
        "course": item.course,
        "exercise_id": item.exercise.id,
        "lang": item.lang,
        "attempt": attempt,
        "idempotency_key": item.idempotency_key,
        "request_hash": item.fingerprint if item.idempotency_key else None,
        "run": 1,
        "notebook": item.notebook,
        "status": SubmissionStatus.QUEUED,
        "max_score": manifest.max_score,
        "message": "",
        "created_at": now,
        "superseded_by": None,
        # not columns of submissions: the job's
        "_lane": manifest.lane,
        "_devices": manifest.resources.devices,
        "_cpu_fallback": manifest.resources.cpu_fallback,
        "_world_size": manifest.resources.world_size,
        "_issuer": item.user.issuer,  # who may be sent "submission received" (received.py)
    }


def _supersede(session: Session, row: dict, latest: dict[tuple[int, str, str], dict], counts: _Counts) -> None:
    """`row` supersedes the learner's queued attempts at its exercise: the stored ones (for the group's first
    row in the batch), or the batch's previous row of the group (whose job is then stored cancelled)."""
    group = (row["identity_id"], row["course"], row["exercise_id"])
    previous = latest.get(group)
    if previous is None:
        cancelled = supersede_queued(
            session,
            by_id=row["id"],
            attempt=row["attempt"],
            identity_id=group[0],
            course=group[1],
            exercise_id=group[2],
        )
        counts.superseded[group] += len(cancelled)
    else:
        previous["status"], previous["superseded_by"] = SubmissionStatus.SUPERSEDED, row["id"]
        previous["message"] = superseded_message(attempt=row["attempt"], by_id=row["id"])
        counts.superseded[group] += 1
    latest[group] = row


_COLUMNS = (
    "id", "identity_id", "user", "course", "exercise_id", "lang", "attempt", "idempotency_key", "request_hash",
    "run", "notebook", "status", "max_score", "message", "created_at", "superseded_by", "late_by_s",
    "penalty_percent",
)  # fmt: skip


def _table(model: type) -> Table:
    return cast(Table, model.__table__)  # type: ignore[attr-defined]


# Built once; inline: no RETURNING of the new ids for a one-row batch (nothing reads them), so every INSERT
# can wait in PostgreSQL's pipeline for the one sync.
_INSERTS = {model: insert(_table(model)).inline() for model in (Submission, Job, ProgressEvent)}


def _insert(session: Session, rows: list[dict], receivers: Receivers | None, *, settings: Settings) -> None:
    """The submissions, their jobs, their events and the outbox rows of those with a receiver: one executemany
    INSERT per table, in this transaction. On PostgreSQL the INSERTs and the NOTIFY go in one psycopg
    pipeline: one round trip, not four (writer CPU per 4-upload batch 1.65 -> 1.4 ms)."""
    conn = session.connection()
    outbox = received.outbox_rows(session, rows, receivers)  # its query answers before the pipeline starts
    if conn.dialect.name != "postgresql":
        _insert_rows(session, rows, outbox, settings=settings)
        return
    import psycopg

    try:
        with conn.connection.dbapi_connection.pipeline():  # type: ignore[union-attr]
            _insert_rows(session, rows, outbox, settings=settings)
    except psycopg.Error as exc:  # raised at the pipeline's sync, outside SQLAlchemy: wrap it as SQLAlchemy would
        raise DBAPIError.instance(None, None, exc, psycopg.Error) from exc


def _insert_rows(session: Session, rows: list[dict], outbox: list[dict], *, settings: Settings) -> None:
    now = utcnow()
    priority = queue.INTERACTIVE_PRIORITY
    conn = session.connection()  # Core, not the ORM's bulk insert: no unit of work, no per-row bookkeeping
    conn.execute(_INSERTS[Submission], [{c: r[c] for c in _COLUMNS} for r in rows])
    jobs = [
        job_row(
            submission_id=r["id"],
            learner=learner_key(r["identity_id"]),
            lane=r["_lane"],
            priority=priority,
            devices=r["_devices"],
            world_size=r["_world_size"],
            max_attempts=settings.max_attempts,
            now=now,
            superseded_by=r["superseded_by"],  # set only when a later row of this batch superseded it
            cpu_fallback=r["_cpu_fallback"],
        )
        for r in rows
    ]
    events = []
    for r in rows:
        events.append(_event(r["id"], "queued", {"priority": priority}, now))
        if r["status"] == SubmissionStatus.SUPERSEDED:
            done = {"status": SubmissionStatus.SUPERSEDED, "score": None, "superseded_by": r["superseded_by"]}
            events.append(_event(r["id"], "done", done, now))
    conn.execute(_INSERTS[Job], jobs)
    conn.execute(_INSERTS[ProgressEvent], events)
    received.insert_events(conn, outbox)
    # the flush hook sees only ORM rows: these wake workers and event streams at commit all the same
    signals.written(session, {(signals.EVENTS, r["id"]) for r in rows} | {(signals.JOBS, "")})


def _event(submission_id: str, event: str, data: dict, now: dt.datetime) -> dict:
    return {"submission_id": submission_id, "run": 1, "event": event, "data": data, "created_at": now}


def _accepted(new: _New) -> Accepted:
    r = new.row
    return Accepted(
        id=r["id"],
        status=r["status"],
        exercise_id=r["exercise_id"],
        course=r["course"],
        attempt=r["attempt"],
        created=new.created,
    )


def accepted(stored: Row | Submission) -> Accepted:
    """A submission already stored (a Core row or the ORM object), as an Idempotency-Key replay answers it."""
    return Accepted(
        id=stored.id,
        status=stored.status,
        exercise_id=stored.exercise_id,
        course=stored.course,
        attempt=stored.attempt,
        created=False,
    )
