"""What the submissions API sends and receives (never ORM rows)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from service.patterns import CleanReason
from service.timefmt import Timestamp


class CheckPublic(BaseModel):
    name: str
    score: float
    max_score: float
    passed: bool
    feedback: str = ""


class QueueEstimate(BaseModel):
    """Where a queued submission stands; re-estimated on every read (and every few seconds on the SSE stream)."""

    position: int = Field(description="1 = the next job of its lane to start")
    worker_slots: int = Field(description="slots of live workers that can run this exercise")
    typical_s: float | None = Field(description="median grading time of recent runs of this exercise")
    basis_runs: int = Field(description="runs behind that median (0: the median of other exercises was used)")
    start_in_s: float | None = Field(
        description="estimated seconds until grading starts; null: no live "
        "worker can run it now, or no grading history yet"
    )
    finish_in_s: float | None
    start_at: str | None
    finish_at: str | None


class SubmissionAccepted(BaseModel):
    id: str
    status: str
    exercise_id: str
    course: str
    attempt: int
    links: dict[str, str]


class OverrideShown(BaseModel):
    """The instructor's score that counts now, with their reason: what the learner is shown."""

    score: float
    reason: str
    by: str = Field(description="the instructor who set it")
    at: Timestamp


class SubmissionPublic(BaseModel):
    id: str
    user: str
    course: str
    exercise_id: str
    status: str = Field(
        description="queued | running | graded | error | not_gradable | superseded (a later "
        "attempt replaced it before it started; see superseded_by)"
    )
    score: float | None = Field(
        description="the score that counts: a manual override if any (final: no late penalty on top), else "
        "auto_score after the late penalty (penalty_percent)"
    )
    raw_score: float | None = Field(None, description="before any late penalty: the override if any, else auto_score")
    auto_score: float | None = Field(description="the grader's score, before any late penalty")
    manual_score: float | None
    max_score: float
    attempt: int
    run: int = Field(description="grading run: 1 at intake, +1 per regrade; the event stream follows the current run")
    lang: str
    message: str = Field(
        description="the grading's message as stored: the engine's feedback in the submission's language, or "
        "the service's English (a grader fault's technical detail among them; see message_key)"
    )
    message_key: str | None = Field(
        None,
        description="for a grader fault, the key of the learner's text in the page catalogue (fault_not_gradable, "
        "fault_regrade_failed, fault_unstorable): what the pages show instead of `message`, in their language",
    )
    checks: list[CheckPublic]
    limits_hit: list[str] = []
    sandbox: str = ""
    device: str = Field("", description="device kind the grading ran on: npu, cuda, or cpu (ranks on the CPU)")
    device_count: int = Field(0, description="accelerators the grading was given (0 on the CPU)")
    dtype: str | None = Field(None, description="a training run's parameter dtype, as its run.json says")
    grading_s: float | None
    created_at: Timestamp
    submitted_at: Timestamp | None = Field(
        None, description="when it was uploaded (= created_at; a regrade keeps it): what lateness is measured from"
    )
    late: bool = Field(False, description="submitted after the learner's due time (their extension's, if any)")
    late_by_s: int = Field(0, description="whole seconds after the due time, rounded up; 0 when on time")
    penalty_percent: float = Field(0.0, description="what the late policy takes off auto_score, 0..100")
    started_at: Timestamp | None
    graded_at: Timestamp | None
    superseded_by: str | None = None
    queue: QueueEstimate | None = Field(None, description="position and estimated start/finish while queued")
    override: OverrideShown | None = Field(
        None, description="set when `score` is an instructor's (manual_score): their score, reason, who and when"
    )


class SubmissionList(BaseModel):
    items: list[SubmissionPublic]


class OverrideCreate(BaseModel):
    score: float | None = Field(ge=0, description="the score to record; null removes the override")
    reason: CleanReason

    model_config = ConfigDict(strict=True, extra="forbid")  # `false` is not a score of 0


class RegradeSkipped(BaseModel):
    submission_id: str
    reason: str = Field(description="why no new run was queued: already_pending or exercise_removed")
    job_status: str | None = Field(None, description="already_pending: the pending run's job, queued or running")
    message: str


class RegradeAccepted(BaseModel):
    queued: int
    submission_ids: list[str] = Field(description="the submissions that got a new run")
    skipped: list[RegradeSkipped] = []
    skipped_by_reason: dict[str, int] = Field({}, description="how many were skipped for each reason")
    dry_run: bool = Field(False, description="nothing was queued: `submission_ids` are those that would be")
    message: str = ""


class OverridePublic(BaseModel):
    old_score: float | None
    new_score: float | None
    reason: str
    by: str
    at: Timestamp
