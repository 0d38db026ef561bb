"""The LMS loop end to end over real HTTP: an LMS posts a signed submission to `titangrade serve`, a real
kernel grades it, an override follows, and the receiver process gets grade.stored then grade.changed for
that learner (issuer + subject), each with a valid signature."""
from __future__ import annotations

import datetime as dt
import json
import signal
import uuid

import httpx
import pytest
from standardwebhooks import Webhook

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]


def test_signed_intake_is_graded_and_the_grade_events_reach_the_lms(module_db_url, e2e, svc, receivers, tmp_path,
                                                                    wait_for):
    from service.auth.service import create_token
    from service.db import transaction
    from service.intake import service as intake
    from service.webhooks import service as webhooks
    from service.outbox.ssrf import AddressPolicy

    sessions = e2e.sessions_for(module_db_url)
    course = f"lms-{uuid.uuid4().hex[:6]}"
    with transaction(sessions) as s:
        integration = intake.create(s, name=course, course=course, issuer="https://canvas.example.edu", linked_by="root")
        name, intake_secret = integration.name, integration.secret
        endpoint = webhooks.create(s, course=course, url="http://placeholder.invalid/h",
                                   event_types=["grade.stored", "grade.changed"], policy=AddressPolicy(enforce=False))
        hook_secret, endpoint_id = endpoint.secret, endpoint.id
        teacher = create_token(s, user=f"t-{course}", role="instructor", course=course)
    recv = receivers([hook_secret]).start()
    with transaction(sessions) as s:
        from service.webhooks.models import WebhookEndpoint
        s.get(WebhookEndpoint, endpoint_id).url = recv.url
    server = e2e.Server(e2e.service_env(module_db_url, e2e.CATALOGUE_DIR, TITANGRADE_WEBHOOK_POLL_S="0.1"),
                        tmp_path / "serve.log", workers=1)
    try:
        raw = json.dumps({"learner": {"subject": "u-77"}, "exercise_id": "ch05.svc_sum",
                          "notebook": json.loads(svc.notebook())}).encode()
        at, msg = dt.datetime.now(dt.UTC), "msg_" + uuid.uuid4().hex
        headers = {"webhook-id": msg, "webhook-timestamp": str(int(at.timestamp())),
                   "webhook-signature": Webhook(intake_secret).sign(msg, at, raw.decode()),
                   "content-type": "application/json"}
        resp = httpx.post(f"{server.url}/api/v1/intake/submissions?integration={name}", content=raw, headers=headers,
                          timeout=30)
        assert resp.status_code == 202, resp.text
        sid = resp.json()["id"]
        graded = e2e.final(server.url, teacher, sid, proc=server)
        assert (graded["status"], graded["score"]) == ("graded", 3.0)
        first = wait_for(lambda: recv.entries(), 30, "grade.stored at the receiver")
        override = httpx.post(f"{server.url}/api/v1/submissions/{sid}/override", headers=svc.auth(teacher),
                              json={"score": 2.0, "reason": "late by a day"}, timeout=30)
        assert override.status_code == 200, override.text
        entries = wait_for(lambda: len(recv.entries()) >= 2 and recv.entries(), 30, "grade.changed at the receiver")
    finally:
        server.kill(signal.SIGTERM)
        sessions.kw["bind"].dispose()
    assert first[0]["type"] == "grade.stored" and first[0]["submission_id"] == sid
    assert [e["type"] for e in entries] == ["grade.stored", "grade.changed"] and all(e["valid"] for e in entries)
    assert entries[0]["learner"] == {"issuer": "https://canvas.example.edu", "subject": "u-77"}
    assert entries[0]["webhook_id"] != entries[1]["webhook_id"]
