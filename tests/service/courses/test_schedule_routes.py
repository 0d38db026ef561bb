"""Deadlines over real HTTP on SQLite and PostgreSQL: the schedule and extension API, uploads refused before
the opening and after a hard close (in the caller's language), the penalty stored with each attempt and
carried by the submission view, the gradebook (JSON, CSV, the late filter) and the grade events; a regrade
keeps the submission time, an override is final."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json

from sqlalchemy import select

from grading.result import GradeResult, Status
from service.db import transaction, utcnow
from service.grades.service import record_grade
from service.lti.ags import event_score
from service.outbox.models import OutboxEvent
from service.queue import service as queue
from service.submissions.models import Submission
from service.webhooks.targets import envelope

SUBS = "/api/v1/submissions"
EX = "ch05.svc_sum"
SCHEDULE = f"/api/v1/courses/c1/exercises/{EX}/schedule"


def _iso(when: dt.datetime) -> str:
    return when.replace(tzinfo=dt.UTC).isoformat()


def _put(api, svc, body, user="teacher"):
    return api.put(SCHEDULE, json=body, headers=svc.auth(api.tokens[user]))


def _upload(api, svc, user="alice", lang="en"):
    return api.post(
        SUBS,
        files={"notebook": ("s.ipynb", svc.notebook(EX), "application/x-ipynb+json")},
        headers=svc.auth(api.tokens[user], **{"Accept-Language": lang}),
    )


def _grade(api, sid: str, score: float = 3.0) -> None:
    """As a worker does: claim the submission's job, complete it and store the grade."""
    sessions = api.app_state.sessions
    with transaction(sessions) as s:
        job = queue.claim(s, worker_id="w", lanes=("short",), free_devices=0, max_world_size=1, lease_s=30)
        assert job is not None and job.submission_id == sid
    with transaction(sessions) as s:
        assert queue.complete(s, job=job)
        result = GradeResult(exercise_id=EX, status=Status.GRADED, score=score, max_score=3.0)
        record_grade(s, submission_id=sid, result=result)


def _view(api, svc, sid, user="alice"):
    return api.get(f"{SUBS}/{sid}", headers=svc.auth(api.tokens[user])).json()


def test_the_schedule_round_trips_in_utc_and_the_course_zone_and_bad_ones_are_422(api, svc):
    teacher = svc.auth(api.tokens["teacher"])
    tz = api.put("/api/v1/courses/c1/settings", json={"timezone": "Asia/Shanghai"}, headers=teacher)
    assert tz.status_code == 200 and tz.json()["timezone"] == "Asia/Shanghai"
    assert tz.json()["supersede_is_default"] is True  # left unchanged
    body = {
        "opens_at": "2026-09-01T09:00:00+08:00",
        "due_at": "2026-09-30T23:59:00+08:00",
        "late_policy": {"kind": "per_day", "percent": 10, "floor_percent": 40},
    }
    put = _put(api, svc, body)
    assert put.status_code == 200, put.text
    got = api.get(SCHEDULE, headers=teacher).json()
    assert got == put.json()
    assert got["opens_at"] == "2026-09-01T01:00:00.000+00:00" and got["due_at"] == "2026-09-30T15:59:00.000+00:00"
    assert got["due_at_local"] == "2026-09-30T23:59+08:00" and got["timezone"] == "Asia/Shanghai"
    assert got["late_policy"] == {"kind": "per_day", "percent": 10.0, "floor_percent": 40.0}
    listed = api.get("/api/v1/courses/c1/schedule", headers=teacher).json()
    assert [i["exercise_id"] for i in listed["items"] if i["due_at"]] == [EX] and len(listed["items"]) >= 4
    bad = {
        "naive": {**body, "due_at": "2026-09-30T23:59:00"},
        "order": {**body, "opens_at": body["due_at"], "due_at": body["opens_at"]},
        "kind": {**body, "late_policy": {"kind": "sometimes"}},
        "percent": {**body, "late_policy": {"kind": "per_hour", "percent": 0}},
        "over": {**body, "late_policy": {"kind": "per_day", "percent": 120}},
        "no_due": {"late_policy": {"kind": "closed"}},
    }
    for name, b in bad.items():
        resp = _put(api, svc, b)
        assert resp.status_code == 422, (name, resp.text)
    zone = api.put("/api/v1/courses/c1/settings", json={"timezone": "Mars/Olympus"}, headers=teacher)
    assert zone.status_code == 422 and zone.json()["error"]["code"] == "bad_timezone"
    assert _put(api, svc, body, user="alice").status_code == 403
    assert api.put("/api/v1/courses/c2/exercises/ch05.svc_sum/schedule", json=body, headers=teacher).status_code == 403
    unknown = api.get("/api/v1/courses/c1/exercises/ch05.nope/schedule", headers=teacher)
    assert unknown.status_code == 404


