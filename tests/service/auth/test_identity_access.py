"""Identity and membership: users are (issuer, subject), every read and write is checked against course
membership, the only global role is an explicit admin, tokens expire and can be listed and revoked."""
from __future__ import annotations

import datetime as dt

import pytest

URL = "/api/v1/submissions"


def _submit(api, svc, token, **headers):
    resp = api.post(URL, files={"notebook": ("a.ipynb", svc.notebook())}, headers=svc.auth(token, **headers))
    assert resp.status_code == 202, resp.text
    return resp.json()["id"]


def _token(api, **kw):
    from service.auth.service import create_token
    from service.db import transaction

    with transaction(api.app_state.sessions) as s:
        return create_token(s, **kw)


def test_same_name_in_another_course_is_not_the_learner_s_instructor(api, svc):
    """The issue's case: an instructor token for `bob` in course `other` against learner bob in c1."""
    sid = _submit(api, svc, api.tokens["bob"])
    api.post(f"{URL}/{sid}/override", json={"score": 1, "reason": "checked by hand"},
             headers=svc.auth(api.tokens["teacher"])).raise_for_status()
    other = svc.auth(_token(api, user="bob", role="instructor", course="other"))
    for method, path in (("get", sid), ("get", f"{sid}/events"), ("get", f"{sid}/overrides"),
                         ("post", f"{sid}/regrade")):
        resp = getattr(api, method)(f"{URL}/{path}", headers=other)
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "not_found", (path, resp.text)
    assert api.get(URL, headers=other).json()["items"] == []
    assert api.get("/api/v1/courses/c1/gradebook", headers=other).status_code == 403


def test_same_subject_from_another_issuer_is_another_person(api, svc):
    sid = _submit(api, svc, api.tokens["alice"])
    lms_alice = svc.auth(_token(api, user="alice", role="learner", course="c1", issuer="https://lms.example.edu"))
    assert api.get(f"{URL}/{sid}", headers=lms_alice).status_code == 404
    assert api.get(URL, headers=lms_alice).json()["items"] == []
    me = api.get("/api/v1/me", headers=lms_alice).json()
    assert me["identity"]["issuer"] == "https://lms.example.edu" and me["memberships"] == {"c1": "learner"}


def test_a_course_token_sees_only_that_course(api, svc):
    in_c1 = _submit(api, svc, api.tokens["alice"])
    alice_c2 = _token(api, user="alice", role="learner", course="c2")
    in_c2 = _submit(api, svc, alice_c2)
    assert api.get(f"{URL}/{in_c2}", headers=svc.auth(alice_c2)).json()["course"] == "c2"
    assert [s["id"] for s in api.get(URL, headers=svc.auth(alice_c2)).json()["items"]] == [in_c2]
    assert api.get(f"{URL}/{in_c1}", headers=svc.auth(alice_c2)).status_code == 404
    denied = api.post(URL, files={"notebook": ("a.ipynb", svc.notebook())}, data={"course": "c1"},
                      headers=svc.auth(alice_c2))
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "not_enrolled"
    teacher = api.get(URL, headers=svc.auth(api.tokens["teacher"])).json()["items"]
    assert [s["id"] for s in teacher] == [in_c1]  # c1's instructor does not see c2


def test_learner_may_read_but_not_regrade_own_submission(api, svc):
    sid = _submit(api, svc, api.tokens["alice"])
    assert api.get(f"{URL}/{sid}", headers=svc.auth(api.tokens["alice"])).status_code == 200
    resp = api.post(f"{URL}/{sid}/regrade", headers=svc.auth(api.tokens["alice"]))
    assert resp.status_code == 403


def test_global_role_is_explicit():
    from service.auth.principal import Principal
    from service.errors import Forbidden, ServiceError
    from service.submissions.service import choose_course

    with pytest.raises(ValueError, match="needs a course"):
        from service.auth.service import create_token
        create_token(None, user="tim", role="instructor")  # refused before touching the database
    two = Principal(identity_id=1, issuer="lti", subject="s", name="s", memberships={"a": "learner", "b": "learner"})
    with pytest.raises(ServiceError) as err:
        choose_course(two, None)
    assert err.value.code == "course_required"
    assert choose_course(two, "b") == "b"
    with pytest.raises(Forbidden):
        choose_course(two, "c")
    assert not two.is_staff and not two.can_teach("a")


def test_token_api_create_list_revoke(api, svc):
    root, alice = svc.auth(api.tokens["root"]), svc.auth(api.tokens["alice"])
    made = api.post("/api/v1/tokens", json={"subject": "dan", "role": "learner", "course": "c1",
                                            "expires_in_days": 1, "label": "for the lab"}, headers=root)
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["token"].startswith("tg_") and body["state"] == "active" and body["expires_at"].endswith("+00:00")
    assert body["identity"] == {"issuer": "titangrade", "subject": "dan", "name": "dan", "global_role": None}
    dan = svc.auth(body["token"])
    assert api.get("/api/v1/me", headers=dan).json()["memberships"] == {"c1": "learner"}
    bad = api.post("/api/v1/tokens", json={"subject": "eve", "role": "instructor"}, headers=root)
    assert bad.status_code == 422 and "only global role is admin" in bad.json()["error"]["message"]
    assert api.post("/api/v1/tokens", json={"subject": "x", "role": "admin"}, headers=alice).status_code == 403
    everyone = api.get("/api/v1/tokens", headers=root).json()["items"]
    assert {t["identity"]["subject"] for t in everyone} >= {"alice", "bob", "dan", "root"}
    assert all("token" not in t and "token_hash" not in t for t in everyone)
    own = api.get("/api/v1/tokens", headers=alice).json()["items"]
    assert [t["identity"]["subject"] for t in own] == ["alice"]
    assert api.delete(f"/api/v1/tokens/{body['id']}", headers=alice).status_code == 404  # not hers
    revoked = api.delete(f"/api/v1/tokens/{body['id']}", headers=root)
    assert revoked.status_code == 200 and revoked.json()["state"] == "revoked"
    after = api.get("/api/v1/me", headers=dan)
    assert after.status_code == 401 and 'error="invalid_token"' in after.headers["WWW-Authenticate"]
    listed = api.get("/api/v1/tokens?include_inactive=true", headers=root).json()["items"]
    assert any(t["id"] == body["id"] and t["state"] == "revoked" for t in listed)


def test_expired_token_is_refused(api, svc):
    from sqlalchemy import select

    from service.auth.models import Token
    from service.auth.service import hash_token
    from service.db import transaction

    token = _token(api, user="fay", role="learner", course="c1", expires_in_days=1)
    assert api.get("/api/v1/me", headers=svc.auth(token)).status_code == 200
    with transaction(api.app_state.sessions) as s:
        row = s.scalar(select(Token).where(Token.token_hash == hash_token(token)))
        row.expires_at = dt.datetime(2020, 1, 1)
    resp = api.get("/api/v1/me", headers=svc.auth(token))
    assert resp.status_code == 401 and resp.json()["error"]["code"] == "not_authenticated"
