"""Intake under concurrent clients on a real HTTP server: every accepted submission is stored exactly
once with its one job and "queued" event, and a retried upload racing itself makes one submission."""

from __future__ import annotations

import concurrent.futures as cf

import httpx
from sqlalchemy import text

URL = "/api/v1/submissions"


def _post(live, svc, token: str, nb: bytes, headers: dict | None = None) -> httpx.Response:
    with httpx.Client(base_url=live.url, timeout=60) as client:
        return client.post(URL, files={"notebook": ("s.ipynb", nb)}, headers=svc.auth(token, **(headers or {})))


def _rows(live, sql: str, **params) -> list:
    with live.app.state.engine.connect() as conn:
        return list(conn.execute(text(sql), params).all())


def test_concurrent_clients_each_submission_stored_once_with_one_job(live_api, svc):
    nb = svc.notebook()
    users = ["alice", "bob", "carol", "teacher"]
    with cf.ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda i: (users[i % 4], _post(live_api, svc, live_api.tokens[users[i % 4]], nb)),
                                  range(40)))
    assert [r.status_code for _, r in responses] == [202] * 40, [r.text for _, r in responses if r.status_code != 202]
    ids = [r.json()["id"] for _, r in responses]
    assert len(set(ids)) == 40
    stored = {row[0]: row[1:] for row in _rows(
        live_api,
        "SELECT s.id, s.status, (SELECT count(*) FROM jobs j WHERE j.submission_id = s.id AND j.status = 'queued'), "
        "(SELECT count(*) FROM progress_events e WHERE e.submission_id = s.id AND e.event = 'queued' AND e.run = 1) "
        "FROM submissions s")}
    assert all(stored[i] == ("queued", 1, 1) for i in ids), {i: stored.get(i) for i in ids}
    if live_api.app.state.engine.dialect.name == "sqlite":  # one writer: attempts are numbered without gaps
        for user in users:
            attempts = sorted(r.json()["attempt"] for u, r in responses if u == user)
            assert attempts[-10:] == list(range(attempts[-10], attempts[-10] + 10))


def test_a_retry_racing_itself_makes_one_submission(live_api, svc):
    """The same Idempotency-Key sent eight times at once: one 202, the rest 200 with the same id (on
    PostgreSQL the losers used to fail at the insert with a 500)."""
    nb = svc.notebook()
    token = live_api.tokens["bob"]
    with cf.ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda _: _post(live_api, svc, token, nb, {"Idempotency-Key": "race-1"}), range(8)))
    assert sorted(r.status_code for r in responses) == [200] * 7 + [202], [r.text for r in responses]
    assert len({r.json()["id"] for r in responses}) == 1
    (sub_id,) = {r.json()["id"] for r in responses}
    assert _rows(live_api, "SELECT count(*) FROM submissions WHERE idempotency_key = 'race-1'") == [(1,)]
    assert _rows(live_api, "SELECT count(*) FROM jobs WHERE submission_id = :s", s=sub_id) == [(1,)]
