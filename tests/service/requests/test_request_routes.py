"""Regrade requests and problem reports over the API, on SQLite and PostgreSQL: a learner asks on their own
submission only, bounded (one open per submission, a daily bound); the course's staff list, answer and close;
nobody else sees them; hostile text is stored cleaned, never a 500."""

from __future__ import annotations

import pytest

from service.requests import service as requests_service


def _submit(api, svc, who: str) -> str:
    resp = api.post(
        "/api/v1/submissions",
        files={"notebook": ("nb.ipynb", svc.notebook(), "application/x-ipynb+json")},
        headers=svc.auth(api.tokens[who]),
    )
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def _ask(api, svc, who: str, sid: str, **body):
    return api.post(
        f"/api/v1/submissions/{sid}/requests",
        json={"kind": "regrade", "text": "please look at check 2", **body},
        headers=svc.auth(api.tokens[who]),
    )


@pytest.fixture
def other_teacher(api):
    from service.auth.service import create_token
    from service.db import transaction

    with transaction(api.app_state.sessions) as s:
        return create_token(s, user="tc2", role="instructor", course="c2")


def test_a_learner_asks_and_the_courses_instructor_answers(api, svc):
    sid = _submit(api, svc, "alice")
    made = _ask(api, svc, "alice", sid)
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["status"] == "open" and body["kind"] == "regrade" and body["author"] == "alice"
    assert body["course"] == "c1" and body["exercise_id"] == "ch05.svc_sum" and body["answer"] is None
    assert body["created_at"].endswith("+00:00") and body["links"]["submission"] == f"/api/v1/submissions/{sid}"
    rid = body["id"]

    again = _ask(api, svc, "alice", sid, kind="problem")
    assert again.status_code == 409 and again.json()["error"]["code"] == "request_open"
    assert f"#{rid}" in again.json()["error"]["message"]

    listed = api.get("/api/v1/courses/c1/requests?status=open", headers=svc.auth(api.tokens["teacher"]))
    assert listed.status_code == 200 and [r["id"] for r in listed.json()["items"]] == [rid]
    answered = api.post(
        f"/api/v1/requests/{rid}/answer",
        json={"text": "check 2 was right; see its feedback"},
        headers=svc.auth(api.tokens["teacher"]),
    )
    assert answered.status_code == 200, answered.text
    done = answered.json()
    assert done["status"] == "answered" and done["answered_by"] == "teacher" and done["answered_at"].endswith("+00:00")
    seen = api.get(f"/api/v1/submissions/{sid}/requests", headers=svc.auth(api.tokens["alice"])).json()["items"]
    assert [(r["id"], r["answer"]) for r in seen] == [(rid, "check 2 was right; see its feedback")]
    twice = api.post(f"/api/v1/requests/{rid}/answer", json={"text": "x"}, headers=svc.auth(api.tokens["teacher"]))
    assert twice.status_code == 409 and twice.json()["error"]["code"] == "request_not_open"

    follow = _ask(api, svc, "alice", sid, kind="problem", text="the feedback is in the wrong language")
    assert follow.status_code == 201  # answered is no longer open: the learner may ask again
    assert (
        api.get("/api/v1/courses/c1/requests", headers=svc.auth(api.tokens["teacher"])).json()["items"][0]["id"]
        == follow.json()["id"]
    )  # open first
    closed = api.post(f"/api/v1/requests/{rid}/close", headers=svc.auth(api.tokens["teacher"]))
    assert closed.status_code == 200 and closed.json()["status"] == "closed" and closed.json()["closed_by"] == "teacher"
    assert api.post(f"/api/v1/requests/{rid}/close", headers=svc.auth(api.tokens["teacher"])).status_code == 409
    only_closed = api.get("/api/v1/courses/c1/requests?status=closed", headers=svc.auth(api.tokens["teacher"]))
    assert [r["id"] for r in only_closed.json()["items"]] == [rid]
    problems = api.get("/api/v1/courses/c1/requests?kind=problem", headers=svc.auth(api.tokens["teacher"]))
    assert [r["id"] for r in problems.json()["items"]] == [follow.json()["id"]]


