"""Strings from a kernel through storage, the API, the CLI and the web page, on SQLite and PostgreSQL: NUL, lone
surrogates, escape sequences, CR and bidi controls are stored readably, never crash a route or a terminal,
and a result the database still refuses becomes an error the learner sees, never a worker crash or a grader
fault."""

from __future__ import annotations

import dataclasses
import math
import re
import sqlite3

import markupsafe
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kernel_strings_support import strings_in
from sqlalchemy import select

from grading.result import CellReport, CheckResult, GradeResult, Status
from grading.text import clean_text
from service.db import transaction
from service.grades.service import record_grade
from service.outbox.models import OutboxEvent
from service.queue import service as queue
from service.queue.models import Job
from service.submissions.models import Submission

URL = "/api/v1/submissions"
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
PIECES = ["\x00", "\ud800", "\udfff", "\x1b", "[", "2J", "\r", "\n", "\t", "\u202e", "\u2066", "\x9b", "\x07", "]",
          "<", "&", '"', "a", "\u200f", "\ud83d", "\ude00", "é", "中"]
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40) | st.lists(
    st.sampled_from(PIECES), max_size=25).map("".join)


def _result(s: str, **overrides) -> GradeResult:
    """A result as the engine makes it, with `s` (not normalised) in every string a kernel can reach."""
    result = GradeResult(
        exercise_id="ch05.svc_sum", status=Status.ERROR, score=1.0, max_score=3.0,
        checks=[CheckResult(name="total_value", score=1.0, max_score=2.0, passed=False, feedback=f"got {s}", title=s)],
        message=f"cell 1 raised ValueError: {s}",
        cells=[CellReport(index=0, status="error", message=s, duration_s=0.1, outputs=[
            {"kind": "stdout", "text": f"printed {s}"}, {"kind": "display", "text": s, "mimes": [s]}])],
        limits_hit=[s], sandbox="unsafe-local", device="cpu", duration_s=0.5, engine_version="1",
        trace=[{"step": 1, f"loss{s}": 0.5}], profile=s,
    )
    return dataclasses.replace(result, **overrides)



def assert_safe(text: str) -> None:
    assert FORBIDDEN.search(text) is None, ascii(text[:300])
    text.encode("utf-8")


def _claim(sessions):
    with transaction(sessions) as s:
        return queue.claim(s, worker_id="w1", lanes=("short", "long"), free_devices=0, max_world_size=8, lease_s=30)


@pytest.mark.parametrize("bad", ["bad byte \x00 in input", "bad byte \ud800 in input", "\udcff\x00\ud83d"])
def test_nul_and_lone_surrogates_are_stored_and_read_back_readably(sessions, add_submission, bad):
    """PostgreSQL refused NUL in the message column, and no driver encodes a lone surrogate: the store raised
    into the worker (which died; replayed, the job ended not_gradable)."""
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    with transaction(sessions) as s:
        record_grade(s, submission_id=sub.id, result=_result(bad))
    with sessions() as s:
        stored = s.get(Submission, sub.id)
        assert (stored.status, stored.score) == ("error", 1.0)
        assert stored.message == f"cell 1 raised ValueError: {clean_text(bad)}"
        for text in [*strings_in(stored.result), stored.message]:
            assert_safe(text)
        assert "\\x00" in stored.message or "\ufffd" in stored.message  # the learner still sees where it was


def _refuse_big_values(session, db_kind: str) -> GradeResult:
    """Make this database refuse the next result for a content reason and return that result: SQLite with a
    lowered length limit refuses a long value (string or blob too big); PostgreSQL's json type refuses NaN."""
    if db_kind == "sqlite":
        session.connection().connection.driver_connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 20_000)
        return _result("x", checks=[CheckResult(name="total_value", score=1.0, max_score=2.0, passed=True,
                                                feedback="y" * 50_000)])
    return _result("x", trace=[{"step": 1, "loss": math.nan}])


