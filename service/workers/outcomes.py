"""What a finished job's outcome does to the queue and the submission, in the caller's transaction.

A grade is stored only while the lease is held (the queue fences every write); a grader fault is retried
until `max_attempts`, then recorded as not gradable; "not started" hands the job back without an attempt.
Kept apart from the worker loop so the loop only decides when to store, and this module what storing means
(a store that fails for another reason than an outage included).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.orm import Session

from grading.result import GradeResult, Status
from service.errors import clip
from service.grades import service as grades
from service.outage import Backoff, is_unavailable
from service.queue import service as queue
from service.queue.service import ClaimedJob
from service.states import JobStatus
from service.workers.executor import ExecutionResult, Faulted, Graded, NotStarted

log = logging.getLogger("titangrade.worker")


@dataclass(frozen=True, slots=True)
class Stored:
    state: str  # what happened, for the logs
    graded: bool = False  # a grade was stored
    wake_after_s: float | None = None  # the job becomes claimable again after this long


def store(
    s: Session, *, job: ClaimedJob, outcome: ExecutionResult, retry_backoff_s: float, shortage: Backoff | None = None
) -> Stored:
    """Store a grade or apply the retry policy, fenced by the lease. `shortage`: the worker's delays for
    jobs handed back because the host ran short (growing while hand-backs follow each other, reset by a
    job that ran); without it a hand-back waits `retry_backoff_s`."""
    match outcome:
        case Graded(result) if result.status is not Status.NOT_GRADABLE:
            if shortage is not None:
                shortage.reset()
            if not queue.complete(s, job=job):
                return Stored("discarded (lease lost)")
            grades.record_grade(s, submission_id=job.submission_id, result=result)
            return Stored("stored", graded=True)
        case Graded(result):  # the engine caught a grader fault itself: same retry policy
            error = result.message or "not gradable"
            return _fault(s, job, error=error, retryable=True, final=result, backoff_s=retry_backoff_s)
        case Faulted(reason, retryable):
            return _fault(s, job, error=reason, retryable=retryable, final=None, backoff_s=retry_backoff_s)
        case NotStarted(reason):  # nothing ran: not an attempt (the executor keeps off the node a while)
            after_s = retry_backoff_s if shortage is None else shortage.next_s()
            if not queue.release(s, job=job, reason=f"not started: {reason}", after_s=after_s):
                return Stored("discarded (lease lost)")
            return Stored("handed back (not started)", wake_after_s=after_s)
    raise TypeError(f"executor returned {outcome!r}; expected Graded, Faulted or NotStarted")


class Held(Protocol):
    """A finished job whose outcome waits to be stored (the worker's flight)."""

    job: ClaimedJob
    outcome: ExecutionResult | None


def store_or_fault(held: Held, *, store: Callable[[ClaimedJob, ExecutionResult], str], who: str) -> str:
    """Store `held.outcome` with `store` (one transaction; returns the state for the log). The database
    unreachable: raise (the caller keeps it held and retries). Any other error: the job ends as a retryable
    grader fault, never a worker crash; `held.outcome` becomes that fault first, so a retry after an outage
    stores the fault, not the result that could not be stored."""
    job, outcome = held.job, held.outcome
    assert outcome is not None
    try:
        return store(job, outcome)
    except Exception as exc:
        if is_unavailable(exc):
            raise
        log.exception("%s could not store the outcome of job %s; ending it as a grader fault", who, job.job_id)
        held.outcome = Faulted(
            f"the result could not be stored: {type(exc).__name__}: {clip(exc, 300)}", retryable=True
        )
    try:
        return store(job, held.outcome)
    except Exception as again:
        if is_unavailable(again):
            raise
        log.exception("%s could not record the fault of job %s", who, job.job_id)
        return "left to lease expiry (the fault could not be recorded)"


def _fault(
    s: Session, job: ClaimedJob, *, error: str, retryable: bool, final: GradeResult | None, backoff_s: float
) -> Stored:
    """Requeue, or (retries spent) record the submission as not gradable with the engine's result if any."""
    state = queue.fault(s, job=job, error=error, retryable=retryable, backoff_s=backoff_s)
    if state == JobStatus.FAILED:
        grades.record_grade(s, submission_id=job.submission_id, result=final, fault=error)
    return Stored(state, wake_after_s=backoff_s if state == JobStatus.QUEUED else None)
