"""Per-exercise statistics (service/courses/stats.py) against a real database (SQLite and PostgreSQL): one
value per learner (their best attempt), learners with and without a submission, per-check pass rates over
the best attempts and the attempts that failed a check, time-to-grade from the jobs' timestamps, and the
course scope. Every expected number is computed here from the seeded rows, not copied from the code."""

from __future__ import annotations

import datetime as dt
import math
import statistics

import pytest
from sqlalchemy import select

from service.auth.principal import Principal
from service.auth.service import get_or_create_identity, set_membership
from service.courses import stats
from service.db import transaction, utcnow
from service.errors import Forbidden, ServiceError
from service.queue.models import Job

EX = "ch05.svc_sum"
NOW = utcnow()
# (user, course, score, {check: passed}, queue wait s, grading s, finished days ago); None score: not gradable
ATTEMPTS = [
    ("alice", "c1", 1.0, {"total_value": False, "word_value": True}, 4.0, 10.0, 1),
    ("alice", "c1", 3.0, {"total_value": True, "word_value": True}, 2.0, 12.0, 1),
    ("bob", "c1", 2.0, {"total_value": True, "word_value": False}, 30.0, 9.0, 2),
    ("bob", "c1", None, {}, 1.0, 40.0, 2),
    ("eve", "c1", 0.0, {"total_value": False, "word_value": False}, 8.0, 11.0, 3),
    ("eve", "c1", 0.0, {"total_value": False, "word_value": False}, 6.0, 7.0, 45),  # outside a 30-day window
    ("carol", "c2", 3.0, {"total_value": True, "word_value": True}, 100.0, 100.0, 1),  # a course not taught
]
MEMBERS = {"c1": ["alice", "bob", "dan", "eve"], "c2": ["carol"]}  # dan never submits


def _nearest_rank(values, p):
    ordered = sorted(values)
    return ordered[math.ceil(p / 100 * len(ordered)) - 1]


@pytest.fixture
def seeded(sessions, add_submission):
    ids = []
    with transaction(sessions) as s:
        for course, users in MEMBERS.items():
            for user in users:
                who = get_or_create_identity(s, issuer="titangrade", subject=user)
                set_membership(s, identity=who, course=course, role="learner")
        for n, (user, course, score, checks, wait_s, run_s, days) in enumerate(ATTEMPTS):
            sub, job = add_submission(s, user=user, course=course, exercise_id=EX)
            finished = NOW - dt.timedelta(days=days, minutes=n)
            claimed = finished - dt.timedelta(seconds=run_s)
            sub.created_at = claimed - dt.timedelta(seconds=wait_s)  # the attempt order: _created(n)
            sub.status, sub.score = ("graded", score) if score is not None else ("not_gradable", None)
            sub.result = {"checks": [{"name": k, "passed": v, "feedback": f"{k} {v}"} for k, v in checks.items()]}
            sub.grading_s = 0.0  # what an unmeasured run once stored: the stats never read it
            job.status, job.created_at, job.claimed_at, job.finished_at = (
                "done", claimed - dt.timedelta(seconds=wait_s), claimed, finished
            )  # fmt: skip
            ids.append(sub.id)
        # a run still waiting: it has no wait or duration yet
        add_submission(s, user="dan", course="c1", exercise_id="ch05.svc_long")
    return ids


def _teacher(sessions, course="c1") -> Principal:
    with transaction(sessions) as s:
        who = get_or_create_identity(s, issuer="titangrade", subject=f"tess-{course}")
        set_membership(s, identity=who, course=course, role="instructor")
        return Principal(identity_id=who.id, issuer=who.issuer, subject=who.subject, name=who.name,
                         memberships={course: "instructor"}, scope=None)  # fmt: skip


def _created(n: int) -> dt.datetime:
    _, _, _, _, wait_s, run_s, days = ATTEMPTS[n]
    return NOW - dt.timedelta(days=days, minutes=n, seconds=run_s + wait_s)


def _expected_best(course_rows):
    """Each learner's best: the highest score, the earliest on a tie; unscored attempts never win."""
    best: dict[str, tuple] = {}
    for n, row in sorted(course_rows, key=lambda nr: _created(nr[0])):
        user, score = row[0], row[2]
        if score is None:
            continue
        if user not in best or score > best[user][1][2]:
            best[user] = (n, row)
    return best


