"""Progress events from a grading process: written in order, several to a transaction, none lost or late."""
from __future__ import annotations

import time

from sqlalchemy import select

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
    writer({"event": "started", "exercise_id": "x"})  # the first one at once: a stream shows it started
    for i in range(5):
        now[0] += 0.01
        writer({"event": "cell", "index": i, "total": 5})
    writer({"event": "checks"})
    assert writer.writes == 1 and len(_events(sessions, sub_id)) == before + 1
    writer.close()  # the grading process closes it before the worker writes "done"
    assert writer.writes == 2
    got = _events(sessions, sub_id)[before:]
    assert [e for e, _ in got] == ["started", *["cell"] * 5, "checks"]
    assert [d["index"] for e, d in got if e == "cell"] == [0, 1, 2, 3, 4]


def test_a_held_event_is_written_within_flush_s_without_more_events(sessions, add_submission):
    sub_id, before = _submission(sessions, add_submission)
    writer = ProgressWriter(sessions, submission_id=sub_id, flush_s=0.2)
    writer({"event": "started"})
    writer({"event": "cell", "index": 0, "total": 1})  # then a long cell: nothing else comes for a while
    deadline = time.monotonic() + 10
    while len(_events(sessions, sub_id)) < before + 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [e for e, _ in _events(sessions, sub_id)[before:]] == ["started", "cell"]
    writer.close()
    assert writer.writes == 2