def test_uploads_before_the_opening_and_after_a_hard_close_are_refused_until_an_extension(api, svc):
    now = utcnow()
    body = {"opens_at": _iso(now + dt.timedelta(days=1)), "due_at": _iso(now + dt.timedelta(days=2))}
    assert _put(api, svc, body).status_code == 200
    early = _upload(api, svc)
    assert early.status_code == 403 and early.json()["error"]["code"] == "exercise_not_open"
    assert "(UTC)" in early.json()["error"]["message"] and "opens at" in early.json()["error"]["message"]
    assert "开放" in _upload(api, svc, lang="zh").json()["error"]["message"]
    assert _upload(api, svc, user="teacher").status_code == 202  # staff may try an exercise before it opens
    closed = {"due_at": _iso(now - dt.timedelta(hours=1)), "late_policy": {"kind": "closed"}}
    assert _put(api, svc, closed).status_code == 200
    late = _upload(api, svc)
    assert late.status_code == 403 and late.json()["error"]["code"] == "exercise_closed"
    assert "截止" in _upload(api, svc, lang="zh").json()["error"]["message"]
    teacher = svc.auth(api.tokens["teacher"])
    ext = {"user": "alice", "exercise_id": EX, "due_at": _iso(now + dt.timedelta(hours=1))}
    granted = api.post("/api/v1/courses/c1/extensions", json=ext, headers=teacher)
    assert granted.status_code == 201 and granted.json()["user"] == "alice"
    sid = _upload(api, svc)
    assert sid.status_code == 202, sid.text
    assert _view(api, svc, sid.json()["id"])["late"] is False
    assert _upload(api, svc, user="bob").status_code == 403  # the extension is alice's alone
    listed = api.get("/api/v1/courses/c1/extensions", headers=teacher).json()["items"]
    assert [(e["user"], e["exercise_id"]) for e in listed] == [("alice", EX)]
    nobody = api.post("/api/v1/courses/c1/extensions", json={**ext, "user": "zed"}, headers=teacher)
    assert nobody.status_code == 404 and nobody.json()["error"]["code"] == "unknown_learner"
    gone = api.delete(f"/api/v1/courses/c1/extensions/{granted.json()['id']}", headers=teacher)
    assert gone.status_code == 204 and _upload(api, svc).status_code == 403


