"""Issue 25, item 3: a launch must not hold the database while it fetches the platform's keyset, forged
launches must not refetch it each time, and login states must not pile up. The real app under uvicorn,
SQLite and PostgreSQL, and a real keyset server on loopback (lti_probe.ProbeServer) that records, while it
is being called, how many of the app's database connections are checked out and whether another SQLite
writer could take the lock at once."""
from __future__ import annotations

import datetime as dt
import time
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from lti_probe import CheckoutCounter, ProbeServer

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
CLIENT = "probe-client"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
FORGED = 50


@pytest.fixture(scope="module")
def tool(module_db_url, test_catalogue, svc, tmp_path_factory):
    from service.app import create_app
    from service.db import transaction
    from service.lti import service as lti_service

    settings = svc.settings(module_db_url, lti_key_dir=tmp_path_factory.mktemp("lti") / "keys",
                            lti_jwks_refetch_s=3600.0, lti_rate_per_ip_per_min=10_000,
                            lti_rate_per_platform_per_min=10_000)
    app = create_app(settings, catalogue=test_catalogue)
    counter = CheckoutCounter(app.state.engine)
    sqlite_path = module_db_url.removeprefix("sqlite:///") if module_db_url.startswith("sqlite") else None
    probe = ProbeServer(counter=counter, sqlite_path=sqlite_path)
    live = svc.live_server(app)
    app.state.settings = app.state.settings.model_copy(update={"lti_tool_url": live.url})
    with live:
        issuers = {}
        with transaction(app.state.sessions) as s:
            for name in ("a", "b", "c"):
                issuers[name] = f"https://lms-{name}.example"
                lti_service.create(s, name=name, issuer=issuers[name], client_id=CLIENT,
                                   auth_login_url=probe.url + "/auth", auth_token_url=probe.url + "/token",
                                   keyset_url=f"{probe.url}/jwks/{name}", deployment_ids=["d1"])
        try:
            yield SimpleNamespace(url=live.url, app=app, probe=probe, counter=counter, issuers=issuers)
        finally:
            probe.stop()
            counter.close()
    app.state.engine.dispose()


def _login(tool, client: httpx.Client, issuer: str, sub: str = "s-1") -> dict:
    resp = client.post(tool.url + "/lti/login", data={"iss": issuer, "login_hint": sub,
                                                      "target_link_uri": tool.url + "/lti/launch"})
    assert resp.status_code == 302, resp.text
    return {k: v[0] for k, v in parse_qs(urlsplit(resp.headers["location"]).query).items()}


def _claims(issuer: str, nonce: str, sub: str = "s-1") -> dict:
    now = int(time.time())
    return {"iss": issuer, "aud": CLIENT, "sub": sub, "nonce": nonce, "iat": now, "exp": now + 300,
            LTI + "message_type": "LtiResourceLinkRequest", LTI + "version": "1.3.0", LTI + "deployment_id": "d1",
            LTI + "roles": [LEARNER], LTI + "context": {"id": "course-P"}}


def test_the_keyset_is_fetched_with_no_database_connection_held(tool):
    client = httpx.Client(timeout=30, follow_redirects=False)
    login = _login(tool, client, tool.issuers["a"])
    token = tool.probe.sign(_claims(tool.issuers["a"], login["nonce"]))
    resp = client.post(tool.url + "/lti/launch", data={"id_token": token, "state": login["state"]})
    assert resp.status_code == 200, resp.text
    fetched = [(out, free) for path, out, free in tool.probe.seen if path == "/jwks/a"]
    assert fetched, "the launch did not fetch the keyset"
    assert all(out == 0 for out, _ in fetched), f"connections checked out during the keyset fetch: {fetched}"
    assert all(free is not False for _, free in fetched), "the SQLite write lock was held during the fetch"


def test_forged_launches_with_an_unknown_kid_share_one_keyset_fetch(tool):
    client = httpx.Client(timeout=30, follow_redirects=False)
    logins = [_login(tool, client, tool.issuers["b"], sub=f"forger-{i}") for i in range(FORGED)]
    cookies = dict(client.cookies)

    def forged(login: dict) -> httpx.Response:
        token = tool.probe.sign(_claims(tool.issuers["b"], login["nonce"]), kid="no-such-key")
        with httpx.Client(timeout=60, cookies=cookies) as c:
            return c.post(tool.url + "/lti/launch", data={"id_token": token, "state": login["state"]})

    with ThreadPoolExecutor(FORGED) as pool:
        answers = list(pool.map(forged, logins))
    assert {r.status_code for r in answers} == {400}
    assert {r.json()["error"]["code"] for r in answers} == {"lti_bad_signature"}
    assert tool.probe.fetches("/jwks/b") == 1  # one fetch for the interval (lti_jwks_refetch_s = 1 h here)


