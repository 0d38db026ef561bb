"""Submission verbs: create (submission + job in one transaction), get, list, regrade, override."""
from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grading.exercise import Exercise
from service.auth.service import Principal
from service.config import Settings
from service.courses import service as courses
from service.db import utcnow
from service.errors import Forbidden, NotFound, TooMany, Unsatisfiable
from service.grades.models import OutboxEvent, ScoreOverride
from service.queue import estimates
from service.queue import service as queue
from service.queue.models import Job
from service.submissions.models import ProgressEvent, Submission
from service.submissions.schemas import CheckPublic, SubmissionPublic

DEFAULT_COURSE = "default"


def to_public(sub: Submission, *, queue_estimate: dict | None = None) -> SubmissionPublic:
    result = sub.result or {}
    return SubmissionPublic(
        id=sub.id, user=sub.user, course=sub.course, exercise_id=sub.exercise_id, status=sub.status,
        score=sub.effective_score, auto_score=sub.score, manual_score=sub.manual_score, max_score=sub.max_score,
        attempt=sub.attempt, lang=sub.lang, message=sub.message,
        checks=[CheckPublic(**c) for c in result.get("checks", [])], limits_hit=result.get("limits_hit", []),
        sandbox=result.get("sandbox", ""), grading_s=sub.grading_s, created_at=sub.created_at,
        started_at=sub.started_at, graded_at=sub.graded_at, superseded_by=sub.superseded_by,
        queue=queue_estimate)


def check_capacity(*, exercise: Exercise, max_devices: Callable[[], int], max_world_size: int) -> None:
    """Reject at intake a job no worker could ever run (`max_devices` is only asked when devices are needed)."""
    res = exercise.manifest.resources
    if res.devices and res.devices > (offered := max_devices()):
        raise Unsatisfiable(f"exercise {exercise.id} needs {res.devices} accelerator(s) but the largest worker "
                            f"offers {offered}; ask an administrator to start a worker whose "
                            f"TITANGRADE_WORKER_DEVICES lists at least {res.devices} (e.g. npu:0-{res.devices - 1})")
    if res.world_size > max_world_size:
        raise Unsatisfiable(f"exercise {exercise.id} launches {res.world_size} ranks but workers run at most "
                            f"{max_world_size}; raise TITANGRADE_WORKER_MAX_WORLD_SIZE on a larger host")


def _check_limits(session: Session, *, user: Principal, exercise_id: str, settings: Settings) -> int:
    """Enforce the per-learner rate and attempt limits; return the next attempt number."""
    since = utcnow() - dt.timedelta(seconds=60)
    recent = session.scalar(select(func.count()).select_from(Submission)
                            .where(Submission.user == user.user, Submission.created_at >= since))
    if recent >= settings.submissions_per_minute and not user.is_staff:
        raise TooMany(f"more than {settings.submissions_per_minute} submissions in the last minute; "
                      "wait a minute and submit again")
    done = session.scalar(select(func.count()).select_from(Submission)
                          .where(Submission.user == user.user, Submission.exercise_id == exercise_id))
    superseded = session.scalar(select(func.count()).select_from(Submission)
                                .where(Submission.user == user.user, Submission.exercise_id == exercise_id,
                                       Submission.status == "superseded")) or 0
    limit = settings.max_attempts_per_exercise
    if limit and (done or 0) - superseded >= limit and not user.is_staff:  # a superseded attempt was never graded
        raise TooMany(f"you have used all {limit} attempts for {exercise_id}; ask an instructor if you need more",
                      code="attempt_limit")
    return done + 1


def _by_idempotency_key(session: Session, *, user: str, key: str) -> Submission | None:
    return session.scalar(select(Submission).where(Submission.user == user, Submission.idempotency_key == key))


def create(session: Session, *, user: Principal, exercise: Exercise, notebook: bytes, lang: str,
           idempotency_key: str | None, settings: Settings) -> tuple[Submission, bool]:
    """Store the submission and its job together; a repeated Idempotency-Key returns the first one."""
    if idempotency_key:
        existing = _by_idempotency_key(session, user=user.user, key=idempotency_key)
        if existing is not None:
            return existing, False
    attempt = _check_limits(session, user=user, exercise_id=exercise.id, settings=settings)
    manifest = exercise.manifest
    sub = Submission(id=uuid.uuid4().hex, user=user.user, course=user.course or DEFAULT_COURSE,
                     exercise_id=exercise.id, lang=lang, attempt=attempt, idempotency_key=idempotency_key,
                     notebook=notebook, status="queued", max_score=manifest.max_score, message="")
    session.add(sub)
    session.flush()
    queue.enqueue(session, submission_id=sub.id, lane=manifest.lane, priority=queue.INTERACTIVE_PRIORITY,
                  devices=manifest.resources.devices, world_size=manifest.resources.world_size,
                  max_attempts=settings.max_attempts, learner=sub.user)
    _supersede_earlier(session, sub=sub, exercise=exercise, default=settings.supersede_queued)
    try:
        session.commit()
    except IntegrityError:  # the same key raced in from a second request
        session.rollback()
        existing = _by_idempotency_key(session, user=user.user, key=idempotency_key or "")
        if existing is None:
            raise
        return existing, False
    return sub, True


