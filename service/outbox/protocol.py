"""What a kind of outbox target plugs in: a `TargetSource` (who wants an event, and the exact body) and a
`Sender` (prepare a claimed delivery, send it, say how it went as a `DeliveryResult`).

Webhook endpoints (service/webhooks) and LTI line items (service/lti/ags.py) implement both; the loop
(service/outbox/delivery.py) knows only these protocols, so claiming, retries, dead-lettering and replay
are shared by every kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy.orm import Session

from service.outbox.models import OutboxDelivery, OutboxEvent


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryResult:
    """What one attempt came to; `ok` only for a 2xx. `gone`: the receiver said the target no longer exists
    (HTTP 410), so retrying is pointless: the target is disabled and its deliveries are held."""

    ok: bool
    status_code: int | None
    latency_ms: float
    error: str = ""
    excerpt: str = ""
    gone: bool = False
    dropped: bool = False  # not sent: the sender's `prepare` answered a `Drop`


@dataclass(frozen=True, slots=True, kw_only=True)
class Drop:
    """What `Sender.prepare` answers for a delivery that must not be sent at all (it was overtaken by a later
    one to the same target); the loop records it as `dropped` with `reason`, without calling `send`."""

    reason: str


class TargetSource(Protocol):
    """Which targets of `kind` want an event, and the body each is sent. A source may also define
    `accepts(*, event, target_id, learner) -> bool`, a finer filter (LTI: the exercise and the issuer), and
    `interest(*, event_type) -> Select | None`, who would get an event about a new submission before its
    outbox row is written (service/outbox/receivers.py)."""

    kind: str

    def targets(self, session: Session, *, course: str, event_type: str) -> list[int]: ...

    def body(self, *, event: OutboxEvent, event_type: str, target_id: int, learner: dict | None) -> str: ...


class Sender(Protocol):
    """Sends the deliveries of one `kind`: `prepare` runs in the claim's transaction (None = the target is
    gone, a `Drop` = never send this one), `send` outside any transaction."""

    kind: str

    def prepare(self, session: Session, delivery: OutboxDelivery) -> Any | None: ...

    def send(self, work: Any) -> DeliveryResult: ...
