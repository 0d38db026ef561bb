"""The gradebook matrix against a real database (SQLite and PostgreSQL): every learner member x every exercise
of the test catalogue, missing work as `missing` rows (attempts 0, no score), the policy's chosen attempt
picked by the window-function query, and totals over every exercise."""

from __future__ import annotations

import datetime as dt

from service.auth.service import get_or_create_identity, set_membership
from service.courses import gradebook
from service.db import transaction

EXERCISES = ["ch05.svc_broken", "ch05.svc_gpu", "ch05.svc_long", "ch05.svc_sum"]
T0 = dt.datetime(2026, 11, 1, 9, 0, 0)


def _member(s, user: str, *, course: str = "c1", role: str = "learner") -> None:
    set_membership(s, identity=get_or_create_identity(s, issuer="titangrade", subject=user), course=course, role=role)


def _attempt(
    s,
    add_submission,
    *,
    user: str,
    exercise_id: str,
    minute: int,
    status: str = "graded",
    score: float | None = None,
    manual: float | None = None,
    course: str = "c1",
):
    sub, _ = add_submission(s, user=user, course=course, exercise_id=exercise_id)
    sub.status, sub.score, sub.manual_score = status, score, manual
    sub.created_at = T0 + dt.timedelta(minutes=minute)  # attempt order is explicit, never clock luck
    return sub


def _book(sessions, test_catalogue, policy="best", course="c1"):
    with sessions() as s:
        return gradebook.build(s, course=course, policy=policy, catalogue=test_catalogue)


def _cell(book, user, exercise_id):
    return next(r for r in book.rows() if r["user"] == user and r["exercise_id"] == exercise_id)


def test_every_learner_member_gets_a_row_for_every_exercise(sessions, add_submission, test_catalogue):
    with transaction(sessions) as s:
        _member(s, "bob")  # never submitted
        _member(s, "tess", role="instructor")  # staff are not learners
        _member(s, "carol", course="c2")
        _attempt(s, add_submission, user="alice", exercise_id="ch05.svc_sum", minute=1, score=1.0)
        _attempt(s, add_submission, user="alice", exercise_id="ch05.svc_sum", minute=2, score=3.0)
    book = _book(sessions, test_catalogue)
    assert [ex for ex, _ in book.exercises] == EXERCISES
    rows = book.rows()
    assert [(r["user"], r["exercise_id"]) for r in rows] == [(u, e) for u in ("alice", "bob") for e in EXERCISES]
    bob = [r for r in rows if r["user"] == "bob"]
    assert all(r["attempts"] == 0 and r["score"] is None and r["submission_id"] is None for r in bob)
    assert {r["status"] for r in bob} == {"missing"} and all(r["max_score"] > 0 for r in bob)
    alice_sum = _cell(book, "alice", "ch05.svc_sum")
    assert (alice_sum["score"], alice_sum["attempts"], alice_sum["status"]) == (3.0, 2, "graded")
    assert _cell(book, "alice", "ch05.svc_long")["status"] == "missing"
    max_total = sum(m for _, m in book.exercises)
    totals = {t["user"]: t for t in book.totals()}
    assert (totals["alice"]["points"], totals["alice"]["max_points"]) == (3.0, max_total)
    assert totals["alice"]["percent"] == round(300.0 / max_total, 1)
    assert (totals["alice"]["submitted"], totals["alice"]["missing"]) == (1, 3)
    assert (totals["bob"]["points"], totals["bob"]["percent"], totals["bob"]["missing"]) == (0.0, 0.0, 4)


