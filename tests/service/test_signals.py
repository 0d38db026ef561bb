"""Commit-time wake-ups (service/signals.py): subscribers hear a committed progress event (and a claimable
job) at once, never a rolled-back one; on PostgreSQL a commit in another process arrives by NOTIFY."""

from __future__ import annotations

import logging
import os
import queue
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grading.progress import Cell, Checks, Requeued
from service import signals
from service.db import transaction
from service.submissions import events

REPO = Path(__file__).resolve().parents[2]
_WRITER = textwrap.dedent("""
    import sys
    from grading.progress import Cell, Requeued
    from service import bootstrap
    from service.db import make_engine, transaction
    from service.submissions import events
    sessions = bootstrap.sessions(make_engine(sys.argv[1]))
    with sessions() as s, s.begin():
        events.add(s, submission_id=sys.argv[2], event=Cell(index=0, total=1))
        s.flush()
        s.rollback()
    with transaction(sessions) as s:
        events.add(s, submission_id=sys.argv[3], event=Requeued(reason="test"))
""")


@pytest.fixture
def heard():
    """Everything published on both channels while the test runs, as (channel, key)."""
    got: queue.Queue[tuple[str, str]] = queue.Queue()
    offs = [signals.subscribe(ch, lambda key, ch=ch: got.put((ch, key))) for ch in (signals.JOBS, signals.EVENTS)]
    yield got
    for off in offs:
        off()


def _drain(got: queue.Queue) -> set[tuple[str, str]]:
    out = set()
    while not got.empty():
        out.add(got.get_nowait())
    return out


def test_a_committed_event_is_published_after_commit_and_a_rolled_back_one_never(sessions, add_submission, heard):
    with transaction(sessions) as s:
        sub, _ = add_submission(s)  # intake: the submission, its job and its `queued` event
        s.flush()
        assert _drain(heard) == set()  # nothing before the commit
    assert _drain(heard) == {(signals.JOBS, ""), (signals.EVENTS, sub.id)}

    with sessions() as s, s.begin():
        events.add(s, submission_id=sub.id, event=Cell(index=0, total=1))
        s.flush()
        s.rollback()
    assert _drain(heard) == set()

    with transaction(sessions) as s:
        events.add(s, submission_id=sub.id, event=Checks())
    assert _drain(heard) == {(signals.EVENTS, sub.id)}  # progress only: no job became claimable


def test_the_wake_up_of_an_event_written_in_a_savepoint_waits_for_the_outer_commit(sessions, add_submission, heard):
    """record_grade writes `done` in a savepoint; SQLAlchemy runs after_commit at its RELEASE. Published then, a
    stream woke, read before the outer COMMIT, saw nothing and slept a whole poll (the flaky test_wakeup)."""
    from grading.result import GradeResult, Status
    from service.grades.service import record_grade

    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    _drain(heard)
    with transaction(sessions) as s:
        record_grade(s, submission_id=sub.id, result=GradeResult(exercise_id="ch05.svc_sum", status=Status.GRADED, score=3.0, max_score=3.0))
        assert _drain(heard) == set()  # the savepoint is released, the transaction is not committed
    assert _drain(heard) == {(signals.EVENTS, sub.id)}


def test_a_rolled_back_savepoint_keeps_the_wake_ups_of_its_transaction(sessions, add_submission, heard):
    with transaction(sessions) as s:
        sub, _ = add_submission(s)
    _drain(heard)
    with transaction(sessions) as s:
        events.add(s, submission_id=sub.id, event=Requeued(reason="test"))
        s.flush()
        with pytest.raises(ValueError), s.begin_nested():
            raise ValueError("a refused value, as record_grade retries smaller")
    assert _drain(heard) == {(signals.JOBS, ""), (signals.EVENTS, sub.id)}


def test_postgresql_notify_reaches_a_listener_in_another_process(db_url, sessions, add_submission, heard):
    if not db_url.startswith("postgresql"):
        pytest.skip("NOTIFY is PostgreSQL's; SQLite across processes falls back to polling")
    with transaction(sessions) as s:
        rolled, _ = add_submission(s)
        kept, _ = add_submission(s, user="bob")
    listener = signals.PgListener(db_url, (signals.JOBS, signals.EVENTS)).start()
    try:
        assert listener.listening.wait(30), "LISTEN connection did not come up"
        _drain(heard)
        env = dict(os.environ, PYTHONPATH=str(REPO))
        subprocess.run([sys.executable, "-c", _WRITER, db_url, rolled.id, kept.id], check=True, env=env, timeout=60)
        # both arrive by NOTIFY (nothing in this process wrote); the database is shared, so another
        # process's NOTIFYs may arrive too: only this test's two submissions are looked at
        ours = {(signals.EVENTS, rolled.id), (signals.EVENTS, kept.id), (signals.JOBS, "")}
        got: set[tuple[str, str]] = set()
        for pair in [(signals.JOBS, ""), (signals.EVENTS, kept.id)]:
            assert _heard_key(heard, pair, seen=got), f"{pair} never arrived"
    finally:
        listener.close()
    got |= _drain(heard)
    assert (got & ours) == {(signals.JOBS, ""), (signals.EVENTS, kept.id)}  # the rolled-back event was never sent