def test_a_result_the_database_refuses_is_stored_as_an_error_with_the_reason(sessions, add_submission, db_url):
    db_kind = "sqlite" if db_url.startswith("sqlite") else "postgres"
    with transaction(sessions) as s:
        add_submission(s)
    held = _claim(sessions)
    with transaction(sessions) as s:
        assert queue.complete(s, job=held)  # the fenced status change commits with whatever is stored
        record_grade(s, submission_id=held.submission_id, result=_refuse_big_values(s, db_kind))
    with sessions() as s:
        stored = s.get(Submission, held.submission_id)
        assert stored.status == "error" and stored.message.startswith("the result could not be stored: ")
        assert ("too big" if db_kind == "sqlite" else "json") in stored.message  # the database's own reason
        assert stored.score == 1.0 and stored.result["checks"][0]["feedback"] == ""  # numbers kept, text left out
        assert s.get(Job, held.job_id).status == "done"
        assert [o.kind for o in s.scalars(select(OutboxEvent))] == ["grade.stored"]


def test_a_refused_result_drops_the_recorded_outputs_first(sessions, add_submission, db_url):
    """The outputs the grader saw are text a kernel grew: the smaller results record_grade falls back to keep
    none of them (the page then says they were not recorded)."""
    db_kind = "sqlite" if db_url.startswith("sqlite") else "postgres"
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    with transaction(sessions) as s:
        refused = _refuse_big_values(s, db_kind)
        record_grade(s, submission_id=sub.id, result=refused)
    with sessions() as s:
        stored = s.get(Submission, sub.id)
        assert stored.status == "error" and stored.result["cells"] == []
        assert "printed" not in str(stored.result)


def test_a_fault_whose_partial_result_is_refused_stays_a_grader_fault(sessions, add_submission, db_url):
    db_kind = "sqlite" if db_url.startswith("sqlite") else "postgres"
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    with transaction(sessions) as s:
        partial = dataclasses.replace(_refuse_big_values(s, db_kind), status=Status.NOT_GRADABLE)
        record_grade(s, submission_id=sub.id, result=partial, fault="kernel \x00 died")
    with sessions() as s:
        stored = s.get(Submission, sub.id)
        assert stored.status == "not_gradable" and stored.result is None
        assert "does not count against you" in stored.message and "kernel \\x00 died" in stored.message


def _sign_in(api, token: str) -> None:
    page = api.get("/login")
    resp = api.post("/login", data={"token": token, "csrf": CSRF.search(page.text).group(1), "next": "/exercises"},
                    follow_redirects=False)
    assert resp.status_code == 303


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(s=ANY_TEXT, through_engine=st.booleans())
def test_any_kernel_string_goes_through_store_api_cli_and_page_safely(api, svc, add_submission, s, through_engine):
    """Arbitrary strings from a kernel, normalised at the engine's result boundary (or, as if a caller forgot,
    handed raw to storage), then read by the learner's and the instructor's lists, the submission route, the
    CLI's report and the submission page: never a 500, and every string that arrives is clean."""
    if through_engine:
        raw = GradeResult(exercise_id="ch05.svc_sum", status=Status.ERROR, score=1.0, max_score=3.0,
                          message=f"cell 1 raised ValueError: {s}", sandbox="unsafe-local",
                          checks=[CheckResult(name="total_value", score=1.0, max_score=2.0, passed=False,
                                              feedback=f"got {s}", title=s)],
                          cells=[CellReport(index=0, status="error", message=s,
                                            outputs=[{"kind": "stderr", "text": s, "mimes": [s]}])], limits_hit=[s],
                          trace=[{"step": 1, f"loss{s}": 0.5}], profile=s)
        raw.normalise()
        result = raw
        assert all(FORBIDDEN.search(t) is None for t in strings_in(result.to_dict()))
    else:
        result = _result(s)
    sessions = api.app_state.sessions
    with transaction(sessions) as session:
        sub, _ = add_submission(session, notebook=svc.notebook())  # a notebook: the page shows its cells
    with transaction(sessions) as session:
        record_grade(session, submission_id=sub.id, result=result)
    learner, teacher = svc.auth(api.tokens["alice"]), svc.auth(api.tokens["teacher"])
    one = api.get(f"{URL}/{sub.id}", headers=learner)
    mine = api.get(URL, headers=learner)
    course = api.get(URL, params={"course": "c1"}, headers=teacher)
    assert (one.status_code, mine.status_code, course.status_code) == (200, 200, 200)
    body = one.json()
    assert body["message"] == f"cell 1 raised ValueError: {clean_text(s)}"
    assert body["checks"][0]["feedback"] == f"got {clean_text(s)}"
    assert sub.id in {i["id"] for i in mine.json()["items"]} and sub.id in {i["id"] for i in course.json()["items"]}
    for text in strings_in(body) + strings_in(mine.json()) + strings_in(course.json()):
        assert_safe(text)
    from service.client import render_submission

    report = render_submission(body)
    assert_safe(report.replace("\n", " "))
    _sign_in(api, api.tokens["alice"])
    page = api.get(f"/submissions/{sub.id}")
    assert page.status_code == 200
    assert_safe(page.text.replace("\r", ""))
    assert str(markupsafe.escape(f"got {clean_text(s)}")) in page.text
    assert "Output when graded" in page.text  # the recorded outputs are on the page, escaped like the rest