def test_best_latest_overrides_ties_and_stand_ins(sessions, add_submission, test_catalogue):
    with transaction(sessions) as s:
        first = _attempt(s, add_submission, user="ann", exercise_id="ch05.svc_sum", minute=1, score=2.0)
        _attempt(s, add_submission, user="ann", exercise_id="ch05.svc_sum", minute=2, score=2.0)  # a tie
        last = _attempt(s, add_submission, user="ann", exercise_id="ch05.svc_sum", minute=3, score=1.0)
        _attempt(s, add_submission, user="ann", exercise_id="ch05.svc_long", minute=1, score=1.0)
        manual = _attempt(s, add_submission, user="ann", exercise_id="ch05.svc_long", minute=2, score=0.0, manual=2.5)
        _attempt(s, add_submission, user="ann", exercise_id="ch05.svc_long", minute=3, status="not_gradable")
        _attempt(s, add_submission, user="ann", exercise_id="ch05.svc_gpu", minute=1, status="superseded")
        queued = _attempt(s, add_submission, user="ann", exercise_id="ch05.svc_gpu", minute=2, status="queued")
        _attempt(s, add_submission, user="ann", exercise_id="ch05.svc_gpu", minute=3, status="queued")
        _attempt(s, add_submission, user="ann", exercise_id="ch05.svc_broken", minute=1, status="superseded")
        only_sup = _attempt(s, add_submission, user="ann", exercise_id="ch05.svc_broken", minute=2, status="superseded")
    best, latest = _book(sessions, test_catalogue, "best"), _book(sessions, test_catalogue, "latest")
    assert _cell(best, "ann", "ch05.svc_sum")["submission_id"] == first.id  # the earliest of equal bests
    assert _cell(latest, "ann", "ch05.svc_sum")["submission_id"] == last.id
    for book in (best, latest):  # an override counts; a later not-gradable attempt never replaces a score
        long = _cell(book, "ann", "ch05.svc_long")
        assert (long["submission_id"], long["score"], long["attempts"]) == (manual.id, 2.5, 3)
        gpu = _cell(book, "ann", "ch05.svc_gpu")  # nothing scored: the first attempt not superseded
        assert (gpu["submission_id"], gpu["score"], gpu["superseded"], gpu["attempts"]) == (queued.id, None, 1, 3)
        broken = _cell(book, "ann", "ch05.svc_broken")
        assert (broken["submission_id"], broken["superseded"]) == (only_sup.id, 2)
    assert best.totals()[0]["points"] == 4.5 and latest.totals()[0]["points"] == 3.5


def test_work_outlives_membership_and_the_catalogue(sessions, add_submission, test_catalogue):
    from sqlalchemy import delete

    from service.auth.models import Membership

    with transaction(sessions) as s:
        _attempt(s, add_submission, user="gone", exercise_id="ch05.svc_sum", minute=1, score=3.0)
        _attempt(s, add_submission, user="gone", exercise_id="ch09.retired", minute=2, score=4.0)
        s.execute(delete(Membership))  # the learner left the course; the work stays in the sheet
    book = _book(sessions, test_catalogue)
    assert [ex for ex, _ in book.exercises] == [*EXERCISES, "ch09.retired"]
    assert [r["user"] for r in book.rows()] == ["gone"] * 5
    assert book.totals()[0]["points"] == 7.0
    assert _book(sessions, test_catalogue, course="nobody").rows() == []


def test_the_api_json_and_csv_carry_the_missing_rows(api, svc):
    import csv
    import io

    teacher = svc.auth(api.tokens["teacher"])
    resp = api.post(
        "/api/v1/submissions", files={"notebook": ("a.ipynb", svc.notebook())}, headers=svc.auth(api.tokens["alice"])
    )
    assert resp.status_code == 202, resp.text
    body = api.get("/api/v1/courses/c1/gradebook", headers=teacher).json()
    pairs = [(r["user"], r["exercise_id"]) for r in body["rows"]]
    assert pairs == [(u, e) for u in ("alice", "bob") for e in EXERCISES]  # bob never submitted
    mine = next(r for r in body["rows"] if r["user"] == "alice" and r["exercise_id"] == "ch05.svc_sum")
    assert (mine["attempts"], mine["status"], mine["submission_id"]) == (1, "queued", resp.json()["id"])
    missing = [r for r in body["rows"] if r["attempts"] == 0]
    assert len(missing) == 7 and all(r["score"] is None and r["status"] == "missing" for r in missing)
    assert [e["exercise_id"] for e in body["exercises"]] == EXERCISES
    assert [(t["user"], t["submitted"], t["missing"]) for t in body["totals"]] == [("alice", 1, 3), ("bob", 0, 4)]
    sheet = api.get("/api/v1/courses/c1/gradebook?format=csv", headers=teacher).text
    rows = list(csv.DictReader(io.StringIO(sheet)))
    assert [(r["user"], r["exercise_id"]) for r in rows] == pairs
    bob = [r for r in rows if r["user"] == "bob"]
    assert all((r["attempts"], r["score"], r["status"], r["submission_id"]) == ("0", "", "missing", "") for r in bob)


def test_the_openapi_schema_names_the_new_fields(api):
    schema = api.get("/api/v1/openapi.json").json()["components"]["schemas"]
    assert {"rows", "exercises", "totals"} <= set(schema["GradebookPublic"]["properties"])
    assert schema["GradebookRow"]["properties"]["attempts"]["type"] == "integer"
