"""Signed intake over real HTTP (a live uvicorn server), SQLite and PostgreSQL: a correctly signed request
files a submission (202, links), a redelivery returns it (200), and every bad signature, stale timestamp
or foreign course/issuer is a 4xx with nothing stored."""
from __future__ import annotations

import datetime as dt
import json
import uuid

import httpx
import pytest
from sqlalchemy import func, select
from standardwebhooks import Webhook

INTAKE = "/api/v1/intake/submissions"


@pytest.fixture(scope="module")
def integration(live_api):
    from service.db import transaction
    from service.intake import service

    with transaction(live_api.app.state.sessions) as s:
        row = service.create(s, name=f"moodle-{uuid.uuid4().hex[:6]}", course="c1", issuer="https://moodle.example.edu",
                             linked_by="root")
        return {"id": row.id, "name": row.name, "secret": row.secret}


def _body(svc, *, subject="s-1001", **extra) -> bytes:
    body = {"learner": {"subject": subject, "name": "Li Wei"}, "course": "c1", "exercise_id": "ch05.svc_sum",
            "lang": "zh", "notebook": json.loads(svc.notebook())}
    body.update(extra)
    return json.dumps(body).encode()


def _signed(secret: str, raw: bytes, *, msg_id: str | None = None, at: dt.datetime | None = None) -> dict[str, str]:
    msg_id = msg_id or "msg_" + uuid.uuid4().hex
    at = at or dt.datetime.now(dt.UTC)
    return {"webhook-id": msg_id, "webhook-timestamp": str(int(at.timestamp())),
            "webhook-signature": Webhook(secret).sign(msg_id, at, raw.decode()), "content-type": "application/json"}


def _post(live, integration, raw, headers, name=None):
    return httpx.post(f"{live.url}{INTAKE}", params={"integration": name or integration["name"]}, content=raw,
                      headers=headers, timeout=30)


def _count(live) -> int:
    from service.submissions.models import Submission

    with live.app.state.sessions() as s:
        n = s.scalar(select(func.count()).select_from(Submission))
        s.commit()
    return n


def test_signed_submission_is_filed_for_the_vouched_learner_and_redelivery_is_idempotent(live_api, integration, svc):
    from service.auth.models import Identity
    from service.submissions.models import Submission

    raw = _body(svc)
    headers = _signed(integration["secret"], raw)
    resp = _post(live_api, integration, raw, headers)
    assert resp.status_code == 202, resp.text
    made = resp.json()
    assert made["links"]["self"] == f"/api/v1/submissions/{made['id']}" and made["course"] == "c1"
    with live_api.app.state.sessions() as s:
        sub = s.get(Submission, made["id"])
        who = s.get(Identity, sub.identity_id)
        assert (who.issuer, who.subject) == ("https://moodle.example.edu", "s-1001")
        assert (sub.lang, sub.status) == ("zh", "queued")
        s.commit()
    again = _post(live_api, integration, raw, _signed(integration["secret"], raw, msg_id=headers["webhook-id"]))
    assert again.status_code == 200 and again.json()["id"] == made["id"]
    other = _body(svc, subject="s-2002")
    reused = _post(live_api, integration, other, _signed(integration["secret"], other, msg_id=headers["webhook-id"]))
    assert reused.status_code == 422 and reused.json()["error"]["code"] == "idempotency_key_reused"
    # the filed submission is the learner's like any upload: an instructor token reads it
    teacher = httpx.get(f"{live_api.url}/api/v1/submissions/{made['id']}", headers=svc.auth(live_api.tokens["teacher"]))
    assert teacher.status_code == 200 and teacher.json()["user"] == "Li Wei"


@pytest.mark.parametrize("case", ["bad_signature", "wrong_secret", "stale", "future", "missing_headers",
                                  "tampered_body", "garbage_signature", "unknown_integration"])
def test_bad_signatures_and_stale_timestamps_are_401_and_store_nothing(live_api, integration, svc, case):
    raw = _body(svc, subject=f"neg-{case}")
    headers = _signed(integration["secret"], raw)
    name = None
    expected = "signature_invalid"
    if case == "bad_signature":
        headers["webhook-signature"] = "v1," + "A" * 43 + "="
    elif case == "wrong_secret":
        headers = _signed("whsec_" + "B" * 43 + "=", raw)
    elif case in ("stale", "future"):
        shift = dt.timedelta(minutes=-6 if case == "stale" else 6)
        headers = _signed(integration["secret"], raw, at=dt.datetime.now(dt.UTC) + shift)
        expected = "stale_timestamp"
    elif case == "missing_headers":
        del headers["webhook-signature"]
        expected = "signature_missing"
    elif case == "tampered_body":
        raw = raw.replace(b"neg-", b"NEG-", 1)
        assert b"NEG-" in raw
    elif case == "garbage_signature":
        headers["webhook-signature"] = "not-a-signature"
    elif case == "unknown_integration":
        name, expected = "no-such-lms", "unknown_integration"
    before = _count(live_api)
    resp = _post(live_api, integration, raw, headers, name=name)
    assert resp.status_code == 401, resp.text
    assert resp.json()["error"]["code"] == expected
    assert _count(live_api) == before


def test_invalid_bodies_and_foreign_course_or_issuer_are_4xx(live_api, integration, svc):
    cases = [(_body(svc, course="c2"), 403, "wrong_course"),
             (_body(svc, learner={"subject": "x", "issuer": "https://evil.example"}), 403, "wrong_issuer"),
             (_body(svc, notebook={"cells": "nope"}), 422, None),
             (json.dumps({"learner": {"subject": "y"}}).encode(), 422, "invalid_request"),
             (b"not json at all", 422, "invalid_request")]
    before = _count(live_api)
    for raw, status, code in cases:
        resp = _post(live_api, integration, raw, _signed(integration["secret"], raw))
        assert resp.status_code == status, (raw[:80], resp.text)
        if code:
            assert resp.json()["error"]["code"] == code
    assert _count(live_api) == before


def test_rotation_keeps_the_old_secret_valid_for_the_overlap(live_api, integration, svc):
    from service.db import transaction
    from service.intake import service
    from service.intake.models import IntakeIntegration

    with transaction(live_api.app.state.sessions) as s:
        new = service.rotate(s, integration=s.get(IntakeIntegration, integration["id"]), overlap_s=3600)
    for secret, subject in ((integration["secret"], "rot-old"), (new, "rot-new")):
        raw = _body(svc, subject=subject)
        assert _post(live_api, integration, raw, _signed(secret, raw)).status_code == 202
    with transaction(live_api.app.state.sessions) as s:
        s.get(IntakeIntegration, integration["id"]).previous_expires_at = dt.datetime(2000, 1, 1)
    raw = _body(svc, subject="rot-expired")
    assert _post(live_api, integration, raw, _signed(integration["secret"], raw)).status_code == 401
    integration["secret"] = new