def wait_estimate(session: Session, *, sub: Submission, settings: Settings) -> dict | None:
    """Position and estimated start/finish while the submission waits (None once it runs or ends). A worker
    counts as live until its jobs' leases would expire, so a heartbeat delayed by load does not hide it."""
    if sub.status != "queued":
        return None
    found = estimates.for_submission(session, submission_id=sub.id, policy=settings.queue_policy,
                                     recent_runs=settings.estimate_recent_runs,
                                     live_within_s=max(3 * settings.heartbeat_s, settings.lease_s))
    return found.public() if found is not None else None


def supersedes(policy: str, exercise: Exercise) -> bool:
    """Whether a new attempt at `exercise` supersedes queued ones under a course's policy (off|training|all);
    training means the long-lane exercises, whose grading holds the scarce accelerator slots."""
    return policy == "all" or (policy == "training" and exercise.manifest.lane == "long")


def _supersede_earlier(session: Session, *, sub: Submission, exercise: Exercise, default: str) -> list[str]:
    """Mark the learner's still-queued attempts at this exercise superseded by `sub` (in its transaction).
    Only jobs not yet claimed are cancelled (the queue re-checks that on the locked row), so a running
    attempt is never dropped, and `sub` itself, the latest, is always graded."""
    if not supersedes(courses.supersede_policy(session, course=sub.course, default=default), exercise):
        return []
    earlier = session.scalars(select(Submission.id).where(
        Submission.user == sub.user, Submission.course == sub.course, Submission.exercise_id == sub.exercise_id,
        Submission.status == "queued", Submission.id != sub.id)).all()
    cancelled = queue.cancel_queued(session, submission_ids=earlier, reason=f"superseded by {sub.id}")
    for old in session.scalars(select(Submission).where(Submission.id.in_(cancelled))):
        old.status, old.superseded_by = "superseded", sub.id
        old.message = (f"superseded by your attempt {sub.attempt} ({sub.id}) before it started: only the "
                       "latest queued attempt at this exercise is graded, so your waiting time stays short")
        session.add(ProgressEvent(submission_id=old.id, event="done",
                                  data={"status": "superseded", "score": None, "superseded_by": sub.id}))
    return cancelled


def get(session: Session, *, user: Principal, submission_id: str) -> Submission:
    """A submission the caller may read; someone else's looks exactly like a missing one."""
    sub = session.get(Submission, submission_id)
    if sub is None or not (sub.user == user.user or user.can_see_course(sub.course)):
        raise NotFound(f"submission {submission_id} does not exist or is not yours; list yours with GET /api/v1/submissions")
    return sub


def list_visible(session: Session, *, user: Principal, exercise_id: str | None = None,
                 course: str | None = None, limit: int = 100) -> list[Submission]:
    stmt = select(Submission).order_by(Submission.created_at.desc()).limit(limit)
    if user.role == "learner":
        stmt = stmt.where(Submission.user == user.user)
    elif user.role == "instructor" and user.course is not None:
        stmt = stmt.where(Submission.course == user.course)
    if exercise_id:
        stmt = stmt.where(Submission.exercise_id == exercise_id)
    if course:
        stmt = stmt.where(Submission.course == course)
    return list(session.scalars(stmt))


def regrade(session: Session, *, subs: list[Submission], priority: int, max_attempts: int,
            catalogue) -> list[str]:
    """Queue a fresh grading run for each submission whose job is not already pending."""
    queued = []
    for sub in subs:
        pending = session.scalar(select(Job.id).where(Job.submission_id == sub.id,
                                                      Job.status.in_(("queued", "running"))).limit(1))
        if pending is not None:
            continue
        manifest = catalogue.get(sub.exercise_id).manifest
        queue.enqueue(session, submission_id=sub.id, lane=manifest.lane, priority=priority,
                      devices=manifest.resources.devices, world_size=manifest.resources.world_size,
                      max_attempts=max_attempts)
        sub.status, sub.superseded_by = "queued", None  # an instructor may grade a superseded attempt after all
        queued.append(sub.id)
    session.commit()
    return queued


def override(session: Session, *, user: Principal, sub: Submission, score: float | None, reason: str) -> Submission:
    """Record a manual score with its reason (audit row) and emit a grade event, all in one transaction."""
    if not user.can_see_course(sub.course):
        raise Forbidden(f"you are not an instructor of course {sub.course}")
    if score is not None and score > sub.max_score:
        raise Unsatisfiable(f"score {score} exceeds the maximum {sub.max_score} for {sub.exercise_id}",
                            code="score_out_of_range")
    session.add(ScoreOverride(submission_id=sub.id, old_score=sub.effective_score, new_score=score,
                              reason=reason, by_user=user.user))
    sub.manual_score = score
    session.add(OutboxEvent(submission_id=sub.id, kind="grade.overridden", payload={
        "submission_id": sub.id, "user": sub.user, "course": sub.course, "exercise_id": sub.exercise_id,
        "status": sub.status, "score": sub.score, "manual_score": score, "max_score": sub.max_score,
        "reason": reason, "by": user.user, "timestamp": utcnow().isoformat() + "Z"}))
    session.commit()
    return sub


def overrides(session: Session, *, submission_id: str) -> list[ScoreOverride]:
    return list(session.scalars(select(ScoreOverride).where(ScoreOverride.submission_id == submission_id)
                                .order_by(ScoreOverride.id)))
