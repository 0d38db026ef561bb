"""Submission verbs: create (submission + job in one transaction), get, list, regrade, override.

Access is by identity and course membership: a learner reads their own submissions (within the token's
course scope); instructors read and act on their courses' submissions; admins on all.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from sqlalchemy import and_, or_, select, true
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from grading.exercise import Exercise
from grading.text import clean_text, clean_value
from service.auth.principal import Principal
from service.config import Settings
from service.db import utcnow
from service.errors import Forbidden, NotFound, ServiceError, Unsatisfiable, clip
from service.grades.faults import message_key
from service.grades.models import ScoreOverride
from service.messages import error
from service.outbox.models import OutboxEvent
from service.outbox.receivers import Receivers
from service.queue import estimates
from service.queue import service as queue
from service.queue.models import Job
from service.states import JobStatus, SubmissionStatus
from service.submissions import batch
from service.submissions.models import Submission
from service.submissions.schemas import CheckPublic, OverrideShown, RegradeSkipped, SubmissionPublic
from service.timefmt import rfc3339

SUBMISSION_ID = re.compile(r"[0-9a-f]{32}")  # uuid4().hex; anything else cannot exist (and never reaches the DB)


def to_public(
    sub: Submission, *, queue_estimate: dict | None = None, override: ScoreOverride | None = None
) -> SubmissionPublic:
    """The API's view of a row (`override`: its current_overrides entry). Its kernel-made strings are cleaned
    again on the way out (one regex scan when clean), so a row stored before the result boundary normalised
    them still reads, never a 500."""
    result = clean_value(sub.result or {})
    shown = None
    if override is not None and sub.manual_score is not None:
        shown = OverrideShown(
            score=sub.manual_score, reason=override.reason, by=override.by_user, at=override.created_at
        )
    return SubmissionPublic(
        id=sub.id,
        user=sub.user,
        course=sub.course,
        exercise_id=sub.exercise_id,
        status=sub.status,
        score=sub.final_score,
        raw_score=sub.effective_score,
        auto_score=sub.score,
        manual_score=sub.manual_score,
        max_score=sub.max_score,
        attempt=sub.attempt,
        run=sub.run,
        lang=sub.lang,
        message=clean_text(sub.message) if sub.message else sub.message,
        message_key=message_key(sub.status, sub.message),
        checks=[CheckPublic(**c) for c in result.get("checks", [])],
        limits_hit=result.get("limits_hit", []),
        sandbox=result.get("sandbox", ""),
        device=str(result.get("device", "")),
        device_count=count if isinstance(count := result.get("device_count"), int) else 0,
        dtype=result.get("dtype") if isinstance(result.get("dtype"), str) else None,
        grading_s=sub.grading_s,
        created_at=sub.created_at,
        submitted_at=sub.created_at,
        late=sub.late_by_s > 0,
        late_by_s=sub.late_by_s,
        penalty_percent=sub.penalty_percent,
        started_at=sub.started_at,
        graded_at=sub.graded_at,
        superseded_by=sub.superseded_by,
        queue=queue_estimate,
        override=shown,
    )


def request_hash(*, notebook: bytes, exercise_id: str | None, course: str | None) -> str:
    """What an Idempotency-Key is bound to: the notebook and the form fields, as sent."""
    digest = hashlib.sha256()
    for part in (exercise_id or "", course or ""):
        digest.update(part.encode("utf-8", "replace") + b"\0")
    digest.update(notebook)
    return digest.hexdigest()


def replay(session: Session, *, user: Principal, key: str, fingerprint: str) -> Submission | None:
    """The submission an Idempotency-Key already made, or None; the same key on another request is a 422."""
    sub = session.scalar(
        select(Submission).where(Submission.identity_id == user.identity_id, Submission.idempotency_key == key)
    )
    if sub is not None and sub.request_hash is not None and sub.request_hash != fingerprint:
        raise batch.key_reused(key, sub.id)
    return sub


def choose_course(user: Principal, requested: str | None) -> str:
    """The course a submission is filed under: the one asked for (if the caller belongs to it), else the
    token's course, else the caller's only course."""
    if requested:
        if user.in_scope(requested) and user.role_in(requested) is not None:
            return requested
        raise Forbidden(
            error("not_enrolled", course=clip(requested), courses=", ".join(sorted(user.memberships)) or "none"),
            code="not_enrolled",
        )
    if user.scope:
        return user.scope
    if len(user.memberships) == 1:
        return next(iter(user.memberships))
    raise ServiceError(
        error("course_required", courses=", ".join(sorted(user.memberships)) or "your courses"),
        code="course_required",
        status_code=422,
    )


def check_capacity(*, exercise: Exercise, max_devices: Callable[[], int], max_world_size: int) -> None:
    """Reject at intake a job no worker could ever run (`max_devices` is only asked when devices are needed;
    a job that falls back to CPU ranks runs on any worker)."""
    res = exercise.manifest.resources
    if res.devices and not res.cpu_fallback and res.devices > (offered := max_devices()):
        raise Unsatisfiable(
            error(
                "devices_unavailable",
                exercise=exercise.id,
                devices=res.devices,
                offered=offered,
                last_device=res.devices - 1,
            )
        )
    if res.world_size > max_world_size:
        raise Unsatisfiable(
            error(
                "world_size_unavailable",
                exercise=exercise.id,
                world_size=res.world_size,
                max_world_size=max_world_size,
            )
        )


def create(
    session: Session,
    *,
    user: Principal,
    exercise: Exercise,
    course: str,
    notebook: bytes,
    lang: str,
    idempotency_key: str | None,
    fingerprint: str,
    settings: Settings,
    receivers: Receivers | None = None,
) -> tuple[batch.Accepted, bool]:
    """Store the submission and its job together in `session` (committed); a repeated Idempotency-Key returns
    the first one. The API's uploads go through the process's UploadWriter instead (service/submissions/
    writer.py), which stores many at once with the same `batch.write` (`receivers`: see there)."""
    item = batch.Upload(
        user=user,
        exercise=exercise,
        course=course,
        notebook=notebook,
        lang=lang,
        idempotency_key=idempotency_key,
        fingerprint=fingerprint,
    )
    try:
        (outcome,) = batch.write(session, [item], settings=settings, receivers=receivers)
    except IntegrityError:  # the same key raced in from a second request
        session.rollback()
        existing = replay(session, user=user, key=idempotency_key or "", fingerprint=fingerprint)
        if existing is None:
            raise
        return batch.accepted(existing), False
    if isinstance(outcome, ServiceError):
        raise outcome
    return outcome, outcome.created


def _not_found(submission_id: str) -> NotFound:
    return NotFound(error("submission_not_found", submission=clip(submission_id)))


def wait_estimate(session: Session, *, sub: Submission, settings: Settings) -> dict | None:
    """Position and estimated start/finish while the submission waits (None once it runs or ends). A worker
    counts as live until its jobs' leases would expire, so a heartbeat delayed by load does not hide it."""
    if sub.status != SubmissionStatus.QUEUED:
        return None
    found = estimates.for_submission(
        session,
        submission_id=sub.id,
        policy=settings.queue_policy,
        recent_runs=settings.estimate_recent_runs,
        live_within_s=max(3 * settings.heartbeat_s, settings.lease_s),
    )
    return found.public() if found is not None else None