def test_nobody_else_sees_or_answers_a_request(api, svc, other_teacher):
    sid = _submit(api, svc, "alice")
    rid = _ask(api, svc, "alice", sid).json()["id"]
    # another learner of the course: the submission and the request look missing; they cannot ask on it
    assert _ask(api, svc, "bob", sid).status_code == 404
    assert api.get(f"/api/v1/submissions/{sid}/requests", headers=svc.auth(api.tokens["bob"])).status_code == 404
    assert api.get(f"/api/v1/requests/{rid}", headers=svc.auth(api.tokens["bob"])).status_code == 404
    bob_answer = api.post(f"/api/v1/requests/{rid}/answer", json={"text": "ok"}, headers=svc.auth(api.tokens["bob"]))
    assert bob_answer.status_code == 404
    # an instructor of another course: the same, and their course list is not this one
    theirs = svc.auth(other_teacher)
    assert api.get(f"/api/v1/requests/{rid}", headers=theirs).status_code == 404
    assert api.post(f"/api/v1/requests/{rid}/answer", json={"text": "ok"}, headers=theirs).status_code == 404
    assert api.post(f"/api/v1/requests/{rid}/close", headers=theirs).status_code == 404
    assert api.get("/api/v1/courses/c1/requests", headers=theirs).status_code == 403
    assert api.get("/api/v1/courses/c1/requests", headers=svc.auth(api.tokens["alice"])).status_code == 403
    # the author reads their own request but cannot answer or close it
    assert api.get(f"/api/v1/requests/{rid}", headers=svc.auth(api.tokens["alice"])).status_code == 200
    own = api.post(f"/api/v1/requests/{rid}/answer", json={"text": "ok"}, headers=svc.auth(api.tokens["alice"]))
    assert own.status_code == 403
    assert api.post(f"/api/v1/requests/{rid}/close", headers=svc.auth(api.tokens["alice"])).status_code == 403
    # staff read the submission but only its learner may ask about it
    staff_ask = _ask(api, svc, "teacher", sid)
    assert staff_ask.status_code == 403 and staff_ask.json()["error"]["code"] == "not_the_author"
    assert api.get(f"/api/v1/submissions/{sid}/requests", headers=svc.auth(api.tokens["teacher"])).status_code == 200
    assert api.get(f"/api/v1/requests/{rid}", headers=svc.auth(api.tokens["root"])).status_code == 200


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"kind": "regrade", "text": ""}, "text"),
        ({"kind": "regrade", "text": "   \n\t "}, "1 to 2000"),
        ({"kind": "regrade", "text": "x" * 2001}, "text"),
        ({"kind": "praise", "text": "hi"}, "kind"),
        ({"kind": "regrade"}, "text"),
        ({"kind": "regrade", "text": "hi", "extra": 1}, "extra"),
        ({"kind": "regrade", "text": 5}, "text"),
    ],
)
def test_bad_bodies_are_a_422_naming_the_field(api, svc, body, problem):
    sid = _submit(api, svc, "alice")
    resp = api.post(f"/api/v1/submissions/{sid}/requests", json=body, headers=svc.auth(api.tokens["alice"]))
    assert resp.status_code == 422, resp.text
    assert problem in resp.json()["error"]["message"]


def _raw(api, path: str, body: bytes, token: str):
    return api.post(
        path, content=body, headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    )


def test_hostile_text_is_stored_cleaned_and_a_lone_surrogate_is_a_422(api, svc):
    sid = _submit(api, svc, "alice")
    path, token = f"/api/v1/submissions/{sid}/requests", api.tokens["alice"]
    lone = _raw(api, path, b'{"kind": "problem", "text": "lone \\ud800 here"}', token)
    assert lone.status_code == 422 and "text" in lone.json()["error"]["message"]  # the JSON layer refuses it
    resp = _raw(
        api, path, b'{"kind": "problem", "text": "nul \\u0000 bidi \\u202e esc \\u001b[31m <script>x</script>"}', token
    )
    assert resp.status_code == 201, resp.text
    text = resp.json()["text"]
    assert text == "nul \\x00 bidi \\u202e esc  <script>x</script>"  # visible escapes; pages escape the markup
    rid = _ask(api, svc, "bob", _submit(api, svc, "bob")).json()["id"]
    answer = _raw(api, f"/api/v1/requests/{rid}/answer", b'{"text": "ok \\u0000 done"}', api.tokens["teacher"])
    assert answer.status_code == 200 and answer.json()["answer"] == "ok \\x00 done"
    assert api.get("/api/v1/requests/99999999999999999999", headers=svc.auth(api.tokens["root"])).status_code == 422
    assert api.get("/api/v1/requests/0", headers=svc.auth(api.tokens["root"])).status_code == 422
    assert api.get(f"/api/v1/requests/{2**31}", headers=svc.auth(api.tokens["root"])).status_code == 422
    assert api.get("/api/v1/requests/424242", headers=svc.auth(api.tokens["root"])).status_code == 404


def test_a_learner_has_a_daily_bound(api, svc, monkeypatch):
    monkeypatch.setattr(requests_service, "MAX_PER_DAY", 2)
    sids = [_submit(api, svc, "alice") for _ in range(3)]
    assert [_ask(api, svc, "alice", s).status_code for s in sids[:2]] == [201, 201]
    third = _ask(api, svc, "alice", sids[2])
    assert third.status_code == 429 and int(third.headers["retry-after"]) > 3600
    assert "24 hours" in third.json()["error"]["message"]
    assert _ask(api, svc, "bob", _submit(api, svc, "bob")).status_code == 201  # per learner
