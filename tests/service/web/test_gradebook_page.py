"""The gradebook page over real HTTP (a live server, SQLite and PostgreSQL): every member's row with missing
work shown, sort on any column either way, search, exercise and status filters, pagination, lenient query
strings, both languages, and the page's CSV with every learner x exercise row whatever the filters."""

from __future__ import annotations

import csv
import io
import re

import httpx
import pytest

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
COURSE = "gbw"
LEARNERS = 55  # more than a page (50)
URL = f"/teach/courses/{COURSE}/gradebook"


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr data-user="([^"]+)">', html)


def _cell(html: str, user: str, exercise_id: str) -> str:
    found = re.search(rf'<td class="cell st-(\w+)" data-user="{user}" data-exercise="{re.escape(exercise_id)}"', html)
    assert found, (user, exercise_id)
    return found.group(1)


@pytest.fixture(scope="module")
def teacher(live_api):
    from service.auth.service import create_token, get_or_create_identity, set_membership
    from service.db import transaction
    from service.queue import service as queue
    from service.submissions.models import Submission

    def attempt(s, who, exercise_id, score, status="graded"):
        sub = Submission(
            id=f"gbw{len(made):04d}",
            identity_id=who.id,
            user=who.name,
            course=COURSE,
            exercise_id=exercise_id,
            attempt=1,
            notebook=b"{}",
            status=status,
            score=score,
            max_score=3.0,
        )
        made.append(sub)
        s.add(sub)
        s.flush()
        queue.enqueue(s, submission_id=sub.id, lane="short", priority=0, devices=0, world_size=1, max_attempts=3)

    made: list = []
    with transaction(live_api.app.state.sessions) as s:
        token = create_token(s, user="gb_tess", role="instructor", course=COURSE)
        for n in range(LEARNERS):
            who = get_or_create_identity(s, issuer="titangrade", subject=f"p{n:02d}")
            set_membership(s, identity=who, course=COURSE, role="learner")
        ids = {
            i.subject: i
            for i in [get_or_create_identity(s, issuer="titangrade", subject=f"p{n:02d}") for n in (3, 7, 9)]
        }
        attempt(s, ids["p03"], "ch05.svc_sum", 3.0)
        attempt(s, ids["p03"], "ch05.svc_sum", 1.0)  # later and lower: `latest` shows it
        attempt(s, ids["p07"], "ch05.svc_sum", 2.0)
        attempt(s, ids["p07"], "ch05.svc_long", 3.0)
        attempt(s, ids["p09"], "ch05.svc_long", None, status="not_gradable")
    client = httpx.Client(base_url=live_api.url, timeout=30)
    page = client.get("/login")
    client.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1)})
    return client


def test_every_member_has_a_row_and_missing_work_shows(teacher):
    first = teacher.get(URL)
    assert first.status_code == 200
    rows = _rows(first.text)
    assert rows == [f"p{n:02d}" for n in range(50)]  # the first page, by name
    assert "Learners 1-50 of 55" in first.text and 'id="next"' in first.text and 'id="prev"' not in first.text
    assert [_cell(first.text, "p00", ex) for ex in ("ch05.svc_broken", "ch05.svc_sum")] == ["missing"] * 2
    assert _cell(first.text, "p03", "ch05.svc_sum") == "graded" and _cell(first.text, "p09", "ch05.svc_long") == (
        "not_gradable"
    )
    assert first.text.count('data-status="missing"') == 50 * 4 - 4
    second = teacher.get(URL, params={"page": "2"})
    assert _rows(second.text) == [f"p{n:02d}" for n in range(50, 55)] and 'id="prev"' in second.text


def test_sort_either_way_on_an_exercise_and_on_the_total(teacher):
    by_sum = _rows(teacher.get(URL, params={"sort": "ch05.svc_sum", "dir": "desc"}).text)
    assert by_sum[:3] == ["p03", "p07", "p00"]  # 3, 2, then no score (names in order)
    up = _rows(teacher.get(URL, params={"sort": "ch05.svc_sum", "dir": "asc", "per_page": "100"}).text)
    assert up[-2:] == ["p07", "p03"]
    latest = _rows(teacher.get(URL, params={"sort": "total", "dir": "desc", "policy": "latest"}).text)
    assert latest[:2] == ["p07", "p03"]  # 5 > 1 under latest
    html = teacher.get(URL, params={"sort": "total", "dir": "desc"}).text
    assert 'aria-sort="descending"' in html and re.search(r'href="[^"]*sort=total[^"]*" id="sort-total"', html)
    assert "dir=desc" not in re.search(r'href="([^"]*)" id="sort-total"', html).group(1)  # the link flips


def test_search_and_filters(teacher):
    assert _rows(teacher.get(URL, params={"q": "P0"}).text) == [f"p{n:02d}" for n in range(10)]
    assert _rows(teacher.get(URL, params={"status": "not_gradable"}).text) == ["p09"]
    only = teacher.get(URL, params={"exercise": "ch05.svc_long", "status": "graded"}).text
    assert _rows(only) == ["p07"] and 'data-exercise="ch05.svc_sum"' not in only
    missing_sum = _rows(
        teacher.get(URL, params={"exercise": "ch05.svc_sum", "status": "missing", "per_page": "200"}).text
    )
    assert len(missing_sum) == LEARNERS - 2 and "p03" not in missing_sum


@pytest.mark.parametrize(
    "params",
    [
        {"page": "x"},
        {"page": "999"},
        {"sort": "nope", "dir": "up"},
        {"per_page": "-1", "status": "<b>"},
        {"exercise": "ch99.none"},
    ],
)
def test_a_bad_parameter_shows_the_default_page(teacher, params):
    resp = teacher.get(URL, params=params)
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html") and _rows(resp.text)


def test_chinese_labels(teacher):
    teacher.cookies.set("tg_lang", "zh")
    try:
        html = teacher.get(URL).text
    finally:
        teacher.cookies.delete("tg_lang")
    assert "未提交" in html and "总分" in html and "学员姓名" in html and "第 1-50 名学员" in html


def test_the_pages_csv_has_every_row_whatever_the_filters(teacher):
    sheet = teacher.get(f"{URL}.csv", params={"status": "graded", "q": "p03", "policy": "latest"})
    assert sheet.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(sheet.text)))
    assert len(rows) == LEARNERS * 4 and sum(r["status"] == "missing" for r in rows) == LEARNERS * 4 - 4
    assert next(r for r in rows if r["subject"] == "p03" and r["exercise_id"] == "ch05.svc_sum")["score"] == "1.0"
