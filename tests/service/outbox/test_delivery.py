"""The delivery loop against a real receiver process, on SQLite and PostgreSQL: signed events per type,
retries with an attempt log, dead-lettering after the window, replay, rotation, removed endpoints."""
from __future__ import annotations

import datetime as dt
import itertools

import pytest
from sqlalchemy import select

pytestmark = pytest.mark.timeout(120)


def _settings(db_url, svc, **kw):
    values = {"webhook_retry_base_s": 0.05, "webhook_retry_max_delay_s": 0.2, "webhook_retry_window_s": 30.0,
                  "webhook_timeout_s": 5.0, "webhook_poll_s": 0.05}
    values.update(kw)
    return svc.settings(db_url, **values)


def _endpoint(sessions, url, *, course="c1", types=("grade.stored", "grade.changed", "submission.not_gradable"),
              settings=None):
    from service.db import transaction
    from service.webhooks import service
    from service.outbox.ssrf import AddressPolicy

    with transaction(sessions) as s:
        row = service.create(s, course=course, url=url, event_types=list(types),
                             policy=AddressPolicy(enforce=False))
        return row.id, row.secret


def _deliverer(settings, sessions):
    from service.wiring import build_deliverer

    return build_deliverer(settings, sessions=sessions)


def _drain(deliverer, wait_for, until):
    """Run delivery rounds until `until()` holds (retries become due as time passes)."""
    def step():
        deliverer.run_once()
        return until()
    return wait_for(step, 30, "deliveries")


def _rows(sessions):
    from service.outbox.models import OutboxDelivery

    with sessions() as s:
        rows = list(s.scalars(select(OutboxDelivery).order_by(OutboxDelivery.id)))
        s.commit()
    return rows


def test_each_event_type_is_delivered_signed_with_learner_and_links(db_url, sessions, svc, receivers, store_grade,
                                                                    wait_for):
    from service.db import transaction
    from service.submissions.models import Submission

    settings = _settings(db_url, svc)
    endpoint_id, secret = _endpoint(sessions, "http://placeholder.invalid")
    recv = receivers([secret]).start()
    with transaction(sessions) as s:  # point the endpoint at the receiver
        from service.webhooks.models import WebhookEndpoint
        s.get(WebhookEndpoint, endpoint_id).url = recv.url
    other_course = _endpoint(sessions, recv.url, course="c2")[0]
    assert other_course
    first = store_grade(sessions, score=2.0)
    store_grade(sessions, submission_id=first, score=3.0)  # a regrade changes the grade
    broken = store_grade(sessions, status="not_gradable")
    with transaction(sessions) as s:  # an instructor override, through the real override verb
        from service.auth.principal import Principal
        from service.submissions import service as submissions
        teacher = Principal(identity_id=0, issuer="titangrade", subject="t", name="t", memberships={"c1": "instructor"})
        submissions.override(s, user=teacher, sub=s.get(Submission, first), score=1.5, reason="late penalty")
    deliverer = _deliverer(settings, sessions)
    entries = _drain(deliverer, wait_for, lambda: len(recv.entries()) >= 4 and recv.entries())
    entries.sort(key=lambda e: e["event_id"] or 0)  # sent concurrently: arrival order is not event order
    assert all(e["valid"] and e["signatures"] == 1 for e in entries), entries
    assert [e["type"] for e in entries] == ["grade.stored", "grade.changed", "submission.not_gradable",
                                            "grade.changed"]
    assert [e["submission_id"] for e in entries] == [first, first, broken, first]
    assert entries[0]["learner"] == {"issuer": "titangrade", "subject": "alice"}
    assert len({e["webhook_id"] for e in entries}) == 4  # one id per event
    rows = _rows(sessions)
    assert {r.status for r in rows} == {"delivered"} and len(rows) == 4  # nothing for course c2's endpoint
    assert all(r.target_id == endpoint_id for r in rows)


