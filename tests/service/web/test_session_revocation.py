"""Signing out ends the session on the server, over real HTTP (SQLite and PostgreSQL): the old cookie,
replayed by whoever kept a copy, is refused at once (it used to work until its 12 h expiry), other
sessions of the same learner stay signed in, and revocations of expired sessions are cleaned up."""
from __future__ import annotations

import datetime as dt
import re

import httpx
import pytest
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


def test_two_sign_outs_of_one_session_at_once_both_succeed(db_url, sessions):
    """Two sign-outs of the same cookie in flight together (a double click, or the victim and whoever copied
    the cookie): on PostgreSQL both saw no revocation yet, both inserted it, and the second was a 500
    (IntegrityError). SQLite serialises the two at their first write, so only PostgreSQL could fail."""
    import threading
    import time as clock

    from sqlalchemy import text

    from service.web import sessions as web_sessions
    from service.web.models import RevokedWebSession

    if not db_url.startswith("postgresql"):
        pytest.skip("SQLite's single writer already orders the two sign-outs")
    ws = web_sessions.read_web_session(
        secret="s" * 40, cookie=web_sessions.create_web_session(secret="s" * 40, identity_id=1))
    first = sessions()
    web_sessions.revoke_web_session(first, ws=ws)
    first.flush()  # its row is written, not committed: the second sign-out does not see it
    outcome: list[BaseException | None] = []

    def second() -> None:
        try:
            with sessions() as s:
                web_sessions.revoke_web_session(s, ws=ws)
                s.commit()  # waits for the first one's row lock
            outcome.append(None)
        except BaseException as exc:  # the test reports it
            outcome.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    waiting = text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                   "AND query LIKE '%web_session_revocations%' AND pid <> pg_backend_pid()")
    with sessions() as watcher:  # wait (no time limit asserted) until the second one waits for the first
        while thread.is_alive() and not watcher.scalar(waiting):
            watcher.rollback()
            clock.sleep(0.05)
        watcher.rollback()
    first.commit()
    first.close()
    thread.join(60)
    assert outcome == [None], outcome
    with sessions() as s:
        assert s.scalar(select(func.count()).select_from(RevokedWebSession)) == 1
        s.commit()