def test_the_keyset_cache_refetches_an_unknown_kid_once_per_interval_and_remembers_failures(tool):
    from service.lti.errors import LtiError
    from service.lti.tokens import JwksCache

    url, missing = tool.probe.url + "/jwks/unit", tool.probe.url + "/no-keyset"
    slow = JwksCache(httpx.Client(timeout=10), ttl_s=300, refetch_s=3600)
    for _ in range(5):
        with pytest.raises(LtiError, match="not in the platform's keyset"):
            slow.key(url, "unknown")
    assert slow.key(url, "probe-key-1").key_id == "probe-key-1" and slow.fetches == 1
    for _ in range(3):  # a keyset that cannot be read: one try per interval, the same 502 in between
        with pytest.raises(LtiError) as failed:
            slow.key(missing, "probe-key-1")
        assert failed.value.status_code == 502 and failed.value.code == "lti_jwks_unavailable"
    assert slow.fetches == 2
    eager = JwksCache(httpx.Client(timeout=10), ttl_s=300, refetch_s=0)
    for _ in range(3):
        with pytest.raises(LtiError):
            eager.key(url, "unknown")
    assert eager.fetches == 3  # with no interval every unknown kid refetches: the interval is what limits


def test_spent_and_expired_login_states_are_deleted(tool):
    from sqlalchemy import select

    from service.db import transaction, utcnow
    from service.lti.models import LtiLoginState

    client = httpx.Client(timeout=30, follow_redirects=False)
    stale, live, spent = (_login(tool, client, tool.issuers["c"], sub=f"s-{n}") for n in ("stale", "live", "spent"))
    with transaction(tool.app.state.sessions) as s:  # expired a second ago: within one TTL of its expiry
        s.get(LtiLoginState, stale["state"]).expires_at = utcnow() - dt.timedelta(seconds=1)
    token = tool.probe.sign(_claims(tool.issuers["c"], spent["nonce"], sub="s-spent"))
    assert client.post(tool.url + "/lti/launch", data={"id_token": token, "state": spent["state"]}).status_code == 200
    _login(tool, client, tool.issuers["c"], sub="s-next")  # every login deletes what has expired
    with tool.app.state.sessions() as s:
        left = set(s.scalars(select(LtiLoginState.state).where(
            LtiLoginState.state.in_([stale["state"], live["state"], spent["state"]]))))
    assert left == {live["state"]}


def test_logins_and_launches_are_limited_per_client_ip_and_per_platform(db_url, test_catalogue, svc, tmp_path):
    from fastapi.testclient import TestClient

    from service.app import create_app

    app = create_app(svc.settings(db_url, lti_key_dir=tmp_path / "keys", lti_rate_per_ip_per_min=3,
                                  lti_rate_per_platform_per_min=5), catalogue=test_catalogue)
    login = {"iss": "https://lms.example", "login_hint": "u", "target_link_uri": "x"}
    try:
        one, other, third = (TestClient(app, client=(ip, 4000)) for ip in ("10.0.0.1", "10.0.0.2", "10.0.0.3"))
        assert [one.post("/lti/login", data=login).status_code for _ in range(3)] == [400] * 3  # unknown platform
        limited = one.post("/lti/login", data=login)
        assert limited.status_code == 429 and limited.json()["error"]["code"] == "lti_rate_limited"
        assert int(limited.headers["retry-after"]) >= 1 and "this address" in limited.json()["error"]["message"]
        assert other.post("/lti/login", data=login).status_code == 400  # another address has its own limit
        assert other.post("/lti/login", data=login).status_code == 400  # this platform's 5th login
        by_platform = third.post("/lti/login", data=login)  # a fresh address, but the platform is at its limit
        assert by_platform.status_code == 429 and "this platform" in by_platform.json()["error"]["message"]
        assert third.post("/lti/login", data={**login, "iss": "https://other.example"}).status_code == 400
        launch = {"id_token": "junk", "state": "s"}  # launches have limits of their own
        assert [one.post("/lti/launch", data=launch).status_code for _ in range(3)] == [400] * 3
        assert one.post("/lti/launch", data=launch).status_code == 429
        page = one.post("/lti/launch", data=launch, headers={"Accept": "text/html"})  # a browser gets a page
        assert page.status_code == 429 and page.headers["content-type"].startswith("text/html")
        assert int(page.headers["retry-after"]) >= 1
    finally:
        app.state.engine.dispose()
