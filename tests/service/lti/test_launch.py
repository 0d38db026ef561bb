"""LTI 1.3 login and launch over real HTTP against the platform harness (its own process), SQLite and
PostgreSQL: a good launch enrols the user with the role from the roles claim and hands out a working
token; every bad id_token is a 4xx naming the problem, and nothing is stored."""
from __future__ import annotations

import time

import httpx
import pytest
from lti_support import CLIENT_ID, DEPLOYMENT, INSTRUCTOR, LEARNER

LTI = "https://purl.imsglobal.org/spec/lti/claim/"


def test_a_learner_launch_lands_on_the_exercise_with_a_working_session(lti, counts):
    before = counts()
    resp = lti.browser.launch(sub="s-100", roles=[LEARNER], context="course-A", exercise_id="ch05.svc_sum",
                              lineitem="li-1", name="Li Wei")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert resp.headers.get("cache-control") == "no-store"  # it carries the learner's bearer token
    assert body["role"] == "learner" and body["exercise_id"] == "ch05.svc_sum"
    assert body["course"] == f"lti{lti.platform_id}-course-A"
    assert body["links"]["exercise"] == "/api/v1/exercises/ch05.svc_sum"
    page = httpx.get(lti.url + body["links"]["exercise"], headers={"Authorization": f"Bearer {body['token']}"},
                     timeout=30)
    assert page.status_code == 200 and page.json()["id"] == "ch05.svc_sum", page.text
    after = counts()
    assert after["identities"] == before["identities"] + 1 and after["lti_line_items"] == before["lti_line_items"] + 1

    from sqlalchemy import select

    from service.auth.models import Identity, Membership
    with lti.app.state.sessions() as s:
        ident = s.scalar(select(Identity).where(Identity.subject == "s-100"))
        assert (ident.issuer, ident.name) == (lti.platform.url, "Li Wei")
        role = s.scalar(select(Membership.role).where(Membership.identity_id == ident.id))
        assert role == "learner"


def test_an_instructor_launch_gets_the_instructor_role(lti):
    resp = lti.browser.launch(sub="t-1", roles=[INSTRUCTOR], context="course-A")
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["role"] == "instructor"
    book = httpx.get(lti.url + f"/api/v1/courses/{body['course']}/gradebook",
                     headers={"Authorization": f"Bearer {body['token']}"}, timeout=30)
    assert book.status_code == 200, book.text


def _claims(lti, login: dict, **over) -> dict:
    now = int(time.time())
    claims = {"iss": lti.platform.url, "aud": CLIENT_ID, "sub": "mallory", "nonce": login["nonce"], "iat": now,
              "exp": now + 300, LTI + "message_type": "LtiResourceLinkRequest", LTI + "version": "1.3.0",
              LTI + "deployment_id": DEPLOYMENT, LTI + "roles": [INSTRUCTOR], LTI + "context": {"id": "course-X"}}
    claims.update(over)
    return {k: v for k, v in claims.items() if v is not None}


