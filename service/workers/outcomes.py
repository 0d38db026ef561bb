"""What a finished job's outcome does to the queue and the submission, in the caller's transaction.

A grade is stored only while the lease is held (the queue fences every write); a grader fault is retried
until `max_attempts`, then recorded as not gradable; "not started" hands the job back without an attempt.
Kept apart from the worker loop so the loop only decides when to store, and this module what storing means.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from service.grades import service as grades
from service.queue import service as queue
from service.queue.service import ClaimedJob
from service.workers.executor import Faulted, Graded, NotStarted, Outcome


@dataclass(frozen=True, slots=True)
class Stored:
    state: str  # what happened, for the logs
    graded: bool = False  # a grade was stored
    wake_after_s: float | None = None  # the job becomes claimable again after this long


def store(s: Session, *, job: ClaimedJob, outcome: Outcome, retry_backoff_s: float) -> Stored:
    """Store a grade or apply the retry policy, fenced by the lease."""
    match outcome:
        case Graded(result) if result["status"] != "not_gradable":
            if not queue.complete(s, job=job):
                return Stored("discarded (lease lost)")
            grades.record_grade(s, submission_id=job.submission_id, result=result)
            return Stored("stored", graded=True)
        case Graded(result):  # the engine caught a grader fault itself: same retry policy
            error = result.get("message") or "not gradable"
            return _fault(s, job, error=error, retryable=True, final=result, backoff_s=retry_backoff_s)
        case Faulted(reason, retryable):
            return _fault(s, job, error=reason, retryable=retryable, final=None, backoff_s=retry_backoff_s)
        case NotStarted(reason):  # nothing ran: not an attempt (the executor keeps off the node a while)
            if not queue.release(s, job=job, reason=f"not started: {reason}", after_s=retry_backoff_s):
                return Stored("discarded (lease lost)")
            return Stored("handed back (not started)", wake_after_s=retry_backoff_s)
    raise TypeError(f"executor returned {outcome!r}; expected Graded, Faulted or NotStarted")


def _fault(s: Session, job: ClaimedJob, *, error: str, retryable: bool, final: dict | None, backoff_s: float) -> Stored:
    """Requeue, or (retries spent) record the submission as not gradable with the engine's result if any."""
    state = queue.fault(s, job=job, error=error, retryable=retryable, backoff_s=backoff_s)
    if state == "failed":
        grades.record_grade(s, submission_id=job.submission_id, result=final, fault=error)
    return Stored(state, wake_after_s=backoff_s if state == "queued" else None)
