"""The outage test: the receiver is down while 200 grades are stored, the service (`titangrade serve`,
whose delivery loop sends webhooks) is killed and restarted during the outage, then the receiver comes
back. Every event arrives with a valid signature, none is lost, and any duplicate carries the same
webhook-id. SQLite and PostgreSQL; the retry schedule is shortened by settings."""
from __future__ import annotations

import signal
import time

import pytest
from sqlalchemy import func, select

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
GRADES = 200


def _store_many(sessions, add_submission, n: int) -> None:
    """n submissions graded through the queue's claim, fenced complete and record_grade (what grading writes)."""
    from service.db import transaction
    from grading.result import GradeResult, Status
    from service.grades.service import record_grade
    from service.queue import service as queue

    with transaction(sessions) as s:
        for i in range(n):
            add_submission(s, user=f"learner{i % 40}")
    for _ in range(n):
        with transaction(sessions) as s:
            job = queue.claim(s, worker_id="outage-test", lanes=("short",), free_devices=0, max_world_size=1,
                              lease_s=60)
            assert queue.complete(s, job=job)
            record_grade(s, submission_id=job.submission_id,
                         result=GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0))


def _counts(sessions) -> dict[str, int]:
    from service.outbox.models import DeliveryAttempt, OutboxDelivery

    with sessions() as s:
        by_status = dict(s.execute(select(OutboxDelivery.status, func.count()).group_by(OutboxDelivery.status)).all())
        by_status["attempts"] = s.scalar(select(func.count()).select_from(DeliveryAttempt))
        by_status["failed_attempts"] = s.scalar(select(func.count()).select_from(DeliveryAttempt)
                                                .where(DeliveryAttempt.ok.is_(False)))
        s.commit()
    return by_status


def test_receiver_outage_with_a_service_restart_loses_nothing(db_url, sessions, add_submission, receivers, e2e,
                                                              tmp_path, wait_for):
    from service.db import transaction
    from service.outbox.models import OutboxEvent
    from service.webhooks import service
    from service.outbox.ssrf import AddressPolicy

    recv = receivers(["whsec_placeholder0000000000000000000000000000000000="])
    with transaction(sessions) as s:
        row = service.create(s, course="c1", url=recv.url, event_types=["grade.stored"],
                             policy=AddressPolicy(enforce=False))
        recv.secrets = [row.secret]
    env = e2e.service_env(db_url, e2e.CATALOGUE_DIR, TITANGRADE_WEBHOOK_RETRY_BASE_S="0.2",
                          TITANGRADE_WEBHOOK_RETRY_MAX_DELAY_S="1.0", TITANGRADE_WEBHOOK_RETRY_WINDOW_S="600",
                          TITANGRADE_WEBHOOK_POLL_S="0.1", TITANGRADE_WEBHOOK_LEASE_S="2",
                          TITANGRADE_WEBHOOK_TIMEOUT_S="2")
    first = e2e.Server(env, tmp_path / "serve-1.log", workers=0)
    try:
        _store_many(sessions, add_submission, GRADES)
        wait_for(lambda: _counts(sessions).get("failed_attempts", 0) >= GRADES, 60, "failed attempts during the outage")
    finally:
        first.kill(signal.SIGKILL)  # a crash, mid-round: claimed deliveries keep their lease until it expires
    during = _counts(sessions)
    second = e2e.Server(env, tmp_path / "serve-2.log", workers=0)
    try:
        time.sleep(1.0)  # the restarted loop keeps failing for a moment; then the receiver is back
        recv.start()
        back = time.monotonic()
        wait_for(lambda: _counts(sessions).get("delivered", 0) == GRADES, 120, "every delivery")
        recovered_s = time.monotonic() - back
    finally:
        second.kill(signal.SIGTERM)
    with sessions() as s:
        events = {e.id: e.submission_id for e in s.scalars(select(OutboxEvent))}
        s.commit()
    entries = recv.entries()
    assert len(events) == GRADES
    assert all(e["valid"] for e in entries), [e for e in entries if not e["valid"]][:3]
    assert {e["event_id"] for e in entries} == set(events)  # none lost
    ids_per_event: dict[int, set[str]] = {}
    for e in entries:
        ids_per_event.setdefault(e["event_id"], set()).add(e["webhook_id"])
    assert all(len(ids) == 1 for ids in ids_per_event.values())  # duplicates only as the same webhook-id
    assert len({e["webhook_id"] for e in entries}) == GRADES
    assert {e["submission_id"] for e in entries} == set(events.values())
    final = _counts(sessions)
    print(f"\noutage figures ({db_url.split(':')[0]}): {GRADES} events, {during['failed_attempts']} failed attempts "
          f"before the restart, {final['failed_attempts']} in all, {len(entries)} received "
          f"({len(entries) - GRADES} duplicates), all delivered {recovered_s:.2f} s after the receiver came back")
