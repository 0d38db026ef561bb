"""The statistics API over the real app (SQLite and PostgreSQL): GET /exercises/{id}/stats and /failures,
GET /courses/{c}/stats, and bulk regrade's dry run and reasons; scope and bad input answered with a 4xx."""

from __future__ import annotations

import datetime as dt

import pytest

from service.db import transaction, utcnow


@pytest.fixture
def seeded(api, svc):
    """alice: two attempts (best 3/3, all checks), bob: one (1/3, total_value failed); carol is in c2."""
    from sqlalchemy import select

    from service.queue.models import Job
    from service.submissions.models import Submission

    ids = {}
    for who, key in (("alice", "a1"), ("alice", "a2"), ("bob", "b1"), ("carol", "c1")):
        files = {"notebook": ("a.ipynb", svc.notebook())}
        resp = api.post("/api/v1/submissions", files=files, headers=svc.auth(api.tokens[who]))
        assert resp.status_code == 202, resp.text
        ids[key] = resp.json()["id"]
    grades = {"a1": (2.0, True, False), "a2": (3.0, True, True), "b1": (1.0, False, True), "c1": (3.0, True, True)}
    now = utcnow()
    with transaction(api.app_state.sessions) as s:
        for key, (score, total_ok, word_ok) in grades.items():
            sub = s.get(Submission, ids[key])
            sub.status, sub.score = "graded", score
            sub.result = {"checks": [{"name": "total_value", "passed": total_ok, "feedback": "t"},
                                     {"name": "word_value", "passed": word_ok, "feedback": "w"}]}  # fmt: skip
            if key != "a2":  # a2's run is still queued: bulk regrade skips it
                job = s.scalars(select(Job).where(Job.submission_id == sub.id)).one()
                job.status, job.claimed_at = "done", now - dt.timedelta(seconds=20)
                job.created_at, job.finished_at = now - dt.timedelta(seconds=30), now - dt.timedelta(seconds=16)
    return ids


def test_exercise_stats_are_per_learner_and_course_scoped(api, svc, seeded):
    teacher = svc.auth(api.tokens["teacher"])
    body = api.get("/api/v1/exercises/ch05.svc_sum/stats", headers=teacher).json()
    assert body["courses"] == ["c1"] and body["submissions"] == 3  # carol's c2 attempt is not the teacher's
    assert (body["learners"], body["learners_submitted"], body["learners_scored"]) == (2, 2, 2)
    assert body["score_histogram"] == {"30-40%": 1, "90-100%": 1}  # bob's 1/3 and alice's best 3/3, once each
    assert body["mean_score"] == 2.0 and body["check_pass_rates"] == {"total_value": 0.5, "word_value": 1.0}
    assert body["timing"]["grading"]["runs"] == 2 and body["timing"]["grading"]["p50_s"] == pytest.approx(4.0)
    assert body["timing"]["queue_wait"]["p95_s"] == pytest.approx(10.0) and body["median_grading_s"] == 4.0
    assert body["timing"]["since"].endswith("+00:00")
    empty = api.get("/api/v1/exercises/ch05.svc_long/stats", headers=teacher).json()
    assert empty["timing"]["grading"] == {"runs": 0, "p50_s": None, "p90_s": None, "p95_s": None}
    assert empty["median_grading_s"] is None and empty["learners_missing"] == 2
    alice = api.get("/api/v1/exercises/ch05.svc_sum/stats", headers=svc.auth(api.tokens["alice"]))
    assert alice.status_code == 403
    other = api.get("/api/v1/exercises/ch05.svc_sum/stats?course=c2", headers=teacher)
    assert other.status_code == 403 and other.json()["error"]["code"] == "forbidden"
    bad = api.get("/api/v1/exercises/ch05.svc_sum/stats?window_days=0", headers=teacher)
    assert bad.status_code == 422 and "window_days" in bad.text
    root = api.get("/api/v1/exercises/ch05.svc_sum/stats", headers=svc.auth(api.tokens["root"])).json()
    assert root["courses"] == ["c1", "c2"] and root["learners_scored"] == 3


def test_failures_list_the_best_attempts_that_failed_a_check(api, svc, seeded):
    teacher = svc.auth(api.tokens["teacher"])
    body = api.get("/api/v1/exercises/ch05.svc_sum/failures?check=total_value", headers=teacher).json()
    assert [i["submission_id"] for i in body["items"]] == [seeded["b1"]]  # a1 failed too, but is not alice's best
    assert body["items"][0]["user"] == "bob" and body["items"][0]["feedback"] == "t"
    none = api.get("/api/v1/exercises/ch05.svc_sum/failures?check=word_value", headers=teacher).json()
    assert none["items"] == []
    bad = api.get("/api/v1/exercises/ch05.svc_sum/failures?check=nope", headers=teacher)
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "unknown_check"
    assert "total_value, word_value" in bad.json()["error"]["message"]
    assert api.get("/api/v1/exercises/ch05.svc_sum/failures", headers=teacher).status_code == 422  # check needed


def test_course_stats_side_by_side_and_at_risk(api, svc, seeded):
    teacher = svc.auth(api.tokens["teacher"])
    body = api.get("/api/v1/courses/c1/stats", headers=teacher).json()
    col = next(e for e in body["exercises"] if e["exercise_id"] == "ch05.svc_sum")
    assert (col["submitted"], col["median_percent"], col["pass_rate"]) == (2, round((100 + 100 / 3) / 2, 1), 0.5)
    # totals over the four exercises (12 points): alice 3 (25 %), bob 1: both below 50 %, the lowest first
    assert [(r["user"], r["reason"]) for r in body["at_risk"]] == [("bob", "below_threshold"),
                                                                     ("alice", "below_threshold")]  # fmt: skip
    low = api.get("/api/v1/courses/c1/stats?threshold=20", headers=teacher).json()
    assert [r["user"] for r in low["at_risk"]] == ["bob"] and low["threshold_percent"] == 20
    assert api.get("/api/v1/courses/c1/stats?threshold=101", headers=teacher).status_code == 422
    assert api.get("/api/v1/courses/c2/stats", headers=teacher).status_code == 403


def test_bulk_regrade_dry_run_then_skips_grouped_by_reason(api, svc, seeded):
    teacher = svc.auth(api.tokens["teacher"])
    plan = api.post("/api/v1/exercises/ch05.svc_sum/regrade?dry_run=true", headers=teacher).json()
    assert (
        plan["dry_run"]
        and plan["queued"] == 0
        and sorted(plan["submission_ids"]) == sorted([seeded["a1"], seeded["b1"]])
    )
    assert plan["skipped_by_reason"] == {"already_pending": 1} and plan["skipped"][0]["job_status"] == "queued"
    done = api.post("/api/v1/exercises/ch05.svc_sum/regrade", headers=teacher).json()
    assert done["queued"] == 2 and done["skipped_by_reason"] == {"already_pending": 1}
    assert "1 already_pending" in done["message"]
    again = api.post("/api/v1/exercises/ch05.svc_sum/regrade", headers=teacher).json()
    assert again["queued"] == 0 and again["skipped_by_reason"] == {"already_pending": 3}
