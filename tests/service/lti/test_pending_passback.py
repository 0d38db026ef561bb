"""The in-progress score (AGS `Submitted` / `Pending`) of an LTI learner's upload, against the platform harness:
sent when the submission is received, stamped with the upload time, then overtaken by the final score; a
Pending still unsent (or retried) once a later score exists is dropped, never sent after the final; uploads
nobody passes back write no "submission received" row; a regrade sends no new Pending."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest
from lti_support import INSTRUCTOR, LEARNER
from sqlalchemy import select, update

EXERCISE = "ch05.svc_sum"


def _upload(lti, svc, token: str, exercise_id: str = EXERCISE) -> str:
    up = httpx.post(
        lti.url + "/api/v1/submissions",
        files={"notebook": ("nb.ipynb", svc.notebook(exercise_id))},
        data={"exercise_id": exercise_id},
        headers=svc.auth(token),
        timeout=30,
    )
    assert up.status_code == 202, up.text
    return up.json()["id"]


def _grade(sessions, submission_id: str, *, score: float) -> None:
    """As Worker._store does: claim, the fenced complete, then the grade and its outbox row in one transaction."""
    from grading.result import GradeResult, Status
    from service.db import transaction
    from service.grades.service import record_grade
    from service.queue import service as queue

    with transaction(sessions) as s:
        job = queue.claim(s, worker_id="test", lanes=("short", "long"), free_devices=0, max_world_size=1, lease_s=60)
        assert job is not None and job.submission_id == submission_id
    with transaction(sessions) as s:
        assert queue.complete(s, job=job)
        record_grade(
            s,
            submission_id=submission_id,
            result=GradeResult(exercise_id=EXERCISE, status=Status.GRADED, score=score, max_score=3.0),
        )


def _scores(lti, user: str) -> list[dict]:
    return [s for s in lti.platform.log()["scores"] if s["userId"] == user]


def _received(sessions, submission_id: str) -> list:
    from service.outbox.models import OutboxEvent

    with sessions() as s:
        return list(
            s.scalars(
                select(OutboxEvent).where(
                    OutboxEvent.submission_id == submission_id, OutboxEvent.kind == "submission.received"
                )
            )
        )


def _deliveries(sessions, user: str) -> list:
    from service.outbox.models import OutboxDelivery

    with sessions() as s:
        return list(
            s.scalars(
                select(OutboxDelivery)
                .where(OutboxDelivery.target_kind == "lti", OutboxDelivery.body.contains(f'"userId":"{user}"'))
                .order_by(OutboxDelivery.id)
            )
        )


@pytest.fixture
def deliverer(lti):
    from service.wiring import build_deliverer

    d = build_deliverer(lti.app.state.settings, sessions=lti.app.state.sessions)
    yield d
    d.pool.shutdown(wait=True)


def test_an_upload_sends_pending_then_the_final_score_in_timestamp_order(lti, svc, deliverer):
    from service.outbox.delivery import wait_until_idle
    from service.submissions.models import Submission
    from service.timefmt import rfc3339

    learner = lti.browser.launch(
        sub="s-pending", roles=[LEARNER], context="course-P", exercise_id=EXERCISE, lineitem="li-pending"
    ).json()
    sid = _upload(lti, svc, learner["token"])
    (event,) = _received(lti.app.state.sessions, sid)
    with lti.app.state.sessions() as s:
        submitted_at = rfc3339(s.get(Submission, sid).created_at)
    assert rfc3339(event.created_at) == submitted_at  # the Pending's timestamp is the upload time

    assert wait_until_idle(deliverer, 30)
    (pending,) = _scores(lti, "s-pending")
    assert pending["lineitem"] == "li-pending" and pending["kept"]
    assert (pending["activityProgress"], pending["gradingProgress"]) == ("Submitted", "Pending")
    assert "scoreGiven" not in pending and "scoreMaximum" not in pending  # in progress: no score, never a zero
    assert pending["timestamp"] == pending["submission"]["submittedAt"] == submitted_at

    _grade(lti.app.state.sessions, sid, score=2.0)
    assert wait_until_idle(deliverer, 30)
    first, final = _scores(lti, "s-pending")
    assert first == pending
    assert (final["activityProgress"], final["gradingProgress"], final["scoreGiven"]) == (
        "Completed",
        "FullyGraded",
        2.0,
    )
    assert final["kept"] and dt.datetime.fromisoformat(final["timestamp"]) > dt.datetime.fromisoformat(
        pending["timestamp"]
    )
    assert final["submission"]["submittedAt"] == submitted_at
    assert [(d.event_type, d.status) for d in _deliveries(lti.app.state.sessions, "s-pending")] == [
        ("submission.received", "delivered"),
        ("grade.stored", "delivered"),
    ]
    assert not lti.platform.log()["refused"]


def test_a_pending_retried_after_the_final_was_delivered_is_dropped(lti, svc, deliverer):
    """The Pending's first try fails (the token is refused); the final goes out; when the Pending's retry comes
    due it is dropped at its claim: the platform never sees it, and the log says why."""
    from service.db import transaction
    from service.lti.models import LtiPlatform
    from service.outbox.delivery import wait_until_idle
    from service.outbox.models import DeliveryAttempt, OutboxDelivery

    sessions = lti.app.state.sessions
    learner = lti.browser.launch(
        sub="s-retried", roles=[LEARNER], context="course-Q", exercise_id=EXERCISE, lineitem="li-retried"
    ).json()
    sid = _upload(lti, svc, learner["token"])
    with transaction(sessions) as s:
        s.get(LtiPlatform, lti.platform_id).auth_token_url = lti.platform.url + "/token?tenant=wrong"
    try:
        deliverer.senders["lti"]._tokens.clear()
        assert wait_until_idle(deliverer, 30)
    finally:
        with transaction(sessions) as s:
            s.get(LtiPlatform, lti.platform_id).auth_token_url = lti.platform.url + "/token"
        deliverer.senders["lti"]._tokens.clear()
    (pending,) = _deliveries(sessions, "s-retried")
    assert (pending.status, pending.attempts) == ("pending", 1) and "HTTP 401" in pending.last_error
    later = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(hours=1)
    with transaction(sessions) as s:  # its retry is not due yet: the final goes first
        s.execute(update(OutboxDelivery).where(OutboxDelivery.id == pending.id).values(next_attempt_at=later))

    _grade(sessions, sid, score=3.0)
    assert wait_until_idle(deliverer, 30)
    assert [(d.event_type, d.status) for d in _deliveries(sessions, "s-retried")] == [
        ("submission.received", "pending"),
        ("grade.stored", "delivered"),
    ]
    with transaction(sessions) as s:  # now the retry comes due
        s.execute(
            update(OutboxDelivery)
            .where(OutboxDelivery.id == pending.id)
            .values(next_attempt_at=dt.datetime(2000, 1, 1))
        )
    assert wait_until_idle(deliverer, 30)

    dropped, final = _deliveries(sessions, "s-retried")
    assert (dropped.status, final.status) == ("dropped", "delivered")
    assert "later score" in dropped.last_error
    with sessions() as s:
        last = s.scalars(
            select(DeliveryAttempt).where(DeliveryAttempt.delivery_id == dropped.id).order_by(DeliveryAttempt.id)
        ).all()
    assert [(a.ok, a.status_code) for a in last] == [(False, None), (False, None)]  # the 401, then the drop
    assert "later score" in last[-1].error
    scores = _scores(lti, "s-retried")
    assert [(x["gradingProgress"], x.get("scoreGiven")) for x in scores] == [("FullyGraded", 3.0)]
    assert wait_until_idle(deliverer, 30) and len(_scores(lti, "s-retried")) == 1  # nothing retries a drop


def test_a_regrade_sends_no_new_pending(lti, svc, deliverer):
    """A regrade re-queues the submission, but the learner sent nothing new: the platform keeps the last
    final score until the regrade's result replaces it (docs/lms.md says why)."""
    from service.outbox.delivery import wait_until_idle

    learner = lti.browser.launch(
        sub="s-regrade", roles=[LEARNER], context="course-RG", exercise_id=EXERCISE, lineitem="li-regrade"
    ).json()
    teacher = lti.browser.launch(sub="t-regrade", roles=[INSTRUCTOR], context="course-RG").json()
    sid = _upload(lti, svc, learner["token"])
    _grade(lti.app.state.sessions, sid, score=1.0)
    assert wait_until_idle(deliverer, 30)
    again = httpx.post(f"{lti.url}/api/v1/submissions/{sid}/regrade", headers=svc.auth(teacher["token"]), timeout=30)
    assert again.status_code == 202, again.text
    assert len(_received(lti.app.state.sessions, sid)) == 1  # the upload's, not a new one
    _grade(lti.app.state.sessions, sid, score=3.0)
    assert wait_until_idle(deliverer, 30)
    assert [(x["gradingProgress"], x.get("scoreGiven")) for x in _scores(lti, "s-regrade")] == [
        ("FullyGraded", 1.0),
        ("FullyGraded", 3.0),
    ]