def test_a_late_attempt_carries_its_penalty_everywhere_and_best_counts_after_it(api, svc):
    now = utcnow()
    on_time = _upload(api, svc).json()["id"]
    _grade(api, on_time, score=2.0)
    body = {"due_at": _iso(now - dt.timedelta(hours=25)), "late_policy": {"kind": "per_day", "percent": 30}}
    with transaction(api.app_state.sessions) as s:  # the first attempt was made before the due time
        s.get(Submission, on_time).created_at = now - dt.timedelta(hours=26)
    assert _put(api, svc, body).status_code == 200
    late = _upload(api, svc).json()["id"]
    _grade(api, late, score=3.0)
    view = _view(api, svc, late)
    assert view["late"] is True and view["penalty_percent"] == 60.0 and 25 * 3600 <= view["late_by_s"] < 26 * 3600
    assert (view["auto_score"], view["raw_score"], view["score"]) == (3.0, 3.0, 1.2)
    assert view["submitted_at"] == view["created_at"]
    assert _view(api, svc, on_time)["late"] is False and _view(api, svc, on_time)["score"] == 2.0
    teacher = svc.auth(api.tokens["teacher"])
    book = api.get("/api/v1/courses/c1/gradebook", headers=teacher).json()
    cell = next(r for r in book["rows"] if r["user"] == "alice" and r["exercise_id"] == EX)
    assert cell["submission_id"] == on_time and cell["score"] == 2.0 and cell["late"] is False  # 2.0 beats 1.2
    latest = api.get("/api/v1/courses/c1/gradebook?policy=latest", headers=teacher).json()
    cell = next(r for r in latest["rows"] if r["user"] == "alice" and r["exercise_id"] == EX)
    assert (cell["submission_id"], cell["score"], cell["raw_score"], cell["penalty_percent"]) == (late, 1.2, 3.0, 60)
    only_late = api.get("/api/v1/courses/c1/gradebook?policy=latest&late=late", headers=teacher).json()["rows"]
    assert [(r["user"], r["exercise_id"]) for r in only_late] == [("alice", EX)]
    sheet = api.get("/api/v1/courses/c1/gradebook?policy=latest&format=csv", headers=teacher).text
    row = next(r for r in csv.DictReader(io.StringIO(sheet)) if r["user"] == "alice" and r["exercise_id"] == EX)
    assert (row["late"], row["penalty_percent"], row["score"], row["raw_score"]) == ("True", "60.0", "1.2", "3.0")
    with api.app_state.sessions() as s:
        event = s.scalars(select(OutboxEvent).where(OutboxEvent.submission_id == late)).one()
    payload = event.payload
    assert payload["late"] is True and payload["penalty_percent"] == 60.0 and payload["final_score"] == 1.2
    assert payload["score"] == 3.0 and payload["submitted_at"] == view["submitted_at"]
    hook = json.loads(envelope(event=event, event_type="grade.stored", learner=None))["data"]
    assert (hook["score"], hook["raw_score"], hook["auto_score"], hook["late"]) == (1.2, 3.0, 3.0, True)
    ags = json.loads(event_score(event=event, event_type="grade.stored", user_id="u"))
    assert ags["scoreGiven"] == 1.2 and ags["submission"] == {"submittedAt": view["submitted_at"]}
    assert ags["comment"] == "late penalty: 1.8 of 3 points taken off (submitted late, 60% penalty)"
    over = api.post(f"{SUBS}/{late}/override", json={"score": 2.5, "reason": "fair"}, headers=teacher)
    assert over.json()["score"] == 2.5 and over.json()["penalty_percent"] == 60.0  # an override is final
    with api.app_state.sessions() as s:
        rows = s.execute(select(OutboxEvent.kind, OutboxEvent.payload).where(OutboxEvent.submission_id == late))
        kinds = dict(rows.all())
    assert kinds["grade.overridden"]["final_score"] == 2.5 and kinds["grade.overridden"]["late"] is True
    extended = {"user": "alice", "exercise_id": EX, "due_at": _iso(now + dt.timedelta(days=1))}
    assert api.post("/api/v1/courses/c1/extensions", json=extended, headers=teacher).status_code == 201
    assert _view(api, svc, late)["late"] is False  # an extension recomputes the stored lateness


def test_a_regrade_keeps_the_submission_time_so_on_time_work_stays_on_time(api, svc):
    now = utcnow()
    sid = _upload(api, svc).json()["id"]
    with transaction(api.app_state.sessions) as s:
        s.get(Submission, sid).created_at = now - dt.timedelta(days=2)
    body = {"due_at": _iso(now - dt.timedelta(days=1)), "late_policy": {"kind": "per_hour", "percent": 50}}
    assert _put(api, svc, body).status_code == 200
    _grade(api, sid)
    teacher = svc.auth(api.tokens["teacher"])
    assert api.post(f"{SUBS}/{sid}/regrade", headers=teacher).status_code in (200, 202)
    _grade(api, sid, score=2.0)
    view = _view(api, svc, sid)
    assert view["run"] == 2 and view["late"] is False and view["score"] == 2.0
    assert view["submitted_at"].startswith(_iso(now - dt.timedelta(days=2))[:16])


def test_times_no_zone_could_show_are_422_not_500(api, svc):
    teacher = svc.auth(api.tokens["teacher"])
    for when in ("9999-12-31T23:59:00-14:00", "0001-01-01T00:00:00+14:00", "1969-12-31T23:59:59Z"):
        put = _put(api, svc, {"due_at": when})
        assert put.status_code == 422, (when, put.text)
        ext = api.post("/api/v1/courses/c1/extensions", json={"user": "alice", "exercise_id": EX, "due_at": when},
                       headers=teacher)
        assert ext.status_code == 422, (when, ext.text)
