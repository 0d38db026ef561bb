"""Where deliveries may go: in prod mode private, loopback and link-local endpoints are refused at
registration and at connection time (unless allow-listed), redirects are not followed, and response
bodies are read only up to a bound."""
from __future__ import annotations

import datetime as dt

import pytest


def _policy(svc, db="sqlite:////nonexistent.db", **kw):
    from service.outbox.ssrf import AddressPolicy

    return AddressPolicy.from_settings(svc.settings(db, mode="prod", sandbox="bwrap", **kw))


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/h", "http://localhost/h", "http://10.0.0.5/h",
                                 "http://192.168.1.1/h", "http://169.254.169.254/latest/meta-data",
                                 "http://[::1]/h", "http://[fe80::1]/h", "http://0.0.0.0/h", "http://172.16.3.4/h",
                                 "http://[::ffff:127.0.0.1]/h"])
def test_prod_refuses_non_public_addresses_at_registration(svc, url):
    from service.outbox.ssrf import EndpointRefused, check_url

    with pytest.raises(EndpointRefused, match="TITANGRADE_WEBHOOK_ALLOWED_HOSTS"):
        check_url(url, _policy(svc))


def test_allow_list_by_host_or_network_and_dev_mode_allow_private(svc):
    from service.outbox.ssrf import AddressPolicy, EndpointRefused, check_url

    allowed = _policy(svc, webhook_allowed_hosts="localhost, 10.0.0.0/8")
    assert check_url("http://localhost:9/h", allowed) and check_url("http://10.2.3.4/h", allowed)
    with pytest.raises(EndpointRefused):
        check_url("http://192.168.0.1/h", allowed)
    dev = AddressPolicy.from_settings(svc.settings("sqlite:////nonexistent.db"))
    assert not dev.enforce and check_url("http://127.0.0.1/h", dev)
    for bad in ("ftp://example.com/x", "http:///nohost", "http://user:pw@example.com/h", "file:///etc/passwd"):
        with pytest.raises(EndpointRefused):
            check_url(bad, dev)


def test_the_api_refuses_a_private_endpoint_in_prod_mode(db_url, test_catalogue, svc):
    from fastapi.testclient import TestClient

    from service.app import create_app

    app = create_app(svc.settings(db_url, mode="prod", sandbox="bwrap"), catalogue=test_catalogue)
    tokens = svc.tokens(app.state.sessions)
    with TestClient(app) as client:
        resp = client.post("/api/v1/courses/c1/webhooks", headers=svc.auth(tokens["teacher"]),
                           json={"url": "http://169.254.169.254/latest", "event_types": ["grade.stored"]})
    app.state.engine.dispose()
    assert resp.status_code == 422 and resp.json()["error"]["code"] == "endpoint_refused", resp.text


def test_delivery_time_check_refuses_an_address_that_became_private(db_url, sessions, svc, receivers, store_grade,
                                                                    wait_for):
    """Registered while allowed (here: dev mode, standing in for a DNS answer that later changes), the
    endpoint is refused when the prod-mode delivery loop connects: the receiver never hears from it."""
    from service.db import transaction
    from service.webhooks import service
    from service.wiring import build_deliverer
    from service.outbox.models import DeliveryAttempt
    from service.outbox.ssrf import AddressPolicy

    with transaction(sessions) as s:
        row = service.create(s, course="c1", url="http://placeholder.invalid/h", event_types=["grade.stored"],
                             policy=AddressPolicy(enforce=False))
        secret, endpoint_id = row.secret, row.id
    recv = receivers([secret]).start()
    with transaction(sessions) as s:
        from service.webhooks.models import WebhookEndpoint
        s.get(WebhookEndpoint, endpoint_id).url = recv.url.replace("127.0.0.1", "localhost")
    store_grade(sessions)
    deliverer = build_deliverer(svc.settings(db_url, mode="prod", sandbox="bwrap", webhook_retry_base_s=5.0),
                                sessions=sessions)
    assert deliverer.run_once() == 1
    with sessions() as s:
        attempt = s.query(DeliveryAttempt).one()
        s.commit()
    assert attempt.status_code is None and "refused" in attempt.error and "loopback" in attempt.error
    assert recv.entries() == []


def test_redirects_are_not_followed_and_bodies_are_bounded(db_url, sessions, svc, receivers, store_grade):
    from service.db import transaction
    from service.webhooks import service
    from service.wiring import build_deliverer
    from service.outbox.models import DeliveryAttempt
    from service.webhooks.models import WebhookEndpoint
    from service.webhooks.sender import EXCERPT_BYTES
    from service.outbox.ssrf import AddressPolicy

    with transaction(sessions) as s:
        row = service.create(s, course="c1", url="http://placeholder.invalid/h", event_types=["grade.stored"],
                             policy=AddressPolicy(enforce=False))
        secret, endpoint_id = row.secret, row.id
    target = receivers([secret]).start()
    bouncer = receivers([secret], redirect=target.url).start()
    with transaction(sessions) as s:
        s.get(WebhookEndpoint, endpoint_id).url = bouncer.url
    store_grade(sessions)
    deliverer = build_deliverer(svc.settings(db_url, webhook_retry_base_s=5.0), sessions=sessions)
    assert deliverer.run_once() == 1
    with sessions() as s:
        attempt = s.query(DeliveryAttempt).one()
        s.commit()
    assert attempt.status_code == 302 and "redirects are not followed" in attempt.error
    assert len(bouncer.entries()) == 1 and target.entries() == []
    assert attempt.started_at <= dt.datetime.now(dt.UTC).replace(tzinfo=None)
    # a receiver answering 200 MB: the attempt reads EXCERPT_BYTES and hangs up
    chatty = receivers([secret], status=200, body_bytes=200 * 1024 * 1024).start()
    with transaction(sessions) as s:
        s.get(WebhookEndpoint, endpoint_id).url = chatty.url
    store_grade(sessions)
    assert deliverer.run_once() == 1
    with sessions() as s:
        last = s.query(DeliveryAttempt).order_by(DeliveryAttempt.id.desc()).first()
        s.commit()
    assert last.ok and last.status_code == 200 and len(last.response_excerpt) == EXCERPT_BYTES
    assert last.latency_ms < 5000
