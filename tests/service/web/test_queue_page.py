"""The queue page over real HTTP without a browser (SQLite and PostgreSQL): its window parameter is lenient,
the counts come from the rows, and every word is in the page's language."""

from __future__ import annotations

import re

import httpx
import pytest

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def _signed_in(url: str, token: str, lang: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30, cookies={"tg_lang": lang})
    page = client.get("/login")
    resp = client.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1), "next": "/exercises"})
    assert resp.status_code == 303, resp.text
    return client


@pytest.mark.parametrize(
    ("lang", "words"),
    [("en", ("Failures and retries by cause", "Dead workers")), ("zh", ("按原因统计的失败与重试", "失联评分节点"))],
)
def test_the_queue_page_window_is_lenient_and_worded(live_api, svc, lang, words):
    from service.db import transaction
    from service.queue import service as queue

    with transaction(live_api.app.state.sessions) as s:
        queue.beat(s, worker_id=f"wq-{lang}", host="h", pid=1, slots=1, devices=0, device_kind="cpu")
    client = _signed_in(live_api.url, live_api.tokens["teacher"], lang)
    for hours, window in (
        ("1", 1),
        ("168", 168),
        ("abc", 24),
        ("²", 24),
        ("9" * 400, 24),
        ("0", 24),
        ("999", 24),
        ("", 24),
    ):
        page = client.get("/teach/queue", params={"hours": hours})
        assert page.status_code == 200, (hours, page.text[:300])
        assert f'href="/teach/queue?hours={window}" class="on" aria-current="page"' in page.text, hours
        assert words[0] in page.text and words[1] in page.text
        assert f'data-worker="wq-{lang}"' in page.text
    learner = _signed_in(live_api.url, live_api.tokens["alice"], lang)
    assert learner.get("/teach/queue").status_code == 403
