"""Commit-time wake-ups (service/signals.py): subscribers hear a committed progress event (and a claimable
job) at once, never a rolled-back one; on PostgreSQL a commit in another process arrives by NOTIFY."""
from __future__ import annotations

import os
import queue
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from service import signals
from service.db import transaction
from service.submissions import events

REPO = Path(__file__).resolve().parents[2]
_WRITER = textwrap.dedent("""
    import sys
    from service.db import make_engine, make_sessionmaker, transaction
    from service.submissions import events
    sessions = make_sessionmaker(make_engine(sys.argv[1]))
    with sessions() as s, s.begin():
        events.add(s, submission_id=sys.argv[2], event={"event": "cell", "index": 0})
        s.flush()
        s.rollback()
    with transaction(sessions) as s:
        events.add(s, submission_id=sys.argv[3], event={"event": "requeued"})
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
        events.add(s, submission_id=sub.id, event={"event": "cell", "index": 0})
        s.flush()
        s.rollback()
    assert _drain(heard) == set()

    with transaction(sessions) as s:
        events.add(s, submission_id=sub.id, event={"event": "checks"})
    assert _drain(heard) == {(signals.EVENTS, sub.id)}  # progress only: no job became claimable


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
        got = {heard.get(timeout=30), heard.get(timeout=30)}  # both arrive by NOTIFY: nothing else wrote
    finally:
        listener.close()
    assert got == {(signals.JOBS, ""), (signals.EVENTS, kept.id)}
    assert (signals.EVENTS, rolled.id) not in _drain(heard)  # the rolled-back event was never sent
