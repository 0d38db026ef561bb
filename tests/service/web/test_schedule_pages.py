"""The deadlines pages over real HTTP (a live server, SQLite and PostgreSQL): an instructor sets the course's
zone, a schedule and an extension through CSRF-checked forms (times typed in the course's zone), a bad
form is a page naming the problem; a learner sees the due time in that zone, a refused upload, and the
submission time stamp with its lateness."""

from __future__ import annotations

import datetime as dt
import re

import httpx

from service.db import transaction, utcnow
from service.submissions.models import Submission

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
PAGE = "/teach/courses/c1/schedule"


def _sign_in(url: str, token: str, lang: str = "en") -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30, cookies={"tg_lang": lang})
    page = client.get("/login")
    resp = client.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1), "next": "/exercises"})
    assert resp.status_code == 303, resp.text
    return client


def _csrf(client: httpx.Client, path: str) -> str:
    return CSRF.search(client.get(path).text).group(1)


def test_an_instructor_schedules_and_a_learner_sees_it(live_api, svc):
    teacher = _sign_in(live_api.url, live_api.tokens["teacher"])
    page = teacher.get(PAGE)
    assert page.status_code == 200 and 'id="sched-ch05.svc_sum"' in page.text and "(UTC)" in page.text
    assert 'href="/teach/courses/c1/schedule"' in teacher.get("/teach").text
    assert 'id="schedule-link"' in teacher.get("/teach/courses/c1/gradebook").text
    forged = teacher.post(f"{PAGE}/ch05.svc_sum", data={"csrf": "guess", "due_at": "2026-01-01T00:00"})
    assert forged.status_code == 403
    token = _csrf(teacher, PAGE)
    zone = teacher.post("/teach/courses/c1/timezone", data={"csrf": token, "zone": "Asia/Shanghai"})
    assert zone.status_code == 303
    bad_zone = teacher.post("/teach/courses/c1/timezone", data={"csrf": token, "zone": "Nowhere/Land"})
    assert bad_zone.status_code == 422 and "IANA" in bad_zone.text
    local = (utcnow() + dt.timedelta(hours=8) - dt.timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M")  # 2 h ago there
    set_ = teacher.post(f"{PAGE}/ch05.svc_sum", data={"csrf": token, "due_at": local, "kind": "closed"})
    assert set_.status_code == 303 and set_.headers["location"].endswith("?saved=1")
    shown = teacher.get(PAGE).text
    assert f"{local.replace('T', ' ')} +0800" in shown and "Asia/Shanghai" in shown
    bad = teacher.post(f"{PAGE}/ch05.svc_gpu", data={"csrf": token, "due_at": "soon", "kind": "per_day"})
    assert bad.status_code == 422 and "not a date and time" in bad.text
    learner = _sign_in(live_api.url, live_api.tokens["alice"], lang="zh")
    exercises = learner.get("/exercises").text
    row = exercises.split('id="ex-ch05.svc_sum"')[1].split("</tr>")[0]
    assert "截止" in row and "(Asia/Shanghai)" in row and "截止后关闭提交" in row
    files = {"notebook": ("s.ipynb", svc.notebook("ch05.svc_sum"), "application/x-ipynb+json")}
    refused = learner.post("/submit", data={"csrf": _csrf(learner, "/exercises"), "exercise_id": "ch05.svc_sum"},
                           files=files)
    assert refused.status_code == 403 and "不接受迟交" in refused.text and "Asia/Shanghai" in refused.text
    later = (utcnow() + dt.timedelta(hours=8) + dt.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    ext = teacher.post("/teach/courses/c1/extensions", data={"csrf": token, "user": "alice", "issuer": "titangrade",
                                                              "exercise_id": "ch05.svc_sum", "due_at": later})
    assert ext.status_code == 303
    assert "alice (titangrade:alice)" in teacher.get(PAGE).text
    accepted = learner.post("/submit", data={"csrf": _csrf(learner, "/exercises"), "exercise_id": "ch05.svc_sum"},
                            files=files)
    assert accepted.status_code == 303, accepted.text
    sid = accepted.headers["location"].rsplit("/", 1)[1]
    stamp = learner.get(f"/submissions/{sid}").text
    assert 'id="submitted-at"' in stamp and "(Asia/Shanghai)" in stamp and "按时" in stamp
    with transaction(live_api.app.state.sessions) as s:  # as if sent 1 day 3 hours after the due time
        sub = s.get(Submission, sid)
        sub.late_by_s, sub.penalty_percent = 27 * 3600, 20.0
    late = learner.get(f"/submissions/{sid}").text
    assert "迟交 1 天 3 小时，扣分 20%" in late
    english = _sign_in(live_api.url, live_api.tokens["teacher"]).get(f"/teach/submissions/{sid}").text
    assert "late by 1 d 3 h, penalty 20%" in english
