"""What the host-shortage and pool-death tests share: grading on a thread of the test process (so a sandbox
or a device check swapped by the test applies), waiting on a condition, and counting a submission's events."""

from __future__ import annotations

import concurrent.futures as cf
import time

from sqlalchemy import func, select

from service.submissions.models import ProgressEvent
from service.workers.executor import Executor, GradingTicket, grade_ticket


class InThreadExecutor(Executor):
    """grade_ticket on one thread of this process: what the test put in `_CHILD` is what grades."""

    name = "in-thread"

    def __init__(self) -> None:
        self.pool = cf.ThreadPoolExecutor(1, thread_name_prefix="tg-test-grade")

    def submit(self, ticket: GradingTicket) -> cf.Future:
        return self.pool.submit(grade_ticket, ticket)

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True)


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def events(sessions, submission_id: str, event: str) -> int:
    """How many `event` progress rows the submission has (e.g. "requeued": times it was handed back)."""
    with sessions() as s:
        return s.scalar(
            select(func.count())
            .select_from(ProgressEvent)
            .where(ProgressEvent.submission_id == submission_id, ProgressEvent.event == event)
        )
