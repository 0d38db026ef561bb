"""Standard Webhooks signing with the `standardwebhooks` library: secrets, and the three headers.

During a rotation a message carries one `v1,` signature per live secret (space-separated), so a receiver
verifying with either the old or the new secret accepts it.
"""

from __future__ import annotations

import base64
import datetime as dt
import secrets
from collections.abc import Sequence

from standardwebhooks import Webhook

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32  # the spec asks for 24-64 random bytes


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def valid_secret(secret: str) -> bool:
    """A receiver-supplied secret must be whsec_ + base64 of 24-64 bytes."""
    if not secret.startswith(SECRET_PREFIX):
        return False
    try:
        raw = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except ValueError:
        return False
    return 24 <= len(raw) <= 64


def live_secrets(
    secret: str, previous: str | None, previous_expires_at: dt.datetime | None, now: dt.datetime
) -> list[str]:
    """The current secret, plus the previous one while its overlap lasts (naive UTC times)."""
    keep_previous = previous and previous_expires_at is not None and previous_expires_at > now
    return [secret, previous] if keep_previous else [secret]  # type: ignore[list-item]


def headers(*, message_id: str, body: str, secrets_: Sequence[str], at: dt.datetime) -> dict[str, str]:
    """webhook-id, webhook-timestamp (seconds) and webhook-signature for `body` sent at `at` (aware UTC)."""
    signatures = " ".join(Webhook(s).sign(message_id, at, body) for s in secrets_)
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": signatures,
        "content-type": "application/json",
    }