def _notify(engine, channel: str, key: str) -> None:
    """NOTIFY from a plain connection: no session hook publishes it in this process, only the listener."""
    from sqlalchemy import text

    with engine.begin() as conn:
        conn.execute(text("select pg_notify(:c, :k)"), {"c": channel, "k": key})


def _heard_key(
    got: queue.Queue, pair: tuple[str, str], timeout_s: float = 30, *, seen: set[tuple[str, str]] | None = None
) -> bool:
    """Wait for `pair` (the shared database may carry other tests' NOTIFYs too); `seen` collects the rest."""
    import time

    if seen is not None and pair in seen:
        return True
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            item = got.get(timeout=left)
        except queue.Empty:
            return False
        if seen is not None:
            seen.add(item)
        if item == pair:
            return True
    return False


def _assert_outage_logged_once_without_tracebacks(caplog) -> None:
    ours = [r for r in caplog.records if r.name == "titangrade.signals"]
    assert not [r for r in ours if r.exc_info], "a traceback was logged for a lost connection"
    started = [r for r in ours if r.levelno == logging.WARNING]
    assert len(started) == 1 and "database unreachable" in started[0].getMessage(), [r.getMessage() for r in ours]
    assert any(r.levelno == logging.INFO and "database down for" in r.getMessage() for r in ours)
    back = [r for r in ours if "reachable again" in r.getMessage()]
    assert len(back) == 1 and back[0].levelno == logging.INFO


def test_a_listener_whose_connection_is_terminated_reconnects_and_wakes_subscribers(db_url, db_engine, heard, caplog):
    if not db_url.startswith("postgresql"):
        pytest.skip("NOTIFY is PostgreSQL's")
    from sqlalchemy import text

    caplog.set_level(logging.INFO, logger="titangrade.signals")
    listener = signals.PgListener(db_url, (signals.JOBS, signals.EVENTS), retry_base_s=0.05, retry_max_s=0.2).start()
    try:
        assert listener.listening.wait(30), "LISTEN connection did not come up"
        first = listener.backend_pid
        with db_engine.begin() as conn:  # what an administrator, a failover or an idle-session timeout does
            assert conn.execute(text("select pg_terminate_backend(:p)"), {"p": first}).scalar()
        for _ in range(600):  # the shared server carries other tests' NOTIFYs: wait for the reconnect itself
            if listener.listening.is_set() and listener.backend_pid not in (None, first):
                break
            listener.stop.wait(0.05)
        assert listener.listening.is_set() and listener.backend_pid not in (None, first), "did not reconnect"
        key = f"after-recovery-{os.getpid()}-{id(listener)}"
        _notify(db_engine, signals.EVENTS, key)
        assert _heard_key(heard, (signals.EVENTS, key)), "a NOTIFY after the reconnect did not reach the subscriber"
    finally:
        listener.close()
    _assert_outage_logged_once_without_tracebacks(caplog)


@pytest.mark.slow
def test_a_listener_waits_out_a_postgresql_that_is_down_then_wakes_subscribers(heard, caplog):
    import importlib.util

    from sqlalchemy import create_engine

    spec = importlib.util.spec_from_file_location("tg_fault_support", Path(__file__).with_name("fault_support.py"))
    faults = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(faults)
    bindir = faults.postgres_bindir()
    if bindir is None:
        pytest.skip("initdb/pg_ctl not installed (apt-get install postgresql)")
    caplog.set_level(logging.INFO, logger="titangrade.signals")
    pg = faults.PrivatePostgres(bindir)
    channels = (signals.JOBS, signals.EVENTS)
    listener = signals.PgListener(pg.url, channels, retry_base_s=0.05, retry_max_s=0.2).start()
    try:
        assert listener.listening.wait(30), "LISTEN connection did not come up"
        pg.kill()
        retries = lambda: [r for r in caplog.records if "database down for" in r.getMessage()]  # noqa: E731
        for _ in range(600):
            if len(retries()) >= 5:
                break
            listener.stop.wait(0.05)
        assert len(retries()) >= 5 and not listener.listening.is_set()
        _drain(heard)  # before the server is back: the wake-up after reconnecting comes after this
        pg.start()
        assert listener.listening.wait(30), "the listener did not reconnect once PostgreSQL was back"
        assert _heard_key(heard, (signals.JOBS, "")), "no wake-up after reconnecting (NOTIFYs meanwhile are lost)"
        engine = create_engine(pg.url)
        _notify(engine, signals.EVENTS, "back")
        engine.dispose()
        assert _heard_key(heard, (signals.EVENTS, "back"))
    finally:
        listener.close()
        pg.close()
    _assert_outage_logged_once_without_tracebacks(caplog)
