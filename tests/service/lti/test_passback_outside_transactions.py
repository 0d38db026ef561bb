"""No network call inside a database transaction on the delivery paths either: one grade goes out as an AGS
score (token grant + score POST) and as a webhook, through the real delivery loop, to a real server on
loopback (lti_probe.ProbeServer) that checks, while it is called, that no connection of the engine is
checked out and (SQLite) that another writer gets the lock at once. SQLite and PostgreSQL."""
from __future__ import annotations


def test_ags_and_webhook_deliveries_hold_no_connection_while_they_send(db_url, db_engine, sessions, svc, tmp_path,
                                                                        add_submission):
    from lti_probe import CheckoutCounter, ProbeServer

    from service.db import transaction
    from grading.result import GradeResult, Status
    from service.grades.service import record_grade
    from service.lti import service as lti_service
    from service.lti.models import LtiLineItem
    from service.queue import service as queue
    from service.webhooks import service as webhooks
    from service.outbox.delivery import wait_until_idle
    from service.wiring import build_deliverer
    from service.outbox.ssrf import AddressPolicy

    settings = svc.settings(db_url, lti_key_dir=tmp_path / "keys")
    counter = CheckoutCounter(db_engine)
    probe = ProbeServer(counter=counter, sqlite_path=db_url.removeprefix("sqlite:///") if "sqlite" in db_url else None)
    deliverer = build_deliverer(settings, sessions=sessions)
    try:
        with transaction(sessions) as s:
            platform = lti_service.create(s, name="p", issuer="https://lms.example", client_id="c1",
                                          auth_login_url=probe.url + "/auth", auth_token_url=probe.url + "/token",
                                          keyset_url=probe.url + "/jwks", deployment_ids=["d1"])
            s.add(LtiLineItem(platform_id=platform.id, url=probe.url + "/lineitems/7", course="lti-pass",
                              exercise_id="ch05.svc_sum"))
            webhooks.create(s, course="lti-pass", url=probe.url + "/hook", event_types=["grade.stored"],
                            policy=AddressPolicy.from_settings(settings))
            sub, _ = add_submission(s, user="s-pass", course="lti-pass", issuer="https://lms.example")
        with transaction(sessions) as s:
            job = queue.claim(s, worker_id="t", lanes=("short",), free_devices=0, max_world_size=1, lease_s=60)
        with transaction(sessions) as s:
            assert queue.complete(s, job=job)
            record_grade(s, submission_id=sub.id, result=GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0))
        assert wait_until_idle(deliverer, 60)
        calls = {path: (out, free) for path, out, free in probe.seen}
        assert {"/token", "/lineitems/7/scores", "/hook"} <= set(calls), calls
        assert all(out == 0 for out, _ in calls.values()), f"connections checked out while sending: {calls}"
        assert all(free is not False for _, free in calls.values()), f"SQLite writer lock held: {calls}"
    finally:
        deliverer.pool.shutdown(wait=True)
        probe.stop()
        counter.close()
