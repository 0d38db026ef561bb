"""The learner page's "attempts left" is what the intake's limit leaves (service/submissions/batch.py:
attempts_left), over real HTTP on SQLite and PostgreSQL: superseded attempts were never graded and do not
count (the page used to count them and show 0 while uploads were still accepted), and a course's staff are
unlimited there."""
from __future__ import annotations

import re

import httpx
import pytest

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
LEFT = re.compile(r'<tr id="ex-ch05\.svc_long".*?<td class="attempts"[^>]*>[^<]*</td>\s*<td[^>]*>([^<]*)</td>', re.S)
EXERCISE = "ch05.svc_long"


@pytest.fixture(scope="module")
def live(module_db_url, test_catalogue, svc):
    from service.app import create_app

    app = create_app(svc.settings(module_db_url, max_attempts_per_exercise=2, supersede_queued="all"),
                     catalogue=test_catalogue)
    tokens = svc.tokens(app.state.sessions)
    with svc.live_server(app) as server:  # no worker: uploads stay queued, so each supersedes the one before
        server.tokens = tokens
        yield server
    app.state.engine.dispose()


def _upload(live, svc, user: str) -> httpx.Response:
    return httpx.post(f"{live.url}/api/v1/submissions", headers=svc.auth(live.tokens[user]), timeout=30,
                      files={"notebook": ("s.ipynb", svc.notebook(EXERCISE), "application/x-ipynb+json")})


def _left_on_page(live, user: str) -> str:
    client = httpx.Client(base_url=live.url, timeout=30)
    page = client.get("/login")
    client.post("/login", data={"token": live.tokens[user], "csrf": CSRF.search(page.text).group(1)})
    found = LEFT.search(client.get("/exercises").text)
    assert found, "the exercises page has no row for the exercise"
    return found.group(1).strip()


def test_attempts_left_counts_as_the_limit_does(live, svc):
    assert _left_on_page(live, "alice") == "2"
    assert [_upload(live, svc, "alice").status_code for _ in range(2)] == [202, 202]  # the first is superseded
    assert _left_on_page(live, "alice") == "1"  # the old page said 0
    assert _upload(live, svc, "alice").status_code == 202  # ... and the limit accepts one more indeed
    assert _left_on_page(live, "bob") == "2"  # counted per identity


def test_a_courses_staff_are_unlimited_there(live, svc):
    assert [_upload(live, svc, "teacher").status_code for _ in range(3)] == [202] * 3
    assert _left_on_page(live, "teacher") == "unlimited"