def test_failures_retry_on_a_growing_schedule_then_dead_letter_then_replay(db_url, sessions, svc, receivers,
                                                                           store_grade, wait_for):
    from service.db import transaction
    from service.webhooks import service
    from service.outbox.models import DeliveryAttempt
    from service.webhooks.models import WebhookEndpoint

    settings = _settings(db_url, svc, webhook_retry_window_s=1.0)
    failing = receivers(["whsec_" + "A" * 43 + "="], status=503)
    endpoint_id, secret = _endpoint(sessions, "http://127.0.0.1:1/hook")
    failing.secrets = [secret]
    failing.start()
    with transaction(sessions) as s:
        s.get(WebhookEndpoint, endpoint_id).url = failing.url
    sid = store_grade(sessions)
    deliverer = _deliverer(settings, sessions)
    _drain(deliverer, wait_for, lambda: _rows(sessions)[0].status == "dead" if _rows(sessions) else False)
    row = _rows(sessions)[0]
    with sessions() as s:
        log = list(s.scalars(select(DeliveryAttempt).where(DeliveryAttempt.delivery_id == row.id)
                             .order_by(DeliveryAttempt.id)))
        s.commit()
    assert len(log) >= 3 and row.attempts == len(log)
    assert all(a.status_code == 503 and not a.ok and a.error == "HTTP 503" and a.latency_ms > 0 for a in log)
    gaps = [(b.started_at - a.started_at).total_seconds() for a, b in itertools.pairwise(log)]
    assert gaps[-1] >= 0.05 * 0.5  # the schedule waits between tries
    # every try carried the same webhook-id, each validly signed
    seen = failing.entries()
    assert len(seen) == len(log) and {e["webhook_id"] for e in seen} == {row.message_id}
    assert all(e["valid"] for e in seen)
    # the receiver recovers; a replay of the event sends it again with the same webhook-id
    failing.stop()
    ok = receivers([secret], port=failing.port).start()
    with transaction(sessions) as s:
        ids = service.replay(s, endpoint=s.get(WebhookEndpoint, endpoint_id), event_id=row.event_id)
    assert ids == [row.id]
    _drain(deliverer, wait_for, lambda: _rows(sessions)[0].status == "delivered")
    assert [e["webhook_id"] for e in ok.entries() if e["valid"]][-1] == row.message_id
    assert sid


def test_replay_a_time_range_includes_events_from_before_the_endpoint(db_url, sessions, svc, receivers,
                                                                      store_grade, wait_for):
    from service.db import transaction
    from service.webhooks import service
    from service.webhooks.models import WebhookEndpoint

    settings = _settings(db_url, svc)
    before = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(seconds=5)
    early = [store_grade(sessions) for _ in range(3)]
    deliverer = _deliverer(settings, sessions)
    deliverer.run_once()  # fanned out with no endpoint: nothing to send
    assert _rows(sessions) == []
    endpoint_id, secret = _endpoint(sessions, "http://placeholder.invalid")
    recv = receivers([secret]).start()
    with transaction(sessions) as s:
        row = s.get(WebhookEndpoint, endpoint_id)
        row.url = recv.url
        assert len(service.replay(s, endpoint=row, since=before)) == 3
    _drain(deliverer, wait_for, lambda: len(recv.entries()) >= 3)
    assert sorted(e["submission_id"] for e in recv.entries()) == sorted(early)
    assert all(e["valid"] for e in recv.entries())


def test_rotation_sends_two_signatures_and_either_secret_verifies(db_url, sessions, svc, receivers, store_grade,
                                                                  wait_for):
    from service.db import transaction
    from service.webhooks import service
    from service.webhooks.models import WebhookEndpoint

    settings = _settings(db_url, svc)
    endpoint_id, old = _endpoint(sessions, "http://placeholder.invalid")
    with transaction(sessions) as s:
        row = s.get(WebhookEndpoint, endpoint_id)
        new = service.rotate(s, endpoint=row, overlap_s=3600)
    old_only, new_only = receivers([old]).start(), receivers([new]).start()
    for recv in (old_only, new_only):
        with transaction(sessions) as s:
            s.get(WebhookEndpoint, endpoint_id).url = recv.url
        store_grade(sessions)
        _drain(_deliverer(settings, sessions), wait_for, lambda r=recv: r.entries())
        assert [(e["valid"], e["signatures"]) for e in recv.entries()] == [(True, 2)]
    with transaction(sessions) as s:  # the overlap ends: one signature, the old secret no longer verifies
        s.get(WebhookEndpoint, endpoint_id).previous_expires_at = dt.datetime(2000, 1, 1)
        s.get(WebhookEndpoint, endpoint_id).url = old_only.url
    store_grade(sessions)
    _drain(_deliverer(settings, sessions), wait_for, lambda: len(old_only.entries()) >= 2)
    assert (old_only.entries()[-1]["valid"], old_only.entries()[-1]["signatures"]) == (False, 1)


def test_a_removed_endpoint_gets_nothing_and_its_pending_deliveries_die(db_url, sessions, svc, receivers,
                                                                         store_grade, wait_for):
    from service.db import transaction
    from service.webhooks import service
    from service.webhooks.models import WebhookEndpoint

    settings = _settings(db_url, svc)
    endpoint_id, secret = _endpoint(sessions, "http://placeholder.invalid")
    recv = receivers([secret]).start()
    store_grade(sessions)
    deliverer = _deliverer(settings, sessions)
    from service.outbox.targets import fan_out
    with transaction(sessions) as s:
        fan_out(s, sources=deliverer.sources)
        row = s.get(WebhookEndpoint, endpoint_id)
        row.url = recv.url
        service.remove(s, endpoint=row)
    _drain(deliverer, wait_for, lambda: _rows(sessions)[0].status == "dead")
    assert "removed" in _rows(sessions)[0].last_error and recv.entries() == []
