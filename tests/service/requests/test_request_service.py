"""The request verbs on both databases: what is stored is clean, the database holds one open request per
submission even for racing writers, and the course's list puts open requests first."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy.exc import IntegrityError

from service.auth.principal import Principal
from service.errors import Conflict
from service.requests import service
from service.requests.models import RequestKind, RequestStatus, SubmissionRequest

TEACHER = Principal(identity_id=999_999, issuer="titangrade", subject="t", name="t", memberships={"c1": "instructor"})


def _learner(sub) -> Principal:
    return Principal(identity_id=sub.identity_id, issuer="titangrade", subject=sub.user, name=sub.user,
                     memberships={sub.course: "learner"})  # fmt: skip


def test_a_lone_surrogate_or_nul_from_any_caller_is_stored_cleaned(sessions, add_submission):
    with sessions() as s:
        sub, _ = add_submission(s)
        s.commit()
        row = service.open_request(s, user=_learner(sub), sub=sub, kind=RequestKind.PROBLEM, text="a\ud800b\x00c\u2066")
        rid = row.id
    with sessions() as s:
        assert s.get(SubmissionRequest, rid).text == "a\ufffdb\\x00c\\u2066"


def test_the_database_holds_one_open_request_per_submission(sessions, add_submission, monkeypatch):
    with sessions() as s:
        sub, _ = add_submission(s)
        s.commit()
        learner = _learner(sub)
        first = service.open_request(s, user=learner, sub=sub, kind=RequestKind.REGRADE, text="one")
        monkeypatch.setattr(service, "_check_open", lambda *_: None)  # as if a second request raced past the check
        with pytest.raises(IntegrityError):
            service.open_request(s, user=learner, sub=sub, kind=RequestKind.REGRADE, text="two")
        monkeypatch.undo()
        with pytest.raises(Conflict):
            service.open_request(s, user=learner, sub=sub, kind=RequestKind.REGRADE, text="two")
        service.answer(s, user=TEACHER, row=first, text="done", close=False)
        second = service.open_request(s, user=learner, sub=sub, kind=RequestKind.PROBLEM, text="two")
        assert second.status == RequestStatus.OPEN


def test_the_course_list_puts_open_requests_first_oldest_waiting_first(sessions, add_submission):
    base = dt.datetime(2026, 12, 1, 12, 0)
    with sessions() as s:
        rows = []
        for n, status in enumerate(["answered", "open", "closed", "open", "answered"]):
            sub, _ = add_submission(s, user=f"u{n}")
            s.flush()
            row = SubmissionRequest(submission_id=sub.id, course="c1", exercise_id=sub.exercise_id,
                                    identity_id=sub.identity_id, author=sub.user, kind="regrade", text="t",
                                    status=status, created_at=base + dt.timedelta(minutes=n))  # fmt: skip
            s.add(row)
            rows.append(row)
        other, _ = add_submission(s, user="elsewhere", course="c2")
        s.flush()
        s.add(SubmissionRequest(submission_id=other.id, course="c2", exercise_id=other.exercise_id,
                                identity_id=other.identity_id, author="elsewhere", kind="regrade", text="t",
                                status="open"))  # fmt: skip
        s.commit()
        listed = [r.id for r in service.for_course(s, user=TEACHER, course="c1")]
        ids = [r.id for r in rows]
        assert listed == [ids[1], ids[3], ids[4], ids[0], ids[2]]
        assert [r.id for r in service.for_course(s, user=TEACHER, course="c1", status=RequestStatus.OPEN)] == [
            ids[1],
            ids[3],
        ]
        assert service.open_counts(s, courses=["c1", "c2", "c3"]) == {"c1": 2, "c2": 1}


def test_an_id_past_the_column_is_missing_not_a_database_error(sessions):
    from service.errors import NotFound

    with sessions() as s, pytest.raises(NotFound):
        service.get(s, user=TEACHER, request_id=948_944_611_771)  # PostgreSQL's integer would overflow