def test_a_worker_clock_behind_the_api_still_stamps_the_final_after_the_pending(lti, svc, deliverer):
    """The grade's outbox row says it was written 5 s before the upload (the worker's clock is behind): its
    score is stamped 1 ms after the upload time, so the platform still keeps the final over the Pending."""
    from service.db import transaction
    from service.outbox.delivery import wait_until_idle
    from service.outbox.models import OutboxEvent
    from service.submissions.models import Submission

    learner = lti.browser.launch(
        sub="s-skew", roles=[LEARNER], context="course-SK", exercise_id=EXERCISE, lineitem="li-skew"
    ).json()
    sid = _upload(lti, svc, learner["token"])
    assert wait_until_idle(deliverer, 30)
    _grade(lti.app.state.sessions, sid, score=2.0)
    with transaction(lti.app.state.sessions) as s:
        uploaded = s.get(Submission, sid).created_at
        s.execute(
            update(OutboxEvent)
            .where(OutboxEvent.submission_id == sid, OutboxEvent.kind == "grade.stored")
            .values(created_at=uploaded - dt.timedelta(seconds=5))
        )
    assert wait_until_idle(deliverer, 30)
    pending, final = _scores(lti, "s-skew")
    assert (pending["gradingProgress"], final["gradingProgress"]) == ("Pending", "FullyGraded")
    stamp = dt.datetime.fromisoformat
    assert stamp(final["timestamp"]) - stamp(pending["timestamp"]) == dt.timedelta(milliseconds=1)
    assert final["kept"] and final["scoreGiven"] == 2.0


