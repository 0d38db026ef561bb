"""Nothing per learner may be kept by a browser or proxy cache: every API answer (grades, tokens, the gradebook
as JSON and CSV), the event streams and the pages carry `Cache-Control: no-store`; CSV downloads also
`nosniff`. Real HTTP against the real app (uvicorn on a socket)."""

from __future__ import annotations

import re

import httpx

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def _bearer(live_api, who: str) -> httpx.Client:
    return httpx.Client(base_url=live_api.url, timeout=30,
                        headers={"Authorization": f"Bearer {live_api.tokens[who]}"})


def test_api_answers_with_grades_are_never_stored(live_api, add_submission):
    from service.db import transaction

    with transaction(live_api.app.state.sessions) as s:
        sub, _ = add_submission(s, user="alice", course="c1")
        sid = sub.id
    alice, teacher = _bearer(live_api, "alice"), _bearer(live_api, "teacher")
    for client, path in (
        (alice, f"/api/v1/submissions/{sid}"),
        (alice, "/api/v1/submissions"),
        (alice, "/api/v1/me"),
        (alice, "/api/v1/tokens"),
        (teacher, "/api/v1/courses/c1/gradebook"),
        (teacher, f"/api/v1/submissions/{sid}/overrides"),
    ):
        resp = client.get(path)
        assert resp.status_code == 200, (path, resp.text)
        assert resp.headers.get("cache-control") == "no-store", path
    csv = teacher.get("/api/v1/courses/c1/gradebook", params={"format": "csv"})
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    assert csv.headers.get("cache-control") == "no-store" and csv.headers.get("x-content-type-options") == "nosniff"


def test_the_gradebook_csv_page_download_is_not_stored_or_sniffed(live_api):
    client = httpx.Client(base_url=live_api.url, timeout=30)
    page = client.get("/login")
    signed = client.post("/login", data={"token": live_api.tokens["teacher"], "csrf": CSRF.search(page.text).group(1),
                                         "next": "/exercises"})
    assert signed.status_code == 303
    csv = client.get("/teach/courses/c1/gradebook.csv")
    assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
    assert csv.headers.get("cache-control") == "no-store" and csv.headers.get("x-content-type-options") == "nosniff"
    assert client.get("/teach/courses/c1/gradebook").headers.get("cache-control") == "no-store"
