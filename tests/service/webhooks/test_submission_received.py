"""`submission.received` over real HTTP: an upload through the API reaches the endpoint that subscribed to it
exactly once (signed, verified by the receiver with `standardwebhooks`, through a receiver outage), before
its grade; an endpoint of the same course that asked only for the grade events, and a subscriber of another
course, never get it."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(120)


def _endpoint(sessions, url: str, *, course: str, types: list[str]) -> tuple[int, str]:
    from service.db import transaction
    from service.outbox.ssrf import AddressPolicy
    from service.webhooks import service

    with transaction(sessions) as s:
        row = service.create(s, course=course, url=url, event_types=types, policy=AddressPolicy(enforce=False))
        return row.id, row.secret


def _grade(sessions, submission_id: str) -> None:
    """As Worker._store does: claim, the fenced complete, then the grade and its outbox row in one transaction."""
    from grading.result import GradeResult, Status
    from service.db import transaction
    from service.grades.service import record_grade
    from service.queue import service as queue

    with transaction(sessions) as s:
        job = queue.claim(s, worker_id="test", lanes=("short",), free_devices=0, max_world_size=1, lease_s=60)
        assert job is not None and job.submission_id == submission_id
    with transaction(sessions) as s:
        assert queue.complete(s, job=job)
        record_grade(
            s,
            submission_id=submission_id,
            result=GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0),
        )


def test_only_subscribers_of_submission_received_get_it_exactly_once(api, db_url, svc, receivers, wait_for):
    from delivery_support import free_port

    from service.outbox.models import OutboxDelivery
    from service.wiring import build_deliverer

    sessions = api.app_state.sessions
    port = free_port()
    subscribed = _endpoint(
        sessions, f"http://127.0.0.1:{port}/hook", course="c1", types=["submission.received", "grade.stored"]
    )
    grades_only = _endpoint(
        sessions,
        "http://placeholder.invalid/h",
        course="c1",
        types=["grade.stored", "grade.changed", "submission.not_gradable"],
    )
    elsewhere = _endpoint(sessions, "http://placeholder.invalid/h", course="c2", types=["submission.received"])
    hooks = {
        name: receivers([secret]) for name, (_, secret) in (("grades_only", grades_only), ("elsewhere", elsewhere))
    }
    hooks["subscribed"] = receivers([subscribed[1]], port=port)  # down until the first tries have failed
    from service.db import transaction
    from service.webhooks.models import WebhookEndpoint

    with transaction(sessions) as s:
        for name, (endpoint_id, _) in (("grades_only", grades_only), ("elsewhere", elsewhere)):
            s.get(WebhookEndpoint, endpoint_id).url = hooks[name].start().url

    up = api.post(
        "/api/v1/submissions",
        files={"notebook": ("nb.ipynb", svc.notebook())},
        data={"exercise_id": "ch05.svc_sum"},
        headers=svc.auth(api.tokens["alice"]),
    )
    assert up.status_code == 202, up.text
    sid = up.json()["id"]
    settings = svc.settings(
        db_url,
        webhook_retry_base_s=0.05,
        webhook_retry_max_delay_s=0.2,
        webhook_retry_window_s=60.0,
        webhook_timeout_s=5.0,
    )
    deliverer = build_deliverer(settings, sessions=sessions)
    try:

        def attempts() -> int:
            with sessions() as s:
                row = s.query(OutboxDelivery).filter_by(target_id=subscribed[0], event_type="submission.received").one()
                s.commit()
                return row.attempts

        wait_for(lambda: deliverer.run_once() >= 0 and attempts() >= 2, 30, "failed tries while the receiver is down")
        hooks["subscribed"].start()
        wait_for(lambda: deliverer.run_once() >= 0 and hooks["subscribed"].entries(), 30, "the received event")
        _grade(sessions, sid)
        wait_for(
            lambda: (
                deliverer.run_once() >= 0 and len(hooks["subscribed"].entries()) >= 2 and hooks["grades_only"].entries()
            ),
            30,
            "the grade events",
        )
        for _ in range(5):  # nothing more is due: no second copy
            deliverer.run_once()
    finally:
        deliverer.stop.set()
        deliverer.pool.shutdown(wait=True)

    got = hooks["subscribed"].entries()
    assert [(e["type"], e["submission_id"], e["valid"], e["signatures"]) for e in got] == [
        ("submission.received", sid, True, 1),
        ("grade.stored", sid, True, 1),
    ]
    assert got[0]["webhook_id"] != got[1]["webhook_id"] and got[0]["scores"]["score"] is None
    assert got[0]["learner"] == {"issuer": "titangrade", "subject": "alice"}
    assert [e["type"] for e in hooks["grades_only"].entries()] == ["grade.stored"]
    assert hooks["elsewhere"].entries() == []
    with sessions() as s:
        received = s.query(OutboxDelivery).filter_by(event_type="submission.received").all()
        assert [(d.target_id, d.status, d.attempts >= 3) for d in received] == [(subscribed[0], "delivered", True)]
