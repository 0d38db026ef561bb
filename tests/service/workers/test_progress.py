"""Progress events from a grading process: written in order, several to a transaction, none lost or late."""
from __future__ import annotations

import time

from sqlalchemy import select

from grading.progress import Cell, Checks, Started
from service.db import transaction
from service.submissions.models import ProgressEvent
from service.workers.progress import ProgressWriter


def _events(sessions, sub_id):
    with sessions() as s:
        return [(e.event, e.data) for e in s.scalars(select(ProgressEvent).where(
            ProgressEvent.submission_id == sub_id).order_by(ProgressEvent.id))]


def _submission(sessions, add_submission):
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    return sub.id, len(_events(sessions, sub.id))  # intake wrote its own "queued"


def test_a_burst_of_events_takes_two_transactions_in_order(sessions, add_submission):
    sub_id, before = _submission(sessions, add_submission)
    now = [100.0]
    writer = ProgressWriter(sessions, submission_id=sub_id, flush_s=0.25, clock=lambda: now[0])
    writer(Started(exercise_id="x"))  # the first one at once: a stream shows it started
    for i in range(5):
        now[0] += 0.01
        writer(Cell(index=i, total=5))
    writer(Checks())
    assert writer.writes == 1 and len(_events(sessions, sub_id)) == before + 1
    writer.close()  # the grading process closes it before the worker writes "done"
    assert writer.writes == 2
    got = _events(sessions, sub_id)[before:]
    assert [e for e, _ in got] == ["started", *["cell"] * 5, "checks"]
    assert [d["index"] for e, d in got if e == "cell"] == [0, 1, 2, 3, 4]


def test_a_held_event_is_written_within_flush_s_without_more_events(sessions, add_submission):
    sub_id, before = _submission(sessions, add_submission)
    writer = ProgressWriter(sessions, submission_id=sub_id, flush_s=0.2)
    writer(Started(exercise_id="x"))
    writer(Cell(index=0, total=1))  # then a long cell: nothing else comes for a while
    deadline = time.monotonic() + 10
    while len(_events(sessions, sub_id)) < before + 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [e for e, _ in _events(sessions, sub_id)[before:]] == ["started", "cell"]
    writer.close()
    assert writer.writes == 2


def _claim(sessions, worker_id: str, lease_s: float):
    from service.queue import service as queue

    with transaction(sessions) as s:
        return queue.claim(s, worker_id=worker_id, lanes=("short",), free_devices=0, max_world_size=1, lease_s=lease_s)


def test_events_of_a_lost_lease_never_reach_the_new_attempts_stream(sessions, add_submission):
    from service.queue import service as queue

    sub_id, before = _submission(sessions, add_submission)
    first = _claim(sessions, "w-old", lease_s=0.05)
    old = ProgressWriter(sessions, submission_id=sub_id, flush_s=0.0)  # fenced by the lease held now
    old(Cell(index=0, total=2))
    time.sleep(0.1)
    with transaction(sessions) as s:  # the old worker stalled: its lease expired and the job was reclaimed
        assert [(e.submission_id, e.gave_up) for e in queue.reap_expired(s)] == [(sub_id, False)]
    second = _claim(sessions, "w-new", lease_s=60)
    assert second.job_id == first.job_id and second.lease_token != first.lease_token
    new = ProgressWriter(sessions, submission_id=sub_id, flush_s=0.0, job_id=second.job_id,
                         lease_token=second.lease_token)
    new(Started(exercise_id="x"))
    old(Cell(index=1, total=2))  # the old attempt wakes up and reports on
    old.close()
    new(Cell(index=0, total=1))
    new.close()
    cells = [(e, d.get("index")) for e, d in _events(sessions, sub_id)[before:] if e in ("cell", "started")]
    assert cells == [("cell", 0), ("started", None), ("cell", 0)]
    assert old.dropped == 1 and new.dropped == 0
