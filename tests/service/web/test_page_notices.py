"""`?error=` on a page is a code from a fixed catalogue (service/web/notices.py), never text the page shows as
its own: anyone can send a learner or an instructor a link. Real HTTP against the real app."""

from __future__ import annotations

import re

import httpx

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
PHISH = "Your account is locked. Re-enter your token at https://evil.example/login"
ERROR_P = re.compile(r'<p class="error" id="error">(.*?)</p>', re.S)


def sign_in(url: str, token: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    page = client.get("/login")
    resp = client.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1), "next": "/exercises"})
    assert resp.status_code == 303, resp.text
    return client


def test_the_exercises_page_shows_only_catalogued_messages(live_api):
    learner = sign_in(live_api.url, live_api.tokens["alice"])
    page = learner.get("/exercises", params={"error": PHISH})
    assert page.status_code == 200 and "ch05.svc_sum" in page.text
    assert PHISH not in page.text and "evil.example" not in page.text and not ERROR_P.search(page.text)
    known = learner.get("/exercises", params={"error": "bad_form"})
    assert ERROR_P.search(known.text).group(1).startswith("The form expired")


def test_the_staff_submission_page_shows_only_catalogued_messages(live_api, add_submission):
    from service.db import transaction

    with transaction(live_api.app.state.sessions) as s:
        sub, _ = add_submission(s, user="alice", course="c1")
        sid = sub.id
    teacher = sign_in(live_api.url, live_api.tokens["teacher"])
    page = teacher.get(f"/teach/submissions/{sid}", params={"error": PHISH})
    assert page.status_code == 200 and sid in page.text
    assert PHISH not in page.text and not ERROR_P.search(page.text)
    teacher.cookies.set("tg_lang", "zh")
    known = teacher.get(f"/teach/submissions/{sid}", params={"error": "bad_form"})
    assert ERROR_P.search(known.text).group(1) == "表单已过期或并非来自本站；请刷新页面后重试。"


def test_the_login_page_still_shows_its_own_codes_and_nothing_else(live_api):
    client = httpx.Client(base_url=live_api.url, timeout=30)
    assert ERROR_P.search(client.get("/login", params={"error": "bad_token"}).text).group(1).startswith(
        "That token is unknown"
    )
    assert not ERROR_P.search(client.get("/login", params={"error": PHISH}).text)
