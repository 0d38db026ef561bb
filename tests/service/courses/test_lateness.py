"""The late rules as pure functions: windows, lateness and penalties, with the edges that matter (exactly at
the due time is on time, a started day or hour counts whole, the floor holds, time zones never matter)."""

from __future__ import annotations

import datetime as dt
import math

from hypothesis import given
from hypothesis import strategies as st

from service.courses.lateness import (
    LateKind,
    LatePolicy,
    Schedule,
    Window,
    after_penalty,
    assess,
    counted_score,
    window,
)

DUE = dt.datetime(2026, 3, 29, 0, 30)  # naive UTC, the night Europe/Berlin moves its clocks forward
PER_DAY = LatePolicy(kind=LateKind.PER_DAY, percent=10, floor_percent=50)
PER_HOUR = LatePolicy(kind=LateKind.PER_HOUR, percent=5, floor_percent=0)


def test_exactly_at_the_due_time_is_on_time_and_a_microsecond_later_is_late():
    assert assess(PER_DAY, submitted_at=DUE, due_at=DUE).late is False
    late = assess(PER_DAY, submitted_at=DUE + dt.timedelta(microseconds=1), due_at=DUE)
    assert (late.late, late.late_by_s, late.penalty_percent) == (True, 1, 10)


def test_a_started_day_counts_whole_and_the_floor_caps_the_penalty():
    day = dt.timedelta(days=1)
    assert assess(PER_DAY, submitted_at=DUE + day, due_at=DUE).penalty_percent == 10
    assert assess(PER_DAY, submitted_at=DUE + day + dt.timedelta(seconds=1), due_at=DUE).penalty_percent == 20
    assert assess(PER_DAY, submitted_at=DUE + 30 * day, due_at=DUE).penalty_percent == 50  # keeps 50 %
    assert assess(PER_HOUR, submitted_at=DUE + dt.timedelta(minutes=61), due_at=DUE).penalty_percent == 10
    assert assess(PER_HOUR, submitted_at=DUE + 40 * dt.timedelta(hours=1), due_at=DUE).penalty_percent == 100


def test_none_and_closed_mark_late_work_without_a_penalty_and_no_due_date_is_never_late():
    at = DUE + dt.timedelta(days=3)
    none = assess(LatePolicy(), submitted_at=at, due_at=DUE)
    assert none.late and none.late_by_s == 3 * 86_400 and none.penalty_percent == 0
    assert assess(LatePolicy(kind=LateKind.CLOSED), submitted_at=at, due_at=DUE).penalty_percent == 0
    assert assess(PER_DAY, submitted_at=at, due_at=None).late is False


def test_aware_and_naive_times_are_the_same_instants_whatever_the_zone():
    berlin = DUE.replace(tzinfo=dt.UTC).astimezone(dt.timezone(dt.timedelta(hours=2)))
    at = dt.datetime(2026, 3, 30, 3, 0, tzinfo=dt.timezone(dt.timedelta(hours=-7)))  # 10:00 UTC
    assert assess(PER_HOUR, submitted_at=at, due_at=berlin) == assess(
        PER_HOUR, submitted_at=at.astimezone(dt.UTC).replace(tzinfo=None), due_at=DUE
    )


def test_window_opens_at_opens_at_and_only_a_closed_policy_closes():
    opens = DUE - dt.timedelta(days=7)
    closed = Schedule(opens_at=opens, due_at=DUE, policy=LatePolicy(kind=LateKind.CLOSED))
    assert window(closed, at=opens - dt.timedelta(seconds=1), due_at=DUE) == Window.NOT_OPEN
    assert window(closed, at=opens, due_at=DUE) == Window.OPEN
    assert window(closed, at=DUE, due_at=DUE) == Window.OPEN
    assert window(closed, at=DUE + dt.timedelta(seconds=1), due_at=DUE) == Window.CLOSED
    extended = closed.due_for(DUE + dt.timedelta(days=2))
    assert window(closed, at=DUE + dt.timedelta(days=1), due_at=extended) == Window.OPEN
    open_late = Schedule(opens_at=opens, due_at=DUE, policy=PER_DAY)
    assert window(open_late, at=DUE + dt.timedelta(days=90), due_at=DUE) == Window.OPEN
    assert window(Schedule(), at=DUE, due_at=None) == Window.OPEN


def test_an_override_is_final_and_nothing_stays_nothing():
    assert counted_score(manual=2.0, raw=3.0, penalty_percent=50) == 2.0
    assert counted_score(manual=None, raw=3.0, penalty_percent=50) == 1.5
    assert after_penalty(None, 30) is None


@given(
    late_s=st.integers(min_value=1, max_value=400 * 86_400),
    percent=st.floats(min_value=0.5, max_value=100),
    floor=st.floats(min_value=0, max_value=100),
    raw=st.floats(min_value=0, max_value=1000),
    kind=st.sampled_from([LateKind.PER_DAY, LateKind.PER_HOUR]),
)
def test_the_penalty_follows_the_formula_and_never_goes_below_the_floor(late_s, percent, floor, raw, kind):
    policy = LatePolicy(kind=kind, percent=percent, floor_percent=floor)
    got = assess(policy, submitted_at=DUE + dt.timedelta(seconds=late_s), due_at=DUE)
    unit = 86_400 if kind == LateKind.PER_DAY else 3_600
    assert got.late_by_s == late_s
    assert math.isclose(got.penalty_percent, min(math.ceil(late_s / unit) * percent, 100 - floor), abs_tol=1e-3)
    left = after_penalty(raw, got.penalty_percent)
    assert left is not None and raw * floor / 100 - 1e-3 <= left <= raw + 1e-4


@given(st.integers(min_value=-400 * 86_400, max_value=0))
def test_anything_up_to_the_due_time_is_on_time(offset_s):
    got = assess(PER_HOUR, submitted_at=DUE + dt.timedelta(seconds=offset_s), due_at=DUE)
    assert (got.late, got.late_by_s, got.penalty_percent) == (False, 0, 0)
