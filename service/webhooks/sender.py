"""The webhook sender (an outbox `Sender`): POST the stored body to the endpoint, signed with every live secret.

Each attempt gets a fresh webhook-timestamp (receivers reject stale ones) over the same webhook-id and
body. A 410 Gone disables the endpoint (service/outbox/delivery.hold_target). Redirects are not followed (a 3xx is a
failed attempt), the response body is read only up to
`EXCERPT_BYTES`, and the client checks every address it connects to (service/outbox/ssrf.py).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass

import httpx
from sqlalchemy.orm import Session

from service.db import utcnow
from service.outbox.models import OutboxDelivery
from service.outbox.protocol import DeliveryResult
from service.outbox.ssrf import AddressPolicy, make_client
from service.webhooks import signing
from service.webhooks.models import WebhookEndpoint

EXCERPT_BYTES = 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookWork:
    url: str
    message_id: str
    body: str
    secrets: tuple[str, ...]


class WebhookSender:
    kind = "webhook"

    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    @classmethod
    def from_settings(cls, settings) -> WebhookSender:
        return cls(
            make_client(
                AddressPolicy.from_settings(settings),
                timeout_s=settings.webhook_timeout_s,
                max_connections=settings.webhook_concurrency,
            )
        )

    def prepare(self, session: Session, delivery: OutboxDelivery) -> WebhookWork | None:
        endpoint = session.get(WebhookEndpoint, delivery.target_id)
        if endpoint is None or endpoint.removed_at is not None:
            return None
        live = signing.live_secrets(endpoint.secret, endpoint.previous_secret, endpoint.previous_expires_at, utcnow())
        return WebhookWork(url=endpoint.url, message_id=delivery.message_id, body=delivery.body, secrets=tuple(live))

    def send(self, work: WebhookWork) -> DeliveryResult:
        headers = signing.headers(
            message_id=work.message_id, body=work.body, secrets_=work.secrets, at=dt.datetime.now(dt.UTC)
        )
        start = time.perf_counter()
        try:
            with self.client.stream("POST", work.url, content=work.body.encode(), headers=headers) as resp:
                excerpt = _read_bounded(resp)
                status = resp.status_code
        except httpx.HTTPError as exc:
            return DeliveryResult(
                ok=False,
                status_code=None,
                latency_ms=(time.perf_counter() - start) * 1000,
                error=f"{type(exc).__name__}: {exc}",
            )
        latency = (time.perf_counter() - start) * 1000
        if 200 <= status < 300:
            return DeliveryResult(ok=True, status_code=status, latency_ms=latency, excerpt=excerpt)
        if status == 410:  # Standard Webhooks: 410 Gone means "stop sending", so retrying would be wrong
            error = (
                "HTTP 410 Gone: the receiver no longer accepts deliveries, so the endpoint was disabled; "
                "fix the receiver, then re-enable it (POST .../webhooks/{id}/enable or `titangrade webhooks enable`)"
            )
            return DeliveryResult(
                ok=False, status_code=status, latency_ms=latency, error=error, excerpt=excerpt, gone=True
            )
        error = f"HTTP {status}" + (
            " (redirects are not followed; register the final URL)" if 300 <= status < 400 else ""
        )
        return DeliveryResult(ok=False, status_code=status, latency_ms=latency, error=error, excerpt=excerpt)


def _read_bounded(resp: httpx.Response) -> str:
    """At most EXCERPT_BYTES of the body; the rest is never read (the connection is closed instead)."""
    got = b""
    for chunk in resp.iter_raw(EXCERPT_BYTES):
        got += chunk
        if len(got) >= EXCERPT_BYTES:
            break
    return got[:EXCERPT_BYTES].decode("utf-8", "replace")
