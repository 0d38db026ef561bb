"""Issue 25, items 1 and 4, against the platform harness over real HTTP (SQLite and PostgreSQL): the
deep-linking return URL must be an absolute https (dev: http) URL; the deep-link page carries its own strict
headers; the pick token is single use, expires and works only in the browser that made the deep-linking
launch; a login state and a sign-in ticket work only in the browser that started the login (login CSRF)."""
from __future__ import annotations

import datetime as dt
import html
import re
import time

import httpx
import pytest
from lti_support import CLIENT_ID, DEPLOYMENT, INSTRUCTOR, LEARNER, Browser

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
HTML = {"Accept": "text/html,application/xhtml+xml"}


def _deep_link_claims(lti, login: dict, return_url: str) -> dict:
    now = int(time.time())
    return {"iss": lti.platform.url, "aud": CLIENT_ID, "azp": CLIENT_ID, "sub": "t-evil", "nonce": login["nonce"],
            "iat": now, "exp": now + 300, LTI + "message_type": "LtiDeepLinkingRequest", LTI + "version": "1.3.0",
            LTI + "deployment_id": DEPLOYMENT, LTI + "roles": [INSTRUCTOR], LTI + "context": {"id": "course-DL"},
            DL: {"deep_link_return_url": return_url, "accept_types": ["ltiResourceLink"]}}


def _pick_rows(lti) -> int:
    from sqlalchemy import func, select

    from service.lti.models import LtiLoginState
    with lti.app.state.sessions() as s:
        return s.scalar(select(func.count()).select_from(LtiLoginState).where(LtiLoginState.state.like("pick-%")))


HOSTILE_RETURN_URLS = [
    "javascript:alert(document.domain)",
    "JavaScript:fetch('/teach')",
    " javascript:alert(1)",
    "java\tscript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "/deeplink/return",
    "//evil.example/return",
    "https:evil.example/return",
    "https:\\\\evil.example\\return",
    "https://lms.example@evil.example/return",
    "https://user:pw@evil.example/return",
    "ftp://evil.example/return",
    "https://%65vil.example/return",  # a browser posts to evil.example, the CSP would name %65vil.example
    "https://lms.example:99999/return",
    "",
]


@pytest.mark.parametrize("url", HOSTILE_RETURN_URLS)
def test_a_hostile_deep_linking_return_url_is_refused_at_the_launch(lti, counts, url):
    login = lti.browser.login(sub="t-evil")
    token = lti.platform.sign(_deep_link_claims(lti, login, url))
    before, picks = counts(), _pick_rows(lti)
    resp = lti.browser.post_launch(token, login["state"])
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["code"] in ("lti_return_url_invalid", "lti_deep_linking"), resp.text
    assert "pick_token" not in resp.text and counts() == before and _pick_rows(lti) == picks


def test_the_return_url_check_parses_urls_and_allows_http_only_in_dev():
    from service.lti.errors import LtiError
    from service.lti.urls import return_url

    assert return_url("https://lms.example/deep/return?x=1", allow_http=False) == "https://lms.example/deep/return?x=1"
    assert return_url("http://127.0.0.1:9000/return", allow_http=True) == "http://127.0.0.1:9000/return"
    with pytest.raises(LtiError, match="scheme must be https"):
        return_url("http://lms.example/return", allow_http=False)
    for bad in HOSTILE_RETURN_URLS:
        with pytest.raises(LtiError):
            return_url(bad, allow_http=True)


def test_the_form_action_origin_of_an_ipv6_platform_is_a_valid_csp_source():
    from service.lti.urls import origin, return_url

    # bare ::1 is no CSP source: the browser would drop it and refuse the post to the platform
    assert origin(return_url("https://[::1]:8443/return", allow_http=False)) == "https://[::1]:8443"
    assert origin(return_url("https://LMS.example/return", allow_http=False)) == "https://lms.example"