def get(session: Session, *, user: Principal, submission_id: str) -> Submission:
    """A submission the caller may read; someone else's looks exactly like a missing one."""
    sub = session.get(Submission, submission_id) if SUBMISSION_ID.fullmatch(submission_id) else None
    if sub is None or not (
        (sub.identity_id == user.identity_id and user.in_scope(sub.course)) or user.can_teach(sub.course)
    ):
        raise _not_found(submission_id)
    return sub


def get_for_staff(session: Session, *, user: Principal, submission_id: str) -> Submission:
    """A submission the caller teaches (admins: any); a learner's own gets 403, anything else 404."""
    sub = get(session, user=user, submission_id=submission_id)
    if not user.can_teach(sub.course):
        raise Forbidden(error("instructors_only", course=clip(sub.course)))
    return sub


def visible(user: Principal):
    """A WHERE clause for the submissions `user` may read."""
    if user.is_admin:
        return true()
    own = Submission.identity_id == user.identity_id
    if user.scope is not None:
        own = and_(own, Submission.course == user.scope)
    teaching = user.teaching()
    return or_(own, Submission.course.in_(teaching)) if teaching else own


def list_visible(
    session: Session, *, user: Principal, exercise_id: str | None = None, course: str | None = None, limit: int = 100
) -> list[Submission]:
    stmt = select(Submission).where(visible(user)).order_by(Submission.created_at.desc(), Submission.id).limit(limit)
    if exercise_id:
        stmt = stmt.where(Submission.exercise_id == exercise_id)
    if course:
        stmt = stmt.where(Submission.course == course)
    return list(session.scalars(stmt))


