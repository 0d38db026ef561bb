"""While the database cannot be reached every route answers 503 with Retry-After and the error schema (API and
pages, before and after the credential cache expires); a real bug in a query stays a 500."""
from __future__ import annotations

import re
import socket

import pytest
from sqlalchemy import text

from service import bootstrap
from service.db import make_engine, read_sessions

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def _unreachable(state) -> None:
    """Point the app at a PostgreSQL port nothing listens on: every query now fails to connect."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    engine = make_engine(f"postgresql+psycopg://postgres@127.0.0.1:{port}/gone")
    state.sessions, state.read_sessions = bootstrap.sessions(engine), read_sessions(engine)


def _assert_unavailable(resp, retry_after: str = "5") -> None:
    assert resp.status_code == 503, resp.text
    assert resp.headers["retry-after"] == retry_after
    assert resp.json()["error"]["code"] == "database_unavailable"
    assert "retry in" in resp.json()["error"]["message"]


def test_api_routes_answer_503_with_retry_after_while_the_database_is_down(api, svc):
    token = api.tokens["alice"]
    sid = api.post("/api/v1/submissions", files={"notebook": ("n.ipynb", svc.notebook())},
                   headers=svc.auth(token)).json()["id"]
    assert api.get(f"/api/v1/submissions/{sid}", headers=svc.auth(token)).status_code == 200  # credential cached
    _unreachable(api.app_state)
    _assert_unavailable(api.get(f"/api/v1/submissions/{sid}", headers=svc.auth(token)))  # the route's own query
    _assert_unavailable(api.post("/api/v1/submissions", files={"notebook": ("n.ipynb", svc.notebook())},
                                 headers=svc.auth(token, **{"Idempotency-Key": "k-1"})))
    api.app_state.credential_cache.clear()  # as when its auth_cache_s ran out
    _assert_unavailable(api.get("/api/v1/submissions", headers=svc.auth(token)))  # the credential lookup
    zh = api.get(f"/api/v1/submissions/{sid}", headers=svc.auth(token, **{"Accept-Language": "zh"}))
    assert zh.status_code == 503 and "秒后重试" in zh.json()["error"]["message"]
    ready = api.get("/readyz")
    assert ready.status_code == 503 and ready.headers["retry-after"] == "5"


def test_pages_answer_503_with_retry_after_while_the_database_is_down(api):
    page = api.get("/login")
    signed = api.post("/login", data={"token": api.tokens["alice"], "csrf": CSRF.search(page.text).group(1)},
                      follow_redirects=False)
    assert signed.status_code == 303
    assert api.get("/exercises").status_code == 200
    _unreachable(api.app_state)
    resp = api.get("/exercises")
    assert resp.status_code == 503 and resp.headers["retry-after"] == "5"
    assert "text/html" in resp.headers["content-type"] and "retry in 5 s" in resp.text


def test_a_query_bug_is_still_a_500_not_a_503(api, svc):
    token = api.tokens["alice"]
    api.get("/api/v1/submissions", headers=svc.auth(token))  # credential cached: the guard does not query
    engine = api.app_state.engine
    if engine.dialect.name != "sqlite":
        pytest.skip("drops a table of the shared PostgreSQL schema otherwise")
    with engine.begin() as conn:
        conn.execute(text("PRAGMA foreign_keys=OFF"))
        conn.execute(text("DROP TABLE submissions"))  # "no such table": OperationalError in SQLite, yet a bug
    from fastapi.testclient import TestClient

    with TestClient(api.app, raise_server_exceptions=False) as client:
        resp = client.get(f"/api/v1/submissions/{'a' * 32}", headers=svc.auth(token))
    assert resp.status_code == 500 and resp.json()["error"]["code"] == "internal_error"