def test_a_later_attempt_overtakes_an_earlier_unsent_pending(lti, svc, deliverer):
    """Two uploads before any delivery: only the later attempt's Pending is sent (the earlier one would say
    nothing the platform should keep)."""
    from service.outbox.delivery import wait_until_idle

    learner = lti.browser.launch(
        sub="s-twice", roles=[LEARNER], context="course-T", exercise_id=EXERCISE, lineitem="li-twice"
    ).json()
    first, second = _upload(lti, svc, learner["token"]), _upload(lti, svc, learner["token"])
    assert len(_received(lti.app.state.sessions, first)) == len(_received(lti.app.state.sessions, second)) == 1
    assert wait_until_idle(deliverer, 30)
    assert [d.status for d in _deliveries(lti.app.state.sessions, "s-twice")] == ["dropped", "delivered"]
    (sent,) = _scores(lti, "s-twice")
    assert sent["gradingProgress"] == "Pending" and f"/api/v1/submissions/{second}" in sent["comment"]


def test_uploads_with_no_line_item_for_them_write_no_received_row(lti, svc):
    """A launched learner's upload of an exercise their platform has no line item for, and a token learner's
    upload of an exercise that has one in the same course (not from that platform): no "submission received"
    row for either. (These two tests grade nothing: their jobs stay queued, so they run last.)"""
    from service.auth.service import create_token
    from service.db import transaction

    learner = lti.browser.launch(
        sub="s-other-ex", roles=[LEARNER], context="course-N", exercise_id=EXERCISE, lineitem="li-other-ex"
    ).json()
    other = _upload(lti, svc, learner["token"], exercise_id="ch05.svc_long")
    assert _received(lti.app.state.sessions, other) == []
    assert len(_received(lti.app.state.sessions, _upload(lti, svc, learner["token"]))) == 1
    with transaction(lti.app.state.sessions) as s:
        token = create_token(s, user="tok-learner-n", role="learner", course=learner["course"])
    assert _received(lti.app.state.sessions, _upload(lti, svc, token)) == []