def test_one_best_per_learner_missing_learners_and_check_rates(sessions, seeded, test_catalogue):
    teacher = _teacher(sessions)
    with sessions() as s:
        found = stats.exercise_stats(s, user=teacher, exercise=test_catalogue.get(EX), catalogue=test_catalogue)
    c1 = [(n, row) for n, row in enumerate(ATTEMPTS) if row[1] == "c1"]
    best = _expected_best(c1)
    assert found.courses == ["c1"]
    assert found.submissions == len(c1) and found.by_status == {
        "graded": sum(1 for _, r in c1 if r[2] is not None), "not_gradable": sum(1 for _, r in c1 if r[2] is None)
    }  # fmt: skip
    submitted = {r[0] for _, r in c1}
    assert found.learners == len(MEMBERS["c1"])
    assert (found.learners_submitted, found.learners_missing) == (len(submitted), len(MEMBERS["c1"]) - len(submitted))
    scores = [row[2] for _, row in best.values()]
    assert found.learners_scored == len(scores) == 3  # alice, bob, eve: one value each, whatever their attempts
    assert found.mean_score == pytest.approx(statistics.fmean(scores))
    assert found.median_score == statistics.median(scores)
    assert found.median_percent == round(100 * statistics.median(scores) / 3.0, 1)
    buckets: dict[str, int] = {}
    for score in scores:
        low = min(int(100 * score / 3.0 // 10), 9) * 10
        buckets[f"{low}-{low + 10}%"] = buckets.get(f"{low}-{low + 10}%", 0) + 1
    assert found.score_histogram == dict(sorted(buckets.items()))
    for check in found.checks:
        ran = [row[3][check.name] for _, row in best.values()]
        assert (check.passed, check.failed) == (sum(ran), len(ran) - sum(ran))
        assert check.rate == pytest.approx(sum(ran) / len(ran))
    assert [c.name for c in found.checks] == ["total_value", "word_value"]  # the manifest's order


def test_time_to_grade_from_job_timestamps_in_the_window(sessions, seeded, test_catalogue):
    teacher = _teacher(sessions)
    with sessions() as s:
        found = stats.exercise_stats(
            s, user=teacher, exercise=test_catalogue.get(EX), catalogue=test_catalogue, window_days=30, now=NOW
        )
    inside = [row for row in ATTEMPTS if row[1] == "c1" and row[6] <= 30]
    waits, runs = [row[4] for row in inside], [row[5] for row in inside]
    timing = found.timing
    assert timing.queue_wait.runs == timing.grading.runs == len(inside)
    for p, got_wait, got_run in ((50, timing.queue_wait.p50_s, timing.grading.p50_s),
                                 (90, timing.queue_wait.p90_s, timing.grading.p90_s),
                                 (95, timing.queue_wait.p95_s, timing.grading.p95_s)):  # fmt: skip
        assert got_wait == pytest.approx(_nearest_rank(waits, p), abs=1e-3)
        assert got_run == pytest.approx(_nearest_rank(runs, p), abs=1e-3)
    assert found.median_grading_s == timing.grading.p50_s > 0  # never the stored 0.0
    with sessions() as s:
        wider = stats.exercise_stats(
            s, user=teacher, exercise=test_catalogue.get(EX), catalogue=test_catalogue, window_days=60, now=NOW
        )
    assert wider.timing.grading.runs == len(inside) + 1


def test_no_runs_is_no_data_never_zero(sessions, seeded, test_catalogue):
    teacher = _teacher(sessions)
    with sessions() as s:
        found = stats.exercise_stats(
            s, user=teacher, exercise=test_catalogue.get("ch05.svc_long"), catalogue=test_catalogue
        )
        pending = s.scalars(select(Job).where(Job.status == "queued")).all()
    assert len(pending) == 1  # the one waiting run counts for nothing yet
    t = found.timing
    assert (t.queue_wait.runs, t.queue_wait.p50_s, t.grading.p95_s, found.median_grading_s) == (0, None, None, None)
    assert (found.mean_score, found.median_percent, found.score_histogram) == (None, None, {})
    assert all(c.rate is None and c.passed == c.failed == 0 for c in found.checks)
    assert found.check_pass_rates == {}


def test_failed_check_lists_the_best_attempts_that_failed(sessions, seeded, test_catalogue):
    teacher = _teacher(sessions)
    exercise = test_catalogue.get(EX)
    with sessions() as s:
        failed = stats.check_failures(s, user=teacher, exercise=exercise, catalogue=test_catalogue, check="total_value")
    c1 = [(n, row) for n, row in enumerate(ATTEMPTS) if row[1] == "c1"]
    expected = sorted(
        (row[2], row[0], seeded[n]) for n, row in _expected_best(c1).values() if not row[3]["total_value"]
    )
    assert [(i.score, i.user, i.submission_id) for i in failed.items] == expected  # eve only: alice's best passed
    assert seeded[0] not in {i.submission_id for i in failed.items}  # alice's failed first try is not her best
    with sessions() as s, pytest.raises(ServiceError) as bad:
        stats.check_failures(s, user=teacher, exercise=exercise, catalogue=test_catalogue, check="nope")
    assert bad.value.status_code == 422 and "total_value, word_value" in bad.value.message


def test_scope_is_the_courses_taught(sessions, seeded, test_catalogue):
    teacher, other = _teacher(sessions), _teacher(sessions, "c2")
    exercise = test_catalogue.get(EX)
    with sessions() as s:
        with pytest.raises(Forbidden):
            stats.exercise_stats(s, user=teacher, exercise=exercise, catalogue=test_catalogue, course="c2")
        admin = Principal(identity_id=0, issuer="titangrade", subject="root", name="root",
                          global_role="admin")  # fmt: skip
        everything = stats.exercise_stats(s, user=admin, exercise=exercise, catalogue=test_catalogue)
        c2 = stats.exercise_stats(s, user=other, exercise=exercise, catalogue=test_catalogue)
    assert everything.courses == ["c1", "c2"] and everything.learners == 5 and everything.submissions == len(ATTEMPTS)
    assert (c2.courses, c2.learners_scored, c2.mean_score, c2.check_pass_rates) == (
        ["c2"], 1, 3.0, {"total_value": 1.0, "word_value": 1.0}
    )  # fmt: skip
