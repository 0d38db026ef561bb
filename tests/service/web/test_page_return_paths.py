"""Where a browser lands after reloading or switching language: a page, never an API error body, and the
same page with its query (sort, filters) kept. Real HTTP, real sessions."""

from __future__ import annotations

import re
from urllib.parse import quote

from test_pages import sign_in

LANG_LINK = re.compile(r'href="/lang/zh\?next=([^"]+)"')


def test_get_submit_after_a_rejected_upload_goes_to_the_upload_page(live_api):
    alice = sign_in(live_api.url, live_api.tokens["alice"])
    rejected = alice.post("/submit", data={"exercise_id": "ch05.svc_sum", "csrf": "x"})  # a bad form: a page
    assert rejected.status_code == 403 and "text/html" in rejected.headers["content-type"]
    assert LANG_LINK.search(rejected.text).group(1) == "/submit"  # a POST's page links back to its path only
    again = alice.get("/submit")  # reload, or the language switch's way back
    assert again.status_code == 303 and again.headers["location"] == "/exercises"
    assert "text/html" in alice.get("/submit", follow_redirects=True).headers["content-type"]


def test_the_language_switch_keeps_the_page_and_its_query(live_api):
    teacher = sign_in(live_api.url, live_api.tokens["teacher"])
    path = "/teach/courses/c1/gradebook?sort=total&dir=desc&q=al"
    page = teacher.get(path)
    assert page.status_code == 200
    back = LANG_LINK.search(page.text).group(1)
    assert back == quote(path, safe="/")
    switched = teacher.get(f"/lang/zh?next={back}")
    assert switched.status_code == 303 and switched.headers["location"] == path


def test_only_the_page_s_view_state_is_carried_back(live_api):
    teacher = sign_in(live_api.url, live_api.tokens["teacher"])
    page = teacher.get("/teach/courses/c1/gradebook?sort=total&error=Re-enter+at+https://evil.example/login")
    back = LANG_LINK.search(page.text).group(1)
    assert back == quote("/teach/courses/c1/gradebook?sort=total", safe="/") and "evil" not in page.text
