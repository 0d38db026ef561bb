"""A course side by side and its learners at risk (service/courses/risk.py) on a real database (SQLite and
PostgreSQL): exercises by learners submitted, median best %, pass rate and median grading time; at risk when
nothing is submitted or the best total is below the threshold, due-soon work first when due dates are given."""

from __future__ import annotations

import datetime as dt
import statistics

import pytest

from service.auth.service import get_or_create_identity, set_membership
from service.courses import risk
from service.db import transaction, utcnow

NOW = utcnow()
MAX = 3.0  # every test-catalogue exercise
EXERCISES = ["ch05.svc_broken", "ch05.svc_gpu", "ch05.svc_long", "ch05.svc_sum"]
# learner -> exercise -> scores of their attempts (best counts); "nil" has none
WORK = {
    "ann": {"ch05.svc_sum": [3.0], "ch05.svc_long": [3.0], "ch05.svc_gpu": [3.0], "ch05.svc_broken": [1.0, 2.0]},
    "ben": {"ch05.svc_sum": [1.0, 0.0], "ch05.svc_broken": [3.0]},
    "cat": {"ch05.svc_sum": [2.0], "ch05.svc_long": [3.0], "ch05.svc_gpu": [2.0]},
    "nil": {},
}
GRADING_S = {"ch05.svc_sum": [4.0, 6.0, 50.0, 5.0]}  # durations of its finished runs (the rest: none)


@pytest.fixture
def book(sessions, add_submission, test_catalogue):
    with transaction(sessions) as s:
        for user, work in WORK.items():
            who = get_or_create_identity(s, issuer="titangrade", subject=user)
            set_membership(s, identity=who, course="c1", role="learner")
            for exercise_id, scores in work.items():
                for score in scores:
                    sub, _ = add_submission(s, user=user, exercise_id=exercise_id)
                    sub.status, sub.score = "graded", score
        for exercise_id, durations in GRADING_S.items():
            for run_s in durations:
                sub, job = add_submission(s, user="ann", exercise_id=exercise_id)
                sub.status = "superseded"  # runs of their own, never anyone's best
                job.status, job.created_at = "done", NOW - dt.timedelta(hours=1, seconds=5)
                job.claimed_at, job.finished_at = (
                    NOW - dt.timedelta(hours=1),
                    NOW - dt.timedelta(hours=1, seconds=-run_s),
                )
    with sessions() as s:
        return risk.course_stats(s, course="c1", catalogue=test_catalogue, threshold=50.0, now=NOW)


def _best(user: str, exercise_id: str) -> float | None:
    scores = WORK[user].get(exercise_id)
    return max(scores) if scores else None


def test_exercises_side_by_side(book):
    assert [e.exercise_id for e in book.exercises] == EXERCISES
    for col in book.exercises:
        bests = [b for u in WORK if (b := _best(u, col.exercise_id)) is not None]
        assert (col.learners, col.submitted) == (len(WORK), len(bests))
        percents = [100 * b / MAX for b in bests]
        assert col.median_percent == (round(statistics.median(percents), 1) if percents else None)
        assert col.pass_rate == (sum(p >= 50 for p in percents) / len(percents) if percents else None)
        durations = GRADING_S.get(col.exercise_id)
        lower_middle = sorted(durations)[(len(durations) - 1) // 2] if durations else None  # nearest-rank p50
        assert col.median_grading_s == (pytest.approx(lower_middle, abs=1e-3) if durations else None)
    assert book.timing.grading.runs == sum(len(d) for d in GRADING_S.values())


def test_learners_at_risk_nothing_submitted_or_below_the_threshold(book):
    totals = {u: sum(max(v) for v in w.values()) / (MAX * len(EXERCISES)) * 100 for u, w in WORK.items()}
    expected = {u for u, w in WORK.items() if not w or totals[u] < 50}
    assert {r.subject for r in book.at_risk} == expected == {"ben", "nil"}
    nil, ben = book.at_risk  # nothing submitted first, then the lowest total
    assert (nil.subject, nil.reason, nil.submitted) == ("nil", "nothing_submitted", 0)
    assert (ben.subject, ben.reason, ben.percent) == ("ben", "below_threshold", round(totals["ben"], 1))
    assert {i.exercise_id: i.reason for i in ben.items} == {
        e: "missing" if _best("ben", e) is None else "below_threshold"
        for e in EXERCISES
        if _best("ben", e) is None or _best("ben", e) / MAX < 0.5
    }


def test_a_higher_threshold_and_due_dates_rank_what_is_due_first(sessions, book, test_catalogue):
    from service.courses import gradebook

    with sessions() as s:
        full = gradebook.build(s, course="c1", policy="best", catalogue=test_catalogue)
    due = {
        "ch05.svc_broken": dt.datetime.now(dt.UTC) + dt.timedelta(days=2),
        "ch05.svc_gpu": NOW + dt.timedelta(days=30),
    }
    ranked = risk.at_risk(full, threshold=90.0, due=due, within_days=7, now=NOW)
    # at 90 %: ann (11/12) is fine, cat (7/12) counts; svc_broken, due in 2 days, is missing for nil and cat
    # (ben has it): they come first, nothing submitted before something
    assert [r.subject for r in ranked] == ["nil", "cat", "ben"]
    first = ranked[1].items[0]
    assert (first.exercise_id, first.reason, first.due_soon) == ("ch05.svc_broken", "missing", True)
    assert first.due_at is not None and first.due_at.tzinfo is None  # stored as naive UTC, converted
    assert next(i for i in ranked[1].items if i.exercise_id == "ch05.svc_gpu").due_soon is False  # in 30 days
    assert [r.subject for r in risk.at_risk(full, threshold=90.0, now=NOW)] == ["nil", "ben", "cat"]  # lowest first
