"""The delivery loop: fan out new outbox rows, claim due deliveries with a lease, send them, log each try.

At-least-once: a delivery is marked delivered only after a 2xx, so a loop killed mid-send leaves it
pending and another loop (or the restarted one) sends it again after the lease, with the same webhook-id.
Failures retry on an exponential schedule with jitter until `webhook_retry_window_s` has passed since
the first try, then the delivery is dead-lettered (replay revives it). An answer that says the target is
gone for good (410 Gone, as Standard Webhooks advises) disables the target instead: its deliveries are held
until an instructor re-enables it. A sender may also drop a delivery it finds overtaken (`Drop`: LTI's
"Pending" score once a later score is on its way): it is recorded as dropped and never sent. Senders are
chosen by `target_kind` (service/outbox/protocol.py); which senders and sources a loop has is decided in
service/wiring.py.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from service.db import transaction, utcnow
from service.outage import Retrier
from service.outbox.models import DeliveryAttempt, DeliveryStatus, OutboxDelivery
from service.outbox.protocol import DeliveryResult, Drop, Sender, TargetSource
from service.outbox.targets import fan_out

log = logging.getLogger("titangrade.webhooks")
ERROR_CHARS = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class Claimed:
    delivery_id: int
    lease_token: str
    attempt: int
    target_kind: str
    work: Any  # what the sender prepared (e.g. URL, secrets, body); None = the target is gone


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    base_s: float
    max_delay_s: float
    window_s: float

    @classmethod
    def from_settings(cls, settings) -> RetryPolicy:
        return cls(
            base_s=settings.webhook_retry_base_s,
            max_delay_s=settings.webhook_retry_max_delay_s,
            window_s=settings.webhook_retry_window_s,
        )

    def delay_s(self, attempt: int, rng: Callable[[float, float], float] = random.uniform) -> float:
        """Delay after failed try number `attempt` (1-based): base * 2^(n-1), capped, times a 0.5-1.0 jitter."""
        return min(self.base_s * 2 ** min(attempt - 1, 60), self.max_delay_s) * rng(0.5, 1.0)


def claim(session: Session, *, limit: int, lease_s: float, senders: Mapping[str, Sender]) -> list[Claimed]:
    """Take up to `limit` due deliveries under a lease; the caller's transaction commits the claim."""
    now = utcnow()
    stmt = (
        select(OutboxDelivery)
        .where(
            OutboxDelivery.status == "pending",
            OutboxDelivery.next_attempt_at <= now,
            OutboxDelivery.target_kind.in_(list(senders)),  # kinds this loop can send
            or_(OutboxDelivery.lease_expires_at.is_(None), OutboxDelivery.lease_expires_at < now),
        )
        .order_by(OutboxDelivery.next_attempt_at, OutboxDelivery.id)
        .limit(limit)
    )
    if session.get_bind().dialect.name == "postgresql":
        stmt = stmt.with_for_update(skip_locked=True)
    claimed = []
    for row in session.scalars(stmt):
        sender = senders[row.target_kind]
        row.lease_token = uuid.uuid4().hex
        row.lease_expires_at = now + dt.timedelta(seconds=lease_s)
        if row.window_started_at is None:
            row.window_started_at = now
        work = sender.prepare(session, row)
        claimed.append(
            Claimed(
                delivery_id=row.id,
                lease_token=row.lease_token,
                attempt=row.attempts + 1,
                target_kind=row.target_kind,
                work=work,
            )
        )
    return claimed


def record(
    session: Session,
    *,
    job: Claimed,
    result: DeliveryResult,
    policy: RetryPolicy,
    started_at: dt.datetime,
    rng: Callable[[float, float], float] = random.uniform,
) -> str | None:
    """Log the attempt and move the delivery on (delivered, retry later, or dead); None if the lease was lost."""
    row = session.get(OutboxDelivery, job.delivery_id)
    if row is None or row.lease_token != job.lease_token or row.status != "pending":
        return None
    now = utcnow()
    session.add(
        DeliveryAttempt(
            delivery_id=row.id,
            attempt=job.attempt,
            started_at=started_at,
            status_code=result.status_code,
            latency_ms=round(result.latency_ms, 2),
            ok=result.ok,
            error=result.error[:ERROR_CHARS],
            response_excerpt=result.excerpt,
        )
    )
    row.attempts = job.attempt
    row.lease_token, row.lease_expires_at = None, None
    if result.ok:
        row.status, row.delivered_at, row.last_error = "delivered", now, ""
        return row.status
    if result.dropped:
        row.status, row.last_error = DeliveryStatus.DROPPED.value, result.error[:ERROR_CHARS]
        return row.status
    row.last_error = (result.error or f"HTTP {result.status_code}")[:ERROR_CHARS]
    if result.gone and job.work is not None:
        hold_target(session, kind=row.target_kind, target_id=row.target_id, reason=row.last_error)
        row.status = DeliveryStatus.DISABLED.value
        log.warning("%s target %s answered gone; disabled: %s", row.target_kind, row.target_id, row.last_error)
        return row.status
    started = row.window_started_at or now
    if job.work is None or (now - started).total_seconds() >= policy.window_s:
        row.status = "dead"
    else:
        row.next_attempt_at = now + dt.timedelta(seconds=policy.delay_s(job.attempt, rng))
    return row.status


