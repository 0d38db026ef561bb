"""The statistics pages over real HTTP (a live server, SQLite and PostgreSQL): an exercise's numbers per
learner, a check's failed attempts, a course side by side with learners at risk, bulk regrade behind its
confirmation page, both languages, lenient parameters and course scope. Rows: stats_support.py."""

from __future__ import annotations

import re

import httpx
import pytest
from stats_support import COURSE, EXERCISE, LEARNERS, seed

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
PAGE = f"/teach/exercises/{EXERCISE}"


def _client(url: str, token: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    page = client.get("/login")
    client.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1)})
    return client


@pytest.fixture(scope="module")
def site(live_api):
    rows = seed(live_api.app.state.sessions)
    return {"teacher": _client(live_api.url, rows["token"]), "ids": rows["ids"], "live": live_api}


def _text(html: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}"[^>]*>(.*?)</', html, re.S)
    assert found, element_id
    return found.group(1).strip()


def test_the_exercise_page_counts_each_learner_once(site):
    html = site["teacher"].get(PAGE).text
    assert _text(html, "n-learners") == str(len(LEARNERS)) and _text(html, "n-submitted") == "3"
    assert _text(html, "n-missing") == "3" and _text(html, "n-subs") == "4"  # every attempt: s02 twice
    counts = [int(c) for c in re.findall(r'class="bar" data-count="(\d+)"', html)]
    assert counts == [1, 0, 0, 0, 0, 0, 1, 0, 0, 1]  # s03 0 %, s02's best 66.7 %, s01 100 %
    assert 'role="img" aria-labelledby="histogram-title"' in html and 'id="histogram-title"' in html
    rows = dict(re.findall(r'<tr data-check="(\w+)">.*?class="rate">([^<]+)<', html, re.S))
    assert rows == {"total_value": "67%", "word_value": "33%"}
    links = re.findall(r'class="failures" href="([^"]+)">(\d+)<', html)
    assert links == [(f"{PAGE}/failures?check=total_value", "1"), (f"{PAGE}/failures?check=word_value", "2")]
    waits = re.search(r'data-row="grading_time">.*?</tr>', html, re.S).group(0)
    assert "9.0 s" in waits and "no data" not in waits  # p95 of 5, 7, 9 s
    assert _text(html, "median") == "7.0 s"


def test_failed_check_links_list_the_best_attempts(site):
    ids = site["ids"]
    page = site["teacher"].get(f"{PAGE}/failures", params={"check": "word_value"})
    assert page.status_code == 200
    assert re.findall(r'<tr data-submission="(\w+)">', page.text) == [ids[3], ids[2]]  # 0/3 first, then 2/3
    assert f'href="/teach/submissions/{ids[1]}"' not in page.text  # s02's first try is not their best
    bad = site["teacher"].get(f"{PAGE}/failures", params={"check": "<b>nope</b>"})
    assert bad.status_code == 422 and "total_value, word_value" in bad.text and "<b>nope" not in bad.text


def test_the_course_page_side_by_side_and_at_risk(site):
    teacher = site["teacher"]
    html = teacher.get(f"/teach/courses/{COURSE}/stats").text
    row = re.search(rf'<tr data-exercise="{re.escape(EXERCISE)}">.*?</tr>', html, re.S).group(0)
    assert "3/6" in row and "66.7 %" in row and "67%" in row  # 2 of 3 submitted at least 50 %
    risky = re.findall(r'<tr data-user="(s\d+)" data-reason="(\w+)">', html)
    # totals of 12 points: s01 3, s02 2, s03 0, s04 3: all below 50 %; s05 and s06 submitted nothing
    assert risky[:2] == [("s05", "nothing_submitted"), ("s06", "nothing_submitted")]
    assert [u for u, _ in risky[2:]] == ["s03", "s02", "s01", "s04"]
    lenient = teacher.get(f"/teach/courses/{COURSE}/stats", params={"threshold": "abc"})
    assert lenient.status_code == 200 and 'value="50"' in lenient.text
    low = teacher.get(f"/teach/courses/{COURSE}/stats", params={"threshold": "10"}).text
    assert re.findall(r'data-user="(s\d+)"', low) == ["s05", "s06", "s03"]
    assert f'href="/teach/courses/{COURSE}/stats"' in teacher.get(f"/teach/courses/{COURSE}/gradebook").text
    assert f'href="/teach/courses/{COURSE}/stats"' in teacher.get("/teach").text
    assert teacher.get("/teach/courses/elsewhere/stats").status_code == 403


def test_chinese_words(site):
    teacher = site["teacher"]
    teacher.cookies.set("tg_lang", "zh")
    try:
        html = teacher.get(PAGE).text
        course = teacher.get(f"/teach/courses/{COURSE}/stats").text
    finally:
        teacher.cookies.delete("tg_lang")
    assert "每位学员只计一次" in html and "排队等待" in html and "7.0 秒" in html
    assert "需要关注的学员" in course and "尚未提交任何作业" in course


def test_bulk_regrade_confirms_then_says_what_it_skipped(site):
    teacher = site["teacher"]
    confirm = teacher.get(f"{PAGE}/regrade")
    assert confirm.status_code == 200
    assert "3 run(s) will be queued" in confirm.text and "1 submission(s) will be skipped" in confirm.text
    assert 'data-reason="already_pending"' in confirm.text  # s03's run is still queued
    refused = teacher.post(f"{PAGE}/regrade", data={"csrf": "x" * 64})
    assert refused.status_code == 403
    token = CSRF.search(confirm.text).group(1)
    done = teacher.post(f"{PAGE}/regrade", data={"csrf": token})
    assert done.status_code == 303 and done.headers["location"] == f"{PAGE}?queued=3&skip_already_pending=1"
    html = teacher.get(done.headers["location"]).text
    assert "3 run(s) queued; 1 skipped." in html and re.search(r'data-reason="already_pending">[^<]*: 1<', html)
    again = teacher.get(f"{PAGE}/regrade").text
    assert "0 run(s) will be queued" in again and 'id="confirm-regrade"' not in again and 'id="nothing"' in again


def test_a_learner_gets_no_statistics(site, live_api):
    alice = _client(live_api.url, live_api.tokens["alice"])
    for path in (PAGE, f"{PAGE}/failures?check=total_value", f"/teach/courses/{COURSE}/stats", f"{PAGE}/regrade"):
        assert alice.get(path).status_code == 403, path