@pytest.mark.slow
def test_a_real_kernel_raising_nul_and_a_lone_surrogate_ends_error_with_a_readable_message(
    sessions, add_submission, test_catalogue, svc
):
    """The issue's notebook: the template plus `raise ValueError('bad byte \\x00 in input')` (and a lone
    surrogate), graded by the real engine in a real kernel and stored: an ordinary error result, not a dead
    worker and not not_gradable."""
    import nbformat

    from grading.pipeline import grade_notebook
    from grading.sandbox import make_sandbox

    nb = nbformat.reads(svc.notebook(solved=False).decode(), as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell("raise ValueError('bad byte \\x00 in input')"))
    nb.cells.insert(1, nbformat.v4.new_code_cell("raise ValueError('bad byte \\x00 in input' + '\\ud800')"))
    result = grade_notebook(nbformat.writes(nb), catalogue=test_catalogue, sandbox=make_sandbox("unsafe-local"))
    with transaction(sessions) as s:
        add_submission(s)
    held = _claim(sessions)
    with transaction(sessions) as s:
        assert queue.complete(s, job=held)
        record_grade(s, submission_id=held.submission_id, result=result)
    with sessions() as s:
        stored = s.get(Submission, held.submission_id)
        assert stored.status == "error" and stored.score == 0.0
        # the second cell's own words, too (ipykernel could not encode them and sent a UnicodeEncodeError)
        assert stored.message == ("cell 0 raised ValueError: bad byte \\x00 in input; "
                                  "cell 1 raised ValueError: bad byte \\x00 in input\ufffd")
        assert stored.result["cells"][1]["status"] == "error"
        for text in strings_in(stored.result):
            assert_safe(text)


def test_a_row_stored_before_the_boundary_still_reads(api, svc, add_submission):
    """Rows written before the result boundary normalised kernel strings can hold a lone surrogate (the JSON
    column keeps it as a \\u escape) or an escape sequence: the routes clean on the way out instead of 500."""
    sessions = api.app_state.sessions
    with transaction(sessions) as session:
        sub, _ = add_submission(session)
    with transaction(sessions) as session:
        row = session.get(Submission, sub.id)
        row.status, row.score, row.message = "error", 1.0, "cell 1 raised ValueError: \x1b[2Jgone"
        row.result = _result("\udc80\u202e").to_dict()  # as an old engine stored it: nothing cleaned
    learner, teacher = svc.auth(api.tokens["alice"]), svc.auth(api.tokens["teacher"])
    one = api.get(f"{URL}/{sub.id}", headers=learner)
    course = api.get(URL, params={"course": "c1"}, headers=teacher)
    assert (one.status_code, course.status_code) == (200, 200)
    assert one.json()["checks"][0]["feedback"] == "got \ufffd\\u202e"
    assert one.json()["message"] == "cell 1 raised ValueError: gone"
    for text in strings_in(one.json()) + strings_in(course.json()):
        assert_safe(text)
    _sign_in(api, api.tokens["alice"])
    page = api.get(f"/submissions/{sub.id}")
    assert page.status_code == 200 and "got \ufffd\\u202e" in page.text