def _picker(lti, browser: Browser) -> str:
    resp = browser.launch(sub="t-pick", roles=[INSTRUCTOR], message_type="LtiDeepLinkingRequest")
    assert resp.status_code == 200, resp.text
    return resp.json()["pick_token"]


def _pick(client: httpx.Client, lti, pick: str, **headers) -> httpx.Response:
    return client.post(lti.url + "/lti/deep-link", data={"pick_token": pick, "exercise_id": "ch05.svc_sum"},
                       headers=headers)


def test_the_deep_link_page_posts_only_to_the_platform_and_only_the_platform_may_frame_it(lti):
    page = _pick(lti.browser.client, lti, _picker(lti, lti.browser))
    assert page.status_code == 200, page.text
    csp = page.headers["content-security-policy"]
    origin = lti.platform.url
    assert f"form-action {origin};" in csp and f"frame-ancestors {origin};" in csp
    assert "default-src 'none'" in csp and re.search(r"script-src 'sha256-[A-Za-z0-9+/=]+'", csp)
    assert "unsafe-inline" not in csp and "x-frame-options" not in page.headers  # its own CSP decides framing
    assert page.headers["x-content-type-options"] == "nosniff" and page.headers["cache-control"] == "no-store"
    assert html.unescape(re.search(r'action="([^"]+)"', page.text).group(1)) == origin + "/deeplink/return"


def test_a_pick_token_works_once_only_in_its_browser_and_expires(lti):
    pick = _picker(lti, lti.browser)
    other = Browser(lti.url, lti.platform)  # another person's browser, with its own binding cookie
    other.login(sub="someone")
    for client in (httpx.Client(timeout=30), other.client):
        stolen = _pick(client, lti, pick, **HTML)
        assert stolen.status_code == 400 and "not started in this browser" in stolen.text, stolen.text
        assert stolen.headers["content-type"].startswith("text/html")
        assert "JWT" not in stolen.text and "deeplink/return" not in stolen.text
    assert _pick(lti.browser.client, lti, pick).status_code == 200  # the refusals above did not spend it
    again = _pick(lti.browser.client, lti, pick)
    assert again.status_code == 400 and again.json()["error"]["code"] == "lti_pick_invalid", again.text

    from service.db import transaction, utcnow
    from service.lti.models import LtiLoginState
    late = _picker(lti, lti.browser)
    with transaction(lti.app.state.sessions) as s:
        for row in s.query(LtiLoginState).filter(LtiLoginState.state.like("pick-%")):
            row.expires_at = utcnow() - dt.timedelta(seconds=1)
    expired = _pick(lti.browser.client, lti, late)
    assert expired.status_code == 400 and expired.json()["error"]["code"] == "lti_pick_invalid", expired.text


def test_the_pick_lifetime_is_a_setting_in_seconds(lti):
    import jwt

    pick = jwt.decode(_picker(lti, lti.browser), options={"verify_signature": False})
    assert pick["exp"] - pick["iat"] == int(lti.app.state.settings.lti_pick_ttl_s) == 300


def test_an_attackers_launch_completed_in_the_victims_browser_is_refused(lti, counts):
    attacker = Browser(lti.url, lti.platform)
    form = attacker.authorize(attacker.login(sub="mallory", roles=[LEARNER], context="course-CSRF"))
    victim = Browser(lti.url, lti.platform)
    victim.login(sub="victim")  # the victim has a binding cookie of their own
    before = counts()
    for client in (httpx.Client(timeout=30), victim.client):  # no cookie, and another browser's cookie
        resp = client.post(lti.url + "/lti/launch", data=form, headers=HTML)
        assert resp.status_code == 400, resp.text
        assert resp.headers["content-type"].startswith("text/html") and "not started in this browser" in resp.text
        assert "location" not in resp.headers and "tg_session" not in resp.headers.get("set-cookie", "")
    assert counts() == before
    assert attacker.post_launch(form["id_token"], form["state"]).status_code == 200  # the owner's launch works


