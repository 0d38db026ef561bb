"""The webhook signature headers: one signature per live secret (rotation overlap), each verifies."""

from __future__ import annotations

import datetime as dt

from standardwebhooks import Webhook


def test_headers_carry_one_signature_per_live_secret_and_each_verifies():
    from service.webhooks import signing

    old, new = signing.new_secret(), signing.new_secret()
    now = dt.datetime(2026, 11, 30, 12)
    assert signing.live_secrets(new, old, now + dt.timedelta(hours=1), now) == [new, old]
    assert signing.live_secrets(new, old, now - dt.timedelta(seconds=1), now) == [new]
    at = dt.datetime.now(dt.UTC)
    headers = signing.headers(message_id="msg_1", body='{"a":1}', secrets_=[new, old], at=at)
    assert len(headers["webhook-signature"].split()) == 2 and headers["webhook-timestamp"] == str(int(at.timestamp()))
    for secret in (old, new):
        assert Webhook(secret).verify('{"a":1}', headers) == {"a": 1}
    assert signing.valid_secret(new) and not signing.valid_secret("whsec_c2hvcnQ=") and not signing.valid_secret("x")