BAD = {
    "expired": ({"exp": int(time.time()) - 3600, "iat": int(time.time()) - 4000}, "platform", "lti_token_expired"),
    "wrongly signed": ({}, "rogue", "lti_bad_signature"),
    "wrong aud": ({"aud": "someone-else"}, "platform", "lti_wrong_audience"),
    "wrong azp": ({"aud": [CLIENT_ID, "other"], "azp": "other"}, "platform", "lti_wrong_audience"),
    "wrong iss": ({"iss": "https://evil.example"}, "platform", "lti_wrong_issuer"),
    "wrong nonce": ({"nonce": "not-the-one"}, "platform", "lti_nonce_invalid"),
    "no nonce": ({"nonce": None}, "platform", "lti_token_invalid"),
    "unknown deployment": ({LTI + "deployment_id": "dep-9"}, "platform", "lti_unknown_deployment"),
    "wrong version": ({LTI + "version": "1.1"}, "platform", "lti_version"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_id_token_is_refused_and_nothing_is_stored(lti, counts, case):
    over, key, code = BAD[case]
    login = lti.browser.login(sub="mallory")
    token = lti.platform.sign(_claims(lti, login, **over), key=key)
    before = counts()
    resp = lti.browser.post_launch(token, login["state"])
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["code"] == code, resp.text
    assert counts() == before


def test_a_replayed_launch_and_a_reused_nonce_are_refused(lti, counts):
    login = lti.browser.login(sub="s-replay")
    form = lti.browser.authorize(login)
    assert lti.browser.post_launch(form["id_token"], form["state"]).status_code == 200
    before = counts()
    replay = lti.browser.post_launch(form["id_token"], form["state"])  # the same form posted again
    assert replay.status_code == 400 and replay.json()["error"]["code"] == "lti_state_invalid"
    fresh = lti.browser.login(sub="s-replay")  # a new state, but the old id_token (and its spent nonce)
    reused = lti.browser.post_launch(form["id_token"], fresh["state"])
    assert reused.status_code == 400 and reused.json()["error"]["code"] == "lti_nonce_invalid"
    assert counts() == before


def test_unknown_state_platform_and_missing_fields_are_4xx(lti, counts):
    before = counts()
    login = lti.browser.login(sub="s-x")
    token = lti.platform.sign(_claims(lti, login))
    assert lti.browser.post_launch(token, "no-such-state").json()["error"]["code"] == "lti_state_invalid"
    missing = httpx.post(lti.url + "/lti/launch", data={"state": login["state"]}, timeout=30)
    assert missing.status_code == 400 and missing.json()["error"]["code"] == "lti_missing_parameter"
    junk = lti.browser.post_launch("not-a-jwt", login["state"])
    assert junk.status_code == 400 and junk.json()["error"]["code"] == "lti_token_invalid"
    unknown = httpx.post(lti.url + "/lti/login", data={"iss": "https://nobody.example", "login_hint": "x",
                                                        "target_link_uri": "x"}, timeout=30)
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "lti_unknown_platform"
    assert counts() == before


def test_an_unknown_exercise_in_the_link_is_404(lti, counts):
    before = counts()
    resp = lti.browser.launch(sub="s-404", exercise_id="ch99.nothing")
    assert resp.status_code == 404 and resp.json()["error"]["code"] == "lti_unknown_exercise"
    assert counts() == before


def test_deep_linking_lets_an_instructor_pick_an_exercise_and_the_platform_verifies_the_answer(lti, counts):
    import html
    import re

    resp = lti.browser.launch(sub="t-dl", roles=[INSTRUCTOR], message_type="LtiDeepLinkingRequest")
    assert resp.status_code == 200, resp.text
    picker = resp.json()
    assert picker["message_type"] == "LtiDeepLinkingRequest"
    assert "ch05.svc_sum" in {e["id"] for e in picker["exercises"]}
    page = lti.browser.client.post(lti.url + "/lti/deep-link",
                                   data={"pick_token": picker["pick_token"], "exercise_id": "ch05.svc_sum"})
    assert page.status_code == 200, page.text
    action = html.unescape(re.search(r'action="([^"]+)"', page.text).group(1))
    jwt_ = html.unescape(re.search(r'name="JWT" value="([^"]+)"', page.text).group(1))
    assert action == lti.platform.url + "/deeplink/return"
    assert httpx.post(action, data={"JWT": jwt_}, timeout=30).status_code == 200  # the platform verifies it
    answer = lti.platform.log()["deep_links"][-1]
    item = answer["https://purl.imsglobal.org/spec/lti-dl/claim/content_items"][0]
    assert item["custom"] == {"exercise_id": "ch05.svc_sum"} and item["url"] == lti.url + "/lti/launch"
    assert item["lineItem"]["scoreMaximum"] == 3.0
    assert answer["https://purl.imsglobal.org/spec/lti-dl/claim/data"] == "opaque-dl-data"
    tampered = lti.browser.client.post(lti.url + "/lti/deep-link",
                                       data={"pick_token": picker["pick_token"][:-4] + "AAAA",
                                             "exercise_id": "ch05.svc_sum"})
    assert tampered.status_code == 400 and tampered.json()["error"]["code"] == "lti_pick_invalid"


def test_a_learner_cannot_open_the_deep_linking_picker(lti, counts):
    before = counts()
    resp = lti.browser.launch(sub="s-dl", roles=[LEARNER], message_type="LtiDeepLinkingRequest")
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "lti_forbidden"
    assert counts()["identities"] == before["identities"]


def test_an_expired_login_state_is_refused_and_old_states_are_pruned(lti, counts):
    import datetime as dt

    from sqlalchemy import select

    from service.db import transaction, utcnow
    from service.lti.models import LtiLoginState

    login = lti.browser.login(sub="s-late")
    form = lti.browser.authorize(login)
    with transaction(lti.app.state.sessions) as s:
        s.get(LtiLoginState, login["state"]).expires_at = utcnow() - dt.timedelta(days=1)
    before = counts()
    late = lti.browser.post_launch(form["id_token"], form["state"])
    assert late.status_code == 400 and late.json()["error"]["code"] == "lti_state_invalid"
    assert counts() == before
    lti.browser.login(sub="s-next")  # the next login clears states expired for longer than the TTL
    with lti.app.state.sessions() as s:
        assert s.scalar(select(LtiLoginState).where(LtiLoginState.state == login["state"])) is None


def test_login_initiation_by_get_and_its_redirect_parameters(lti):
    from lti_support import CLIENT_ID as client

    resp = httpx.get(lti.url + "/lti/login", params={"iss": lti.platform.url, "login_hint": "u1",
                                                     "target_link_uri": lti.url + "/lti/launch"}, timeout=30)
    assert resp.status_code == 302
    from urllib.parse import parse_qs, urlsplit

    q = {k: v[0] for k, v in parse_qs(urlsplit(resp.headers["location"]).query).items()}
    assert (q["scope"], q["response_type"], q["response_mode"], q["prompt"]) == ("openid", "id_token", "form_post",
                                                                                  "none")
    assert (q["client_id"], q["redirect_uri"], q["login_hint"]) == (client, lti.url + "/lti/launch", "u1")
    assert len(q["state"]) >= 32 and len(q["nonce"]) >= 32 and q["state"] != q["nonce"]
    wrong = httpx.get(lti.url + "/lti/login", params={"iss": lti.platform.url, "login_hint": "u1",
                                                      "target_link_uri": "x", "lti_deployment_id": "nope"}, timeout=30)
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "lti_unknown_deployment"
