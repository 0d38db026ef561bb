"""A grading process that cannot read its submission because the database went away after the claim
hands the job back unattempted (NotStarted), instead of spending an attempt: the outage is the host's
fault. Seen in the fault test under load, where the kill came between a worker's claim and the child's read."""

from __future__ import annotations

import socket

import pytest

from service.db import make_engine, make_sessionmaker
from service.workers import executor
from service.workers.executor import GradingTicket, NotStarted


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


def _ticket() -> GradingTicket:
    return GradingTicket(job_id=1, submission_id="s1", lease_token="t", lane="short", device_kind="cpu", device_ids=())


def test_a_database_down_at_the_read_is_not_an_attempt(monkeypatch):
    down = make_engine(f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/test")  # a real driver, no server
    monkeypatch.setitem(executor._CHILD, "sessions", make_sessionmaker(down))
    outcome = executor._grade_ticket(_ticket())
    assert isinstance(outcome, NotStarted) and "database unreachable" in outcome.reason


def test_any_other_failure_at_the_read_still_raises(monkeypatch):
    def broken():
        raise ValueError("a bug, not an outage")

    monkeypatch.setitem(executor._CHILD, "sessions", broken)
    with pytest.raises(ValueError):
        executor._grade_ticket(_ticket())
