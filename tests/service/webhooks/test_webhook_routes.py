"""The webhooks API of a course: instructors and admins only; the secret is shown once; the delivery log
and replay work over HTTP; bad input is a 4xx naming the problem."""
from __future__ import annotations

import pytest


def test_instructor_registers_lists_rotates_and_removes(api, svc):
    teacher = svc.auth(api.tokens["teacher"])
    made = api.post("/api/v1/courses/c1/webhooks", headers=teacher,
                    json={"url": "https://lms.example.edu/hook", "event_types": ["grade.stored", "grade.changed"],
                          "description": "gradebook sync"})
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["secret"].startswith("whsec_") and body["rotating"] is False
    listed = api.get("/api/v1/courses/c1/webhooks", headers=teacher).json()
    assert [e["id"] for e in listed] == [body["id"]] and "secret" not in listed[0]
    rotated = api.post(f"/api/v1/courses/c1/webhooks/{body['id']}/rotate", headers=teacher, json={}).json()
    assert rotated["secret"] != body["secret"] and rotated["rotating"] is True and rotated["previous_expires_at"]
    assert api.delete(f"/api/v1/courses/c1/webhooks/{body['id']}", headers=teacher).status_code == 204
    assert api.get("/api/v1/courses/c1/webhooks", headers=teacher).json() == []
    gone = api.post(f"/api/v1/courses/c1/webhooks/{body['id']}/rotate", headers=teacher, json={})
    assert gone.status_code == 404


@pytest.mark.parametrize("who,course,status", [("alice", "c1", 403), ("teacher", "c2", 403), ("root", "c2", 201)])
def test_only_the_course_staff_may_register(api, svc, who, course, status):
    resp = api.post(f"/api/v1/courses/{course}/webhooks", headers=svc.auth(api.tokens[who]),
                    json={"url": "https://lms.example.edu/hook", "event_types": ["grade.stored"]})
    assert resp.status_code == status, resp.text


@pytest.mark.parametrize("payload,code", [
    ({"url": "https://x.example/h", "event_types": ["grade.deleted"]}, "invalid_event_types"),
    ({"url": "ftp://x.example/h", "event_types": ["grade.stored"]}, "endpoint_refused"),
    ({"url": "https://x.example/h", "event_types": ["grade.stored"], "secret": "plain"}, "invalid_secret"),
    ({"url": "https://x.example/h", "event_types": []}, "invalid_request"),
])
def test_bad_registrations_are_422_naming_the_problem(api, svc, payload, code):
    resp = api.post("/api/v1/courses/c1/webhooks", headers=svc.auth(api.tokens["teacher"]), json=payload)
    assert resp.status_code == 422 and resp.json()["error"]["code"] == code, resp.text


def test_delivery_log_and_replay_over_http(api, svc, receivers, store_grade, wait_for):
    from service.wiring import build_deliverer

    teacher = svc.auth(api.tokens["teacher"])
    sessions = api.app_state.sessions
    secret = "whsec_" + "Q" * 43 + "="
    recv = receivers([secret]).start()
    made = api.post("/api/v1/courses/c1/webhooks", headers=teacher,
                    json={"url": recv.url, "event_types": ["grade.stored"], "secret": secret}).json()
    store_grade(sessions)
    deliverer = build_deliverer(api.app_state.settings, sessions=sessions)
    wait_for(lambda: deliverer.run_once() == 0 and recv.entries(), 20, "a delivery")
    log = api.get(f"/api/v1/courses/c1/webhooks/{made['id']}/deliveries", headers=teacher).json()["items"]
    assert len(log) == 1 and log[0]["status"] == "delivered" and log[0]["webhook_id"] == recv.entries()[0]["webhook_id"]
    assert log[0]["log"][0]["status_code"] == 204 and log[0]["log"][0]["latency_ms"] > 0
    replayed = api.post(f"/api/v1/courses/c1/webhooks/{made['id']}/replay", headers=teacher,
                        json={"event_id": log[0]["event_id"]})
    assert replayed.status_code == 202 and replayed.json()["queued"] == 1
    wait_for(lambda: deliverer.run_once() == 0 and len(recv.entries()) == 2, 20, "the replay")
    assert recv.entries()[0]["webhook_id"] == recv.entries()[1]["webhook_id"]  # same id: receivers deduplicate
    ranged = api.post(f"/api/v1/courses/c1/webhooks/{made['id']}/replay", headers=teacher,
                      json={"since": "2000-01-01T00:00:00Z"})
    assert ranged.json()["queued"] == 1
    empty = api.post(f"/api/v1/courses/c1/webhooks/{made['id']}/replay", headers=teacher, json={})
    assert empty.status_code == 422 and empty.json()["error"]["code"] == "replay_unspecified"
    dead = api.get(f"/api/v1/courses/c1/webhooks/{made['id']}/deliveries?status=dead", headers=teacher).json()
    assert dead["items"] == []