def test_a_sign_in_link_works_only_in_the_browser_that_launched(lti):
    attacker = Browser(lti.url, lti.platform)
    form = attacker.authorize(attacker.login(sub="mallory-web", roles=[LEARNER], context="course-CSRF"))
    launched = attacker.client.post(lti.url + "/lti/launch", data=form, headers=HTML)
    assert launched.status_code == 303, launched.text
    ticket_url = lti.url + launched.headers["location"]
    victim = Browser(lti.url, lti.platform)
    victim.login(sub="victim-web")
    for client in (httpx.Client(timeout=30), victim.client):
        resp = client.get(ticket_url, headers=HTML)
        assert resp.status_code == 400 and "not started in this browser" in resp.text, resp.text
        assert "set-cookie" not in resp.headers
    entered = attacker.client.get(ticket_url)  # still unspent: it works in the browser that launched
    assert entered.status_code == 303 and "tg_session=" in entered.headers["set-cookie"]


def test_the_binding_cookie_is_httponly_scoped_to_lti_and_samesite_none_secure_over_https(lti):
    resp = httpx.Client(timeout=30).post(lti.url + "/lti/login", data={
        "iss": lti.platform.url, "login_hint": "u", "target_link_uri": lti.url + "/lti/launch"})
    cookie = resp.headers["set-cookie"].lower()
    assert cookie.startswith("tg_lti_browser=") and "httponly" in cookie and "path=/lti" in cookie
    assert "samesite=lax" in cookie and "secure" not in cookie  # dev over http

    from starlette.requests import Request
    from starlette.responses import Response

    from service.lti import binding

    https = lti.app.state.settings.model_copy(update={"lti_tool_url": "https://grader.example"})
    request = Request({"type": "http", "scheme": "https", "path": "/lti/login", "headers": [], "server": None})
    out = Response()
    binding.bind(request, out, settings=https, value="v" * 43, max_age_s=900)
    framed = out.headers["set-cookie"].lower()
    assert "samesite=none" in framed and "secure" in framed and "httponly" in framed and "max-age=900" in framed


def test_the_iframe_hand_off_page_may_be_framed_only_by_the_platform(lti):
    browser = Browser(lti.url, lti.platform)
    form = browser.authorize(browser.login(sub="s-frame", roles=[LEARNER], context="course-F"))
    launched = browser.client.post(lti.url + "/lti/launch", data=form, headers=HTML)
    framed = browser.client.get(lti.url + launched.headers["location"], headers={"Sec-Fetch-Dest": "iframe"})
    assert framed.status_code == 200 and 'target="_blank"' in framed.text
    csp = framed.headers["content-security-policy"]
    assert f"frame-ancestors {lti.platform.url};" in csp and "default-src 'none'" in csp
    assert framed.headers["x-content-type-options"] == "nosniff"


def test_extra_frame_ancestors_are_a_checked_setting(lti, svc):
    from pydantic import ValidationError

    settings = lti.app.state.settings
    lti.app.state.settings = settings.model_copy(update={"lti_frame_ancestors": "https://*.instructure.com"})
    try:
        page = _pick(lti.browser.client, lti, _picker(lti, lti.browser))
    finally:
        lti.app.state.settings = settings
    assert page.status_code == 200, page.text
    assert f"frame-ancestors https://*.instructure.com {lti.platform.url};" in page.headers["content-security-policy"]
    assert svc.settings("sqlite:///x.db", lti_frame_ancestors="https://a.example, http://b.example:8080"
                        ).lti_frame_ancestors == "https://a.example http://b.example:8080"
    for bad in ("javascript:alert(1)", "https://a.example/path", "'unsafe-inline'", "*", "https://a.example;x"):
        with pytest.raises(ValidationError, match="LTI_FRAME_ANCESTORS"):
            svc.settings("sqlite:///x.db", lti_frame_ancestors=bad)
