"""Grade passback (AGS) through the shared outbox, against the platform harness's token and score
endpoints: a launch, a real upload, a grade stored the way a worker stores it, the score at the platform;
then an override, and the new score (later timestamp) is kept. One token grant serves both (cached)."""
from __future__ import annotations

import json

import httpx
import pytest
from lti_support import INSTRUCTOR, LEARNER


def _grade(sessions, submission_id: str, *, score: float, checks: list[dict]) -> None:
    """As Worker._store does: claim, the fenced complete, then the grade and its outbox row in one transaction."""
    from service.db import transaction
    from grading.result import CheckResult, GradeResult, Status
    from service.grades.service import record_grade
    from service.queue import service as queue

    with transaction(sessions) as s:
        job = queue.claim(s, worker_id="test", lanes=("short", "long"), free_devices=0, max_world_size=1, lease_s=60)
        assert job is not None and job.submission_id == submission_id
    with transaction(sessions) as s:
        assert queue.complete(s, job=job)
        record_grade(s, submission_id=submission_id,
                     result=GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=score, max_score=3.0, checks=[CheckResult(**c) for c in checks]))


@pytest.fixture
def deliverer(lti):
    from service.wiring import build_deliverer

    d = build_deliverer(lti.app.state.settings, sessions=lti.app.state.sessions)
    yield d
    d.pool.shutdown(wait=True)


def test_a_grade_and_its_override_reach_the_line_item(lti, svc, deliverer):
    from service.outbox.delivery import wait_until_idle

    learner = lti.browser.launch(sub="s-ags", roles=[LEARNER], context="course-G", exercise_id="ch05.svc_sum",
                                 lineitem="li-ags").json()
    teacher = lti.browser.launch(sub="t-ags", roles=[INSTRUCTOR], context="course-G").json()
    assert learner["course"] == teacher["course"]
    up = httpx.post(lti.url + "/api/v1/submissions", files={"notebook": ("nb.ipynb", svc.notebook())},
                    data={"exercise_id": "ch05.svc_sum"}, headers=svc.auth(learner["token"]), timeout=30)
    assert up.status_code == 202, up.text
    sid = up.json()["id"]
    _grade(lti.app.state.sessions, sid, score=3.0,
           checks=[{"name": "sum", "passed": True, "score": 2.0, "max_score": 2.0},
                   {"name": "edge", "passed": False, "score": 0.0, "max_score": 1.0}])
    assert wait_until_idle(deliverer, 30)
    scores = lti.platform.log()["scores"]
    assert len(scores) == 1, lti.platform.log()
    first = scores[0]
    assert (first["lineitem"], first["userId"]) == ("li-ags", "s-ags")
    assert (first["scoreGiven"], first["scoreMaximum"]) == (3.0, 3.0)
    assert (first["activityProgress"], first["gradingProgress"]) == ("Completed", "FullyGraded")
    assert "1/2 checks passed" in first["comment"] and sid in first["comment"]

    over = httpx.post(f"{lti.url}/api/v1/submissions/{sid}/override", headers=svc.auth(teacher["token"]),
                      json={"score": 2.0, "reason": "late by a day"}, timeout=30)
    assert over.status_code == 200, over.text
    assert wait_until_idle(deliverer, 30)
    log = lti.platform.log()
    assert [s["scoreGiven"] for s in log["scores"]] == [3.0, 2.0] and log["scores"][1]["kept"]
    assert log["scores"][1]["timestamp"] > first["timestamp"] and "late by a day" in log["scores"][1]["comment"]
    assert len(log["tokens"]) == 1 and deliverer.senders["lti"].token_requests == 1  # the token was cached
    assert not log["refused"], log["refused"]

    from sqlalchemy import select

    from service.outbox.models import DeliveryAttempt, OutboxDelivery
    with lti.app.state.sessions() as s:
        rows = list(s.scalars(select(OutboxDelivery).where(OutboxDelivery.target_kind == "lti")))
        # the upload's Pending was still unsent when the grade came: overtaken, dropped, never sent
        assert [(r.event_type, r.status) for r in rows] == [
            ("submission.received", "dropped"), ("grade.stored", "delivered"), ("grade.changed", "delivered")]
        assert s.scalar(select(DeliveryAttempt.status_code).where(DeliveryAttempt.delivery_id == rows[1].id)) == 200


def test_a_refused_token_is_a_logged_failed_attempt_retried_later(lti, svc, deliverer):
    """The platform refuses the assertion (a wrong client id registered): the delivery stays pending with
    the refusal logged, and nothing reaches the line item; other learners' exercises get no rows."""
    from sqlalchemy import select

    from service.db import transaction
    from service.lti.models import LtiPlatform
    from service.outbox.delivery import wait_until_idle
    from service.outbox.models import DeliveryAttempt, OutboxDelivery

    learner = lti.browser.launch(sub="s-refused", context="course-R", exercise_id="ch05.svc_sum",
                                 lineitem="li-refused").json()
    sid = httpx.post(lti.url + "/api/v1/submissions", files={"notebook": ("nb.ipynb", svc.notebook())},
                     data={"exercise_id": "ch05.svc_sum"}, headers=svc.auth(learner["token"]), timeout=30).json()["id"]
    with transaction(lti.app.state.sessions) as s:
        s.get(LtiPlatform, lti.platform_id).auth_token_url = lti.platform.url + "/token?tenant=wrong"
    try:
        deliverer.senders["lti"]._tokens.clear()
        _grade(lti.app.state.sessions, sid, score=1.0, checks=[])
        before = len(lti.platform.log()["scores"])
        assert wait_until_idle(deliverer, 30)
    finally:
        with transaction(lti.app.state.sessions) as s:
            s.get(LtiPlatform, lti.platform_id).auth_token_url = lti.platform.url + "/token"
    assert len(lti.platform.log()["scores"]) == before
    with lti.app.state.sessions() as s:
        row = s.scalar(select(OutboxDelivery).where(OutboxDelivery.target_kind == "lti",
                                                    OutboxDelivery.event_type == "grade.stored",
                                                    OutboxDelivery.body.contains("s-refused")))
        assert row.status == "pending" and row.attempts == 1 and "token endpoint answered HTTP 401" in row.last_error
        assert s.scalar(select(DeliveryAttempt.ok).where(DeliveryAttempt.delivery_id == row.id)) is False
        assert json.loads(row.body)["userId"] == "s-refused"
