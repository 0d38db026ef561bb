"""Signing out ends the session on the server, over real HTTP (SQLite and PostgreSQL): the old cookie,
replayed by whoever kept a copy, is refused at once (it used to work until its 12 h expiry), other
sessions of the same learner stay signed in, and revocations of expired sessions are cleaned up."""
from __future__ import annotations

import datetime as dt
import re

import httpx
from sqlalchemy import func, select

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def _sign_in(url: str, token: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    page = client.get("/login")
    resp = client.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1)})
    assert resp.status_code == 303 and resp.headers["location"] == "/exercises", resp.text
    return client


def _replay(url: str, cookie: str) -> httpx.Response:
    return httpx.get(f"{url}/exercises", cookies={"tg_session": cookie}, timeout=30)


def test_a_signed_out_cookie_is_refused_even_if_copied(live_api):
    from service.web.models import RevokedWebSession

    first = _sign_in(live_api.url, live_api.tokens["bob"])
    second = _sign_in(live_api.url, live_api.tokens["bob"])  # another browser of the same learner
    copied = first.cookies["tg_session"]
    assert _replay(live_api.url, copied).status_code == 200
    csrf = CSRF.search(first.get("/exercises").text).group(1)
    out = first.post("/logout", data={"csrf": csrf})
    assert out.status_code == 303 and out.headers["location"] == "/login"
    replayed = _replay(live_api.url, copied)
    assert replayed.status_code == 303 and replayed.headers["location"].startswith("/login"), replayed.text
    assert httpx.get(f"{live_api.url}/submissions/nope/events", cookies={"tg_session": copied},
                     timeout=30).status_code == 303  # the event stream too
    assert second.get("/exercises").status_code == 200  # only the session that signed out ended
    with live_api.app.state.sessions() as s:
        assert s.scalar(select(func.count()).select_from(RevokedWebSession)) >= 1
        s.commit()


def test_expired_revocations_are_removed_on_the_next_sign_out(live_api):
    from service.db import transaction
    from service.web.models import RevokedWebSession

    with transaction(live_api.app.state.sessions) as s:
        long_ago = dt.datetime(2000, 1, 1)
        s.add(RevokedWebSession(nonce="long-gone", expires_at=long_ago, revoked_at=long_ago))
    client = _sign_in(live_api.url, live_api.tokens["alice"])
    assert client.post("/logout", data={"csrf": CSRF.search(client.get("/exercises").text).group(1)}).status_code == 303
    with live_api.app.state.sessions() as s:
        assert s.get(RevokedWebSession, "long-gone") is None
        s.commit()
