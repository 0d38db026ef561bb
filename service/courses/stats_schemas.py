"""The statistics an instructor acts on, as the API sends them (service/courses/stats.py, risk.py, timing.py)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from service.timefmt import Timestamp

BEST_BASIS = "each learner's best attempt (the gradebook's `best` policy), one value per learner"


class Percentiles(BaseModel):
    runs: int = Field(description="grading runs behind the numbers; 0 means no data (the percentiles are null)")
    p50_s: float | None
    p90_s: float | None
    p95_s: float | None


class Timing(BaseModel):
    """Time-to-grade of the runs that finished in the window, from the jobs' own timestamps."""

    window_days: int
    since: Timestamp
    queue_wait: Percentiles = Field(description="job queued -> claimed by the worker that finished it")
    grading: Percentiles = Field(description="claimed -> finished (done runs only)")


class CheckRate(BaseModel):
    name: str
    title: str
    passed: int
    failed: int
    rate: float | None = Field(description="passed / (passed + failed); null when no best attempt ran it")


class ExerciseStats(BaseModel):
    exercise_id: str
    max_score: float
    courses: list[str] = Field(description="the courses counted: the one asked for, or every course you teach")
    submissions: int = Field(description="every attempt, all runs counted once")
    by_status: dict[str, int] = Field(description="every attempt by status")
    learners: int = Field(description="the gradebook's learners: members with the learner role and submitters")
    learners_submitted: int
    learners_missing: int = Field(description="learners with no attempt at this exercise")
    learners_scored: int = Field(description="learners whose best attempt has a score")
    basis: str = BEST_BASIS
    score_histogram: dict[str, int] = Field(description="each learner's best score, in 10 % buckets of the max")
    mean_score: float | None
    median_score: float | None
    mean_percent: float | None
    median_percent: float | None
    checks: list[CheckRate] = Field(description="pass rate per check over each learner's best scored attempt")
    check_pass_rates: dict[str, float] = Field(description="the same rates by name (checks nobody ran left out)")
    timing: Timing
    median_grading_s: float | None = Field(description="timing.grading.p50_s; null when no run finished")


class FailedAttempt(BaseModel):
    submission_id: str
    user: str
    issuer: str
    subject: str
    course: str
    score: float | None
    max_score: float
    graded_at: Timestamp | None
    feedback: str


class CheckFailures(BaseModel):
    exercise_id: str
    check: str
    basis: str = BEST_BASIS
    courses: list[str]
    items: list[FailedAttempt]


class ExerciseColumn(BaseModel):
    exercise_id: str
    max_score: float
    learners: int
    submitted: int
    median_percent: float | None = Field(description="median of each learner's best, % of the max")
    pass_rate: float | None = Field(description="learners who submitted whose best reaches the threshold")
    median_grading_s: float | None
    due_at: Timestamp | None = None


class RiskItem(BaseModel):
    exercise_id: str
    reason: str = Field(description="missing or below_threshold")
    percent: float | None
    due_at: Timestamp | None = None
    due_soon: bool = False


class LearnerAtRisk(BaseModel):
    user: str
    issuer: str
    subject: str
    reason: str = Field(description="nothing_submitted or below_threshold")
    points: float
    max_points: float
    percent: float | None
    submitted: int
    items: list[RiskItem] = Field(description="the exercises that put the learner at risk, due soonest first")


class CourseStats(BaseModel):
    course: str
    threshold_percent: float
    due_within_days: int
    learners: int
    basis: str = BEST_BASIS
    exercises: list[ExerciseColumn]
    at_risk: list[LearnerAtRisk]
    timing: Timing
