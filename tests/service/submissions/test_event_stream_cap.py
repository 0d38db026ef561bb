"""One identity holds at most EVENTS_MAX_STREAMS_PER_IDENTITY event streams open (real HTTP, SQLite and
PostgreSQL): one more is 429 `rate_limited` with Retry-After, other learners are not affected, the page's
stream counts against the same cap, and a stream gives its slot back when its client goes away."""
from __future__ import annotations

import contextlib
import re
import time

import httpx
import pytest

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
CAP = 2


@pytest.fixture(scope="module")
def server(module_db_url, test_catalogue, svc):
    from service.app import create_app

    app = create_app(svc.settings(module_db_url, events_max_streams_per_identity=CAP), catalogue=test_catalogue)
    tokens = svc.tokens(app.state.sessions)
    with svc.live_server(app) as live:  # no workers run: submissions stay queued, their streams stay open
        live.tokens = tokens
        live.subs = {}
        for who in ("alice", "bob"):
            made = httpx.post(f"{live.url}/api/v1/submissions", files={"notebook": ("nb.ipynb", svc.notebook())},
                              data={"exercise_id": "ch05.svc_sum"}, headers=svc.auth(tokens[who]), timeout=30)
            assert made.status_code == 202, made.text
            live.subs[who] = made.json()["id"]
        yield live
    app.state.engine.dispose()


@contextlib.contextmanager
def _stream(server, who: str, client: httpx.Client | None = None):
    """An open stream of `who`'s submission (its first frame read), or the refusal."""
    own = client is None
    client = client or httpx.Client(base_url=server.url, timeout=30,
                                    headers={"Authorization": f"Bearer {server.tokens[who]}"})
    path = f"/api/v1/submissions/{server.subs[who]}/events" if own else f"/submissions/{server.subs[who]}/events"
    try:
        with client.stream("GET", path) as resp:
            if resp.status_code == 200:  # keep the iterator: dropping it would close the stream
                resp.frames = resp.iter_text()
                assert next(resp.frames).startswith("retry:")
            yield resp
    finally:
        if own:
            client.close()


def _refused(resp: httpx.Response, *, api: bool = True) -> None:
    resp.read()
    assert resp.status_code == 429, resp.text
    assert int(resp.headers["retry-after"]) >= 1
    if api:
        assert resp.json()["error"]["code"] == "rate_limited"


def _open_count(server, identity_name: str) -> int:
    from sqlalchemy import select

    from service.auth.models import Identity

    with server.app.state.sessions() as s:
        iid = s.scalar(select(Identity.id).where(Identity.subject == identity_name))
        s.commit()
    slots = getattr(server.app.state, "stream_slots", None)
    return slots.open_count(iid) if slots else 0


def test_one_stream_more_than_the_cap_is_429_and_others_are_unaffected(server):
    with _stream(server, "alice") as a1, _stream(server, "alice") as a2:
        assert (a1.status_code, a2.status_code) == (200, 200)
        with _stream(server, "alice") as a3:
            _refused(a3)
        with _stream(server, "bob") as b1:
            assert b1.status_code == 200  # another learner has slots of their own
        page = httpx.Client(base_url=server.url, timeout=30)
        login = page.get("/login")
        page.post("/login", data={"token": server.tokens["alice"], "csrf": CSRF.search(login.text).group(1)})
        with _stream(server, "alice", client=page) as web:
            _refused(web, api=False)  # the page's stream counts against the same cap
        page.close()


def test_a_closed_stream_gives_its_slot_back(server):
    with _stream(server, "alice") as a1:
        assert a1.status_code == 200
        with _stream(server, "alice") as a2:
            assert a2.status_code == 200
    deadline = time.monotonic() + 20  # the server notices the disconnects (not a speed assertion)
    while _open_count(server, "alice") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _open_count(server, "alice") == 0
    with _stream(server, "alice") as again, _stream(server, "alice") as again2:
        assert (again.status_code, again2.status_code) == (200, 200)
