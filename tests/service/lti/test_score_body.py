"""The AGS score builder: progress fields for every state a submission can be in, and the late penalty
taken as an input (the course deadlines compute it; the builder only applies it)."""
from __future__ import annotations

import json

import pytest


def body(**kw) -> dict:
    from service.lti.ags import score_body

    values = {"user_id": "u1", "timestamp": "2026-12-03T10:00:00.000+00:00", "status": "graded", "score": 2.0,
              "max_score": 3.0}
    values.update(kw)
    return json.loads(score_body(**values))


@pytest.mark.parametrize("status", ["queued", "running"])
def test_queued_or_running_is_submitted_and_pending_without_a_score(status):
    got = body(status=status, score=None)
    assert (got["activityProgress"], got["gradingProgress"]) == ("Submitted", "Pending")
    assert "scoreGiven" not in got and "scoreMaximum" not in got


def test_not_gradable_is_failed_never_a_zero():
    got = body(status="not_gradable", score=None)
    assert (got["activityProgress"], got["gradingProgress"]) == ("Submitted", "Failed") and "scoreGiven" not in got
    assert body(status="graded", score=None)["gradingProgress"] == "Failed"  # no score to send: never a zero


@pytest.mark.parametrize("status", ["graded", "error"])  # error: the learner's code failed, what passed counts
def test_a_score_is_completed_and_fully_graded(status):
    got = body(status=status)
    assert (got["activityProgress"], got["gradingProgress"]) == ("Completed", "FullyGraded")
    assert (got["scoreGiven"], got["scoreMaximum"], got["userId"]) == (2.0, 3.0, "u1") and "comment" not in got


def test_a_late_penalty_is_taken_off_never_below_zero_and_said_in_the_comment():
    from service.lti.ags import LatePenalty

    got = body(penalty=LatePenalty(points=0.5, reason="2 days late"))
    assert got["scoreGiven"] == 1.5 and "late penalty: 0.5 of 2 points" in got["comment"] and "2 days" in got["comment"]
    assert body(penalty=LatePenalty(points=5.0))["scoreGiven"] == 0.0
    assert "comment" not in body(penalty=LatePenalty(points=0.0))
    assert "scoreGiven" not in body(status="queued", score=None, penalty=LatePenalty(points=1.0))