def hold_target(session: Session, *, kind: str, target_id: int, reason: str) -> int:
    """Disable a target: every pending delivery to it is held (status disabled, with the reason) until it is
    re-enabled. A delivery claimed by another loop right now loses its lease and is resent on re-enabling."""
    result = session.execute(
        update(OutboxDelivery)
        .where(
            OutboxDelivery.target_kind == kind,
            OutboxDelivery.target_id == target_id,
            OutboxDelivery.status == DeliveryStatus.PENDING.value,
        )
        .values(status=DeliveryStatus.DISABLED.value, last_error=reason, lease_token=None, lease_expires_at=None)
        .execution_options(synchronize_session="fetch")
    )
    return int(getattr(result, "rowcount", 0) or 0)


class Deliverer:
    """One delivery loop: `run()` until `stop` is set (inside `serve`, or `titangrade webhooks deliver`)."""

    def __init__(
        self,
        *,
        sessions: sessionmaker[Session],
        settings,
        senders: Sequence[Sender],
        sources: Sequence[TargetSource],
    ) -> None:
        self.sessions = sessions
        self.settings = settings
        self.senders = {s.kind: s for s in senders}
        self.sources = list(sources)
        self.policy = RetryPolicy.from_settings(settings)
        self.stop = threading.Event()
        self.pool = ThreadPoolExecutor(max_workers=settings.webhook_concurrency, thread_name_prefix="tg-deliver")

    def run_once(self) -> int:
        """One round: fan out, claim a batch, send it concurrently, record; returns deliveries attempted."""
        with transaction(self.sessions) as s:
            fan_out(s, sources=self.sources)
        with transaction(self.sessions) as s:
            jobs = claim(
                s, limit=self.settings.webhook_batch, lease_s=self.settings.webhook_lease_s, senders=self.senders
            )
        if not jobs:
            return 0
        started = utcnow()
        results = list(self.pool.map(self._send, jobs))
        with transaction(self.sessions) as s:
            # one SELECT for the batch; record()'s session.get then finds each row in the identity map
            s.scalars(select(OutboxDelivery).where(OutboxDelivery.id.in_([j.delivery_id for j in jobs]))).all()
            for job, result in zip(jobs, results, strict=True):
                record(s, job=job, result=result, policy=self.policy, started_at=started)
        return len(jobs)

    def _send(self, job: Claimed) -> DeliveryResult:
        if job.work is None:
            return DeliveryResult(ok=False, status_code=None, latency_ms=0.0, error="the target was removed")
        if isinstance(job.work, Drop):
            return DeliveryResult(ok=False, status_code=None, latency_ms=0.0, error=job.work.reason, dropped=True)
        try:
            return self.senders[job.target_kind].send(job.work)
        except Exception as exc:  # a sender bug must not stop the loop; it is logged as a failed attempt
            log.exception("delivery %s: sender failed", job.delivery_id)
            return DeliveryResult(
                ok=False, status_code=None, latency_ms=0.0, error=f"sender error: {type(exc).__name__}"
            )

    def run(self, *, burst: bool = False) -> None:
        """Loop until stopped; with `burst`, return once nothing is due."""
        retry = Retrier.from_settings(self.settings, who="webhook delivery", log=log, resumes="deliveries go on")
        while not self.stop.is_set():
            try:
                done = self.run_once()
            except Exception as exc:  # an outage is waited out (service/outage.py); the loop stays alive
                if not burst:
                    self.stop.wait(retry.failed(exc, doing="delivering"))
                    continue
                log.exception("delivery round failed")
                done = 0
            else:
                retry.succeeded()
            if done == 0:
                if burst:
                    break
                self.stop.wait(self.settings.webhook_poll_s)
        self.pool.shutdown(wait=True)


def wait_until_idle(deliverer: Deliverer, timeout_s: float) -> bool:
    """Run rounds until nothing is due (tests and the burst command); False on timeout."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if deliverer.run_once() == 0:
            return True
    return False
