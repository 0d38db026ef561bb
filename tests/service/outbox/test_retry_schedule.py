"""The outbox's retry schedule (exponential, jittered, at least 24 h by default) and how an attempt is recorded."""
from __future__ import annotations

import datetime as dt


def _policy(**kw):
    from service.config import Settings
    from service.outbox.delivery import RetryPolicy

    return RetryPolicy.from_settings(Settings(**kw))


def test_default_schedule_doubles_with_jitter_is_capped_and_spans_at_least_24_hours():
    policy = _policy()
    low = [policy.delay_s(n, rng=lambda a, b: a) for n in range(1, 30)]
    high = [policy.delay_s(n, rng=lambda a, b: b) for n in range(1, 30)]
    assert high[:4] == [5.0, 10.0, 20.0, 40.0] and low[0] == 2.5  # base 5 s, x2 per try, jitter 0.5-1.0
    assert max(high) == 36000.0  # capped at 10 h
    # shortest possible schedule (every jitter at its low end): retries still run for the whole window
    elapsed, tries = 0.0, 0
    while elapsed < policy.window_s:
        tries += 1
        elapsed += low[min(tries, len(low)) - 1]
    assert policy.window_s >= 24 * 3600 and tries < 30
    import random

    rng = random.Random(7)
    samples = {round(policy.delay_s(3, rng=rng.uniform), 3) for _ in range(50)}
    assert len(samples) > 40 and min(samples) >= 10.0 and max(samples) <= 20.0  # jittered, within bounds


def test_record_dead_letters_only_after_the_window(db_url, sessions, store_grade):
    from service.config import Settings
    from service.db import transaction, utcnow
    from service.webhooks import service
    from service.outbox.delivery import Claimed, RetryPolicy, claim, record
    from service.outbox.protocol import DeliveryResult
    from service.outbox.models import OutboxDelivery
    from service.webhooks.sender import WebhookSender
    from service.outbox.ssrf import AddressPolicy
    from service.outbox.targets import fan_out
    from service.wiring import outbox_sources

    with transaction(sessions) as s:
        service.create(s, course="c1", url="http://127.0.0.1:9/h", event_types=["grade.stored"],
                       policy=AddressPolicy(enforce=False))
    store_grade(sessions)
    sender = WebhookSender.from_settings(Settings())
    policy = RetryPolicy(base_s=1.0, max_delay_s=4.0, window_s=3600.0)
    fail = DeliveryResult(ok=False, status_code=500, latency_ms=3.0, error="HTTP 500")
    with transaction(sessions) as s:
        fan_out(s, sources=outbox_sources())
        (job,) = claim(s, limit=10, lease_s=30, senders={"webhook": sender})
    with transaction(sessions) as s:  # inside the window: retried later
        assert record(s, job=job, result=fail, policy=policy, started_at=utcnow()) == "pending"
        row = s.get(OutboxDelivery, job.delivery_id)
        assert 0.4 <= (row.next_attempt_at - utcnow()).total_seconds() <= 1.0 and row.attempts == 1
        row.window_started_at = utcnow() - dt.timedelta(hours=2)
        row.next_attempt_at = utcnow()
    with transaction(sessions) as s:  # a second loop cannot take a leased delivery
        (job2,) = claim(s, limit=10, lease_s=30, senders={"webhook": sender})
        assert claim(s, limit=10, lease_s=30, senders={"webhook": sender}) == []
    stale = Claimed(delivery_id=job.delivery_id, lease_token="not-mine", attempt=2, target_kind="webhook", work=None)
    with transaction(sessions) as s:  # a loop whose lease was lost records nothing
        assert record(s, job=stale, result=fail, policy=policy, started_at=utcnow()) is None
    with transaction(sessions) as s:
        s.get(OutboxDelivery, job.delivery_id).window_started_at = utcnow() - dt.timedelta(hours=2)
        assert record(s, job=job2, result=fail, policy=policy, started_at=utcnow()) == "dead"
        assert s.get(OutboxDelivery, job.delivery_id).attempts == 2
