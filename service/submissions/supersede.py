"""Superseding: a learner's new attempt at an exercise replaces their attempts still waiting in the queue.

Whether it does is the course's policy (off, training: long-lane exercises only, all). Only jobs no worker
has claimed are cancelled, so a running attempt is never dropped and the latest attempt is always graded.
The intake's batch (service/submissions/batch.py) applies it to stored attempts here, and to the earlier
rows of its own batch itself.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from grading.exercise import Exercise
from grading.progress import Done
from service.queue import service as queue
from service.states import SubmissionStatus
from service.submissions.models import ProgressEvent, Submission


def supersedes(policy: str, exercise: Exercise) -> bool:
    """Whether a new attempt at `exercise` supersedes queued ones under a course's policy (off|training|all);
    training means the long-lane exercises, whose grading holds the scarce accelerator slots."""
    return policy == "all" or (policy == "training" and exercise.manifest.lane == "long")


def superseded_message(*, attempt: int, by_id: str) -> str:
    return (
        f"superseded by your attempt {attempt} ({by_id}) before it started: only the "
        "latest queued attempt at this exercise is graded, so your waiting time stays short"
    )


def supersede_queued(
    session: Session, *, by_id: str, attempt: int, identity_id: int, course: str, exercise_id: str
) -> list[str]:
    """Mark the learner's stored, still-queued attempts at this exercise superseded by `by_id` (in its
    transaction). Only jobs not yet claimed are cancelled (the queue re-checks that on the locked row), so a
    running attempt is never dropped, and the latest attempt is always graded."""
    earlier = session.scalars(
        select(Submission.id).where(
            Submission.identity_id == identity_id,
            Submission.course == course,
            Submission.exercise_id == exercise_id,
            Submission.status == SubmissionStatus.QUEUED,
            Submission.id != by_id,
        )
    ).all()
    cancelled = queue.cancel_queued(session, submission_ids=earlier, reason=f"superseded by {by_id}")
    for old in session.scalars(select(Submission).where(Submission.id.in_(cancelled))):
        old.status, old.superseded_by = SubmissionStatus.SUPERSEDED, by_id
        old.message = superseded_message(attempt=attempt, by_id=by_id)
        session.add(
            ProgressEvent.of(
                submission_id=old.id, event=Done(status=SubmissionStatus.SUPERSEDED, score=None, superseded_by=by_id)
            )
        )
    return cancelled
