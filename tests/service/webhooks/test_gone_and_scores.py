"""A 410 Gone disables an endpoint (Standard Webhooks: stop sending) until staff re-enable it; a grade
event's `data.score` is the effective score, as the API's is; the delivery timeout is a validated setting.
All against a real receiver process, on SQLite and PostgreSQL."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(120)


def _idle(deliverer, wait_for, until=lambda: True):
    """Delivery rounds until nothing is due and `until()` holds."""
    wait_for(lambda: deliverer.run_once() == 0 and until(), 30, "the delivery loop to go idle")


def _endpoint(api, teacher, recv, secret):
    made = api.post("/api/v1/courses/c1/webhooks", headers=teacher,
                    json={"url": recv.url, "event_types": ["grade.stored", "grade.changed"], "secret": secret})
    assert made.status_code == 201, made.text
    return made.json()["id"]


def test_a_410_disables_the_endpoint_holds_what_follows_and_enable_sends_it(api, svc, receivers, store_grade,
                                                                            wait_for):
    from service.wiring import build_deliverer

    teacher = svc.auth(api.tokens["teacher"])
    sessions = api.app_state.sessions
    secret = "whsec_" + "G" * 43 + "="
    gone = receivers([secret], status=410).start()
    endpoint_id = _endpoint(api, teacher, gone, secret)
    deliverer = build_deliverer(api.app_state.settings, sessions=sessions)
    store_grade(sessions)
    _idle(deliverer, wait_for, lambda: gone.entries())
    listed = api.get("/api/v1/courses/c1/webhooks", headers=teacher).json()[0]
    assert listed["disabled"] is True and listed["held"] == 1 and listed["disabled_at"], listed
    assert "410 Gone" in listed["disabled_reason"] and "enable" in listed["disabled_reason"]

    # a disabled endpoint is sent nothing more: the first delivery and a new event are both held
    store_grade(sessions)
    _idle(deliverer, wait_for)
    assert len(gone.entries()) == 1  # one try only, never retried
    held = api.get(f"/api/v1/courses/c1/webhooks/{endpoint_id}/deliveries?status=disabled", headers=teacher).json()
    assert len(held["items"]) == 2 and [len(d["log"]) for d in held["items"]] == [0, 1]
    assert held["items"][1]["log"][0]["status_code"] == 410
    refused = api.post(f"/api/v1/courses/c1/webhooks/{endpoint_id}/replay", headers=teacher,
                       json={"event_id": held["items"][0]["event_id"]})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "endpoint_disabled", refused.text
    rotated = api.post(f"/api/v1/courses/c1/webhooks/{endpoint_id}/rotate", headers=teacher, json={}).json()
    assert rotated["disabled"] is True and rotated["held"] == 2  # the old secret still signs: the receiver verifies

    # the receiver is fixed; re-enabling sends what was held, with the webhook-id it always had
    gone.stop()
    back = receivers([secret], port=gone.port).start()
    assert api.post(f"/api/v1/courses/c1/webhooks/{endpoint_id}/enable", headers=svc.auth(api.tokens["alice"])
                    ).status_code == 403
    enabled = api.post(f"/api/v1/courses/c1/webhooks/{endpoint_id}/enable", headers=teacher)
    assert enabled.status_code == 200 and enabled.json()["resumed"] == 2 and enabled.json()["disabled"] is False
    _idle(deliverer, wait_for, lambda: len(back.entries()) >= 2)
    assert all(e["valid"] for e in back.entries())
    assert {e["webhook_id"] for e in back.entries()} == {d["webhook_id"] for d in held["items"]}
    after = api.get(f"/api/v1/courses/c1/webhooks/{endpoint_id}/deliveries", headers=teacher).json()["items"]
    assert [d["status"] for d in after] == ["delivered", "delivered"]
    assert api.get("/api/v1/courses/c1/webhooks", headers=teacher).json()[0]["disabled"] is False


def test_an_ordinary_failure_does_not_disable(api, svc, receivers, store_grade, wait_for):
    from service.wiring import build_deliverer

    teacher = svc.auth(api.tokens["teacher"])
    sessions = api.app_state.sessions
    secret = "whsec_" + "H" * 43 + "="
    recv = receivers([secret], status=404).start()
    endpoint_id = _endpoint(api, teacher, recv, secret)
    store_grade(sessions)
    build_deliverer(api.app_state.settings, sessions=sessions).run_once()
    assert recv.entries()
    listed = api.get("/api/v1/courses/c1/webhooks", headers=teacher).json()[0]
    assert listed["disabled"] is False and listed["held"] == 0
    log = api.get(f"/api/v1/courses/c1/webhooks/{endpoint_id}/deliveries", headers=teacher).json()["items"]
    assert log[0]["status"] == "pending" and log[0]["last_error"] == "HTTP 404"


def test_grade_events_carry_the_effective_score_and_the_automatic_one(api, svc, receivers, store_grade, wait_for):
    from service.db import transaction
    from service.submissions.models import Submission
    from service.wiring import build_deliverer

    teacher = svc.auth(api.tokens["teacher"])
    sessions = api.app_state.sessions
    secret = "whsec_" + "S" * 43 + "="
    recv = receivers([secret]).start()
    _endpoint(api, teacher, recv, secret)
    sid = store_grade(sessions, score=2.0)
    resp = api.post(f"/api/v1/submissions/{sid}/override", headers=teacher,
                    json={"score": 1.5, "reason": "late penalty"})
    assert resp.status_code == 200, resp.text
    store_grade(sessions, submission_id=sid, score=3.0)  # a regrade: the override still stands
    with transaction(sessions) as s:
        assert s.get(Submission, sid).effective_score == 1.5
    _idle(build_deliverer(api.app_state.settings, sessions=sessions), wait_for, lambda: len(recv.entries()) >= 3)
    entries = sorted(recv.entries(), key=lambda e: e["event_id"])
    assert [e["type"] for e in entries] == ["grade.stored", "grade.changed", "grade.changed"]
    assert [e["scores"] for e in entries] == [
        {"score": 2.0, "auto_score": 2.0, "manual_score": None},
        {"score": 1.5, "auto_score": 2.0, "manual_score": 1.5},
        {"score": 1.5, "auto_score": 3.0, "manual_score": 1.5},
    ]
    api_view = api.get(f"/api/v1/submissions/{sid}", headers=teacher).json()
    assert (api_view["score"], api_view["auto_score"]) == (entries[-1]["scores"]["score"],
                                                           entries[-1]["scores"]["auto_score"])


def test_the_delivery_timeout_defaults_to_what_receivers_expect_and_is_validated(db_url, svc):
    from pydantic import ValidationError

    assert 15 <= svc.settings(db_url).webhook_timeout_s <= 30
    for bad in ({"webhook_timeout_s": 0.2}, {"webhook_timeout_s": 600},
                {"webhook_timeout_s": 30, "webhook_lease_s": 10}):
        with pytest.raises(ValidationError, match=r"webhook_timeout_s|WEBHOOK_LEASE_S"):
            svc.settings(db_url, **bad)


def test_the_cli_shows_a_disabled_endpoint_and_enables_it(db_url, sessions, svc, receivers, store_grade, wait_for,
                                                          monkeypatch, capsys):
    from service.cli import main
    from service.db import transaction
    from service.webhooks import service
    from service.outbox.ssrf import AddressPolicy

    gone = receivers(["whsec_" + "C" * 43 + "="], status=410).start()
    with transaction(sessions) as s:
        row = service.create(s, course="c1", url=gone.url, event_types=["grade.stored"],
                             policy=AddressPolicy(enforce=False), secret=gone.secrets[0])
        endpoint_id = row.id
    store_grade(sessions)
    monkeypatch.setenv("TITANGRADE_DATABASE_URL", db_url)
    assert main(["webhooks", "deliver", "--burst"]) == 0
    assert len(gone.entries()) == 1
    capsys.readouterr()
    assert main(["webhooks", "list", "--course", "c1"]) == 0
    listed = capsys.readouterr().out
    assert "DISABLED since " in listed and "1 held: HTTP 410 Gone" in listed, listed
    assert main(["webhooks", "enable", str(endpoint_id)]) == 0
    assert f"endpoint {endpoint_id} enabled; 1 held deliveries are sent now" in capsys.readouterr().out
    assert main(["webhooks", "list", "--course", "c1"]) == 0
    assert "DISABLED" not in capsys.readouterr().out
