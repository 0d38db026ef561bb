"""Deadlines and late work as pure functions: whether an exercise takes uploads at an instant, how late a
submission is, and what the late penalty leaves of its score. No database: the callers pass the schedule.

Times are UTC instants (naive UTC as stored, or aware), so daylight-saving changes of the course's zone
never move a deadline or a penalty; the zone is only how a time is shown.

The penalty (kinds `per_day`, `per_hour`): a submission `late_by_s` seconds after its due time has started
`units = ceil(late_by_s / unit_s)` days (86,400 s) or hours (3,600 s); its penalty is
`min(units * percent, 100 - floor_percent)` percent, so late work keeps at least `floor_percent` of the points
it earned, and its score is `raw * (100 - penalty) / 100`. Submitted exactly at the due time is on time.
`none`: late work is marked late and keeps its score. `closed`: uploads after the due time are refused.
"""

from __future__ import annotations

import datetime as dt
import enum
import math
from dataclasses import dataclass

DAY_S = 86_400
HOUR_S = 3_600


class LateKind(enum.StrEnum):
    NONE = "none"  # late work is accepted, marked late, and keeps its score
    PER_DAY = "per_day"  # `percent` off per started day late, down to `floor_percent` of the score
    PER_HOUR = "per_hour"
    CLOSED = "closed"  # no uploads after the due time (a hard close)


class Window(enum.StrEnum):
    """Whether an exercise takes uploads at an instant."""

    NOT_OPEN = "not_open"
    OPEN = "open"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True, kw_only=True)
class LatePolicy:
    kind: LateKind = LateKind.NONE
    percent: float = 0.0  # per started unit (per_day, per_hour); 0..100
    floor_percent: float = 0.0  # the share of the earned points late work always keeps; 0..100


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """One exercise's schedule in one course; no schedule at all is `Schedule()`: always open, never late."""

    opens_at: dt.datetime | None = None
    due_at: dt.datetime | None = None
    policy: LatePolicy = LatePolicy()

    def due_for(self, extension_due_at: dt.datetime | None) -> dt.datetime | None:
        """A learner's due time: their extension's when they have one (it replaces the course's), else the
        exercise's."""
        return extension_due_at if extension_due_at is not None else self.due_at


@dataclass(frozen=True, slots=True, kw_only=True)
class Lateness:
    late_by_s: int = 0  # whole seconds after the due time, rounded up; 0: on time
    penalty_percent: float = 0.0  # what the policy takes off the score, 0..100

    @property
    def late(self) -> bool:
        return self.late_by_s > 0


ON_TIME = Lateness()


def _utc(value: dt.datetime) -> dt.datetime:
    """Naive values are UTC (as stored); aware ones are converted, so both compare."""
    return value.replace(tzinfo=dt.UTC) if value.tzinfo is None else value.astimezone(dt.UTC)


def window(schedule: Schedule, *, at: dt.datetime, due_at: dt.datetime | None) -> Window:
    """Open, not yet open, or closed (a `closed` policy after the learner's due time `due_at`)."""
    if schedule.opens_at is not None and _utc(at) < _utc(schedule.opens_at):
        return Window.NOT_OPEN
    if schedule.policy.kind == LateKind.CLOSED and due_at is not None and _utc(at) > _utc(due_at):
        return Window.CLOSED
    return Window.OPEN


def assess(policy: LatePolicy, *, submitted_at: dt.datetime, due_at: dt.datetime | None) -> Lateness:
    """How late a submission made at `submitted_at` is against the learner's `due_at`, and its penalty."""
    if due_at is None:
        return ON_TIME
    seconds = (_utc(submitted_at) - _utc(due_at)).total_seconds()
    if seconds <= 0:
        return ON_TIME
    late_by_s = math.ceil(seconds)
    unit_s = {LateKind.PER_DAY: DAY_S, LateKind.PER_HOUR: HOUR_S}.get(policy.kind)
    if unit_s is None:
        return Lateness(late_by_s=late_by_s)
    units = math.ceil(late_by_s / unit_s)
    penalty = min(units * policy.percent, 100.0 - policy.floor_percent)
    return Lateness(late_by_s=late_by_s, penalty_percent=round(max(0.0, min(100.0, penalty)), 4))


def after_penalty(raw: float | None, penalty_percent: float) -> float | None:
    """The score a late penalty leaves (None stays None: nothing to count yet)."""
    if raw is None or penalty_percent <= 0:
        return raw  # on time: the score exactly as graded
    return round(raw * (100.0 - penalty_percent) / 100.0, 4)


def counted_score(*, manual: float | None, raw: float | None, penalty_percent: float) -> float | None:
    """The score that counts: an instructor's override is final (no penalty on top), else the auto score
    after the late penalty."""
    return manual if manual is not None else after_penalty(raw, penalty_percent)