def regrade_plan(
    session: Session, *, subs: list[Submission], catalogue
) -> tuple[list[Submission], list[RegradeSkipped]]:
    """Which of `subs` a regrade would queue, and why each other one would be skipped (nothing is changed):
    a run still queued or being graded (it is graded once; regrade after it ends), or an exercise no
    longer in the catalogue (nothing could grade it). A superseded attempt is regraded: an instructor asked."""
    pending: dict[str, str] = {}
    ids = [s.id for s in subs]
    for start in range(0, len(ids), 500):  # bounded IN lists (a course's whole exercise may be thousands)
        stmt = select(Job.submission_id, Job.status).where(
            Job.submission_id.in_(ids[start : start + 500]), Job.status.in_((JobStatus.QUEUED, JobStatus.RUNNING))
        )
        pending.update({sid: status for sid, status in session.execute(stmt).all()})  # noqa: C416
    ready, skipped = [], []
    for sub in subs:
        if sub.id in pending:
            state = JobStatus.QUEUED.value if pending[sub.id] == JobStatus.QUEUED else "being graded"
            skipped.append(
                RegradeSkipped(
                    submission_id=sub.id,
                    reason="already_pending",
                    job_status=str(pending[sub.id]),
                    message=f"run {sub.run} of submission {sub.id} is still {state}; it was not queued again "
                    "(it will be graded once; regrade after it finishes)",
                )
            )
        elif sub.exercise_id not in catalogue:
            skipped.append(
                RegradeSkipped(
                    submission_id=sub.id,
                    reason="exercise_removed",
                    message=f"exercise {sub.exercise_id} is no longer in the catalogue, so nothing can grade "
                    f"submission {sub.id}; restore the exercise to regrade it",
                )
            )
        else:
            ready.append(sub)
    return ready, skipped


def regrade(
    session: Session, *, subs: list[Submission], priority: int, max_attempts: int, catalogue
) -> tuple[list[str], list[RegradeSkipped]]:
    """Queue a fresh grading run (run + 1) for each submission `regrade_plan` finds ready; the others are
    returned with the reason they were skipped."""
    ready, skipped = regrade_plan(session, subs=subs, catalogue=catalogue)
    queued = []
    for sub in ready:
        manifest = catalogue.get(sub.exercise_id).manifest
        sub.run += 1
        sub.status, sub.superseded_by = SubmissionStatus.QUEUED, None  # an instructor may grade a superseded one
        session.flush()  # the new run number is what the "queued" event records
        queue.enqueue(
            session,
            submission_id=sub.id,
            lane=manifest.lane,
            priority=priority,
            devices=manifest.resources.devices,
            world_size=manifest.resources.world_size,
            max_attempts=max_attempts,
            cpu_fallback=manifest.resources.cpu_fallback,
        )
        queued.append(sub.id)
    session.commit()
    return queued, skipped


def override(session: Session, *, user: Principal, sub: Submission, score: float | None, reason: str) -> Submission:
    """Record a manual score with its reason (audit row) and emit a grade event, all in one transaction."""
    if not user.can_teach(sub.course):
        raise Forbidden(f"you are not an instructor of course {clip(sub.course)}")
    if score is not None and score > sub.max_score:
        raise Unsatisfiable(
            f"score {score} exceeds the maximum {sub.max_score} for {sub.exercise_id}", code="score_out_of_range"
        )
    session.add(
        ScoreOverride(
            submission_id=sub.id, old_score=sub.effective_score, new_score=score, reason=reason, by_user=user.name
        )
    )
    sub.manual_score = score
    session.add(
        OutboxEvent(
            submission_id=sub.id,
            kind="grade.overridden",
            payload={
                "submission_id": sub.id,
                "user": sub.user,
                "course": sub.course,
                "exercise_id": sub.exercise_id,
                "status": sub.status,
                "score": sub.score,
                "manual_score": score,
                "max_score": sub.max_score,
                "reason": reason,
                "by": user.name,
                "timestamp": rfc3339(utcnow()),
                **sub.lateness_fields(manual_score=score),
            },
        )
    )
    session.commit()
    return sub


def overrides(session: Session, *, submission_id: str) -> list[ScoreOverride]:
    return list(
        session.scalars(
            select(ScoreOverride).where(ScoreOverride.submission_id == submission_id).order_by(ScoreOverride.id)
        )
    )


def current_overrides(session: Session, *, subs: list[Submission]) -> dict[str, ScoreOverride]:
    """The override behind each submission's manual score (the latest audit row), for those that have one."""
    ids = [s.id for s in subs if s.manual_score is not None]
    if not ids:
        return {}
    rows = session.scalars(select(ScoreOverride).where(ScoreOverride.submission_id.in_(ids)).order_by(ScoreOverride.id))
    return {row.submission_id: row for row in rows}  # the last row of each submission wins
