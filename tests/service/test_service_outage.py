"""service/outage.py: which real database errors are an outage (waited out, 503) and which are bugs (500)."""
from __future__ import annotations

import random
import sqlite3

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from service.outage import Backoff, describe, is_unavailable


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens once the socket is closed


def _raised(engine, sql: str) -> Exception:
    with pytest.raises(Exception) as info, engine.begin() as conn:
        conn.execute(text(sql))
    return info.value


def test_postgresql_connection_refused_is_an_outage():
    engine = create_engine(f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/x")
    exc = _raised(engine, "SELECT 1")
    assert isinstance(exc, DBAPIError) and is_unavailable(exc)
    assert "OperationalError" in describe(exc)


@pytest.mark.postgres
def test_postgresql_bugs_and_bad_values_are_not_an_outage(db_engine):
    if db_engine.dialect.name != "postgresql":
        pytest.skip("PostgreSQL only")
    assert not is_unavailable(_raised(db_engine, "SELECT * FROM no_such_table"))
    assert not is_unavailable(_raised(db_engine, "SELEC 1"))
    assert not is_unavailable(_raised(db_engine, "SELECT 'a\x00b'::text"))  # NUL refused: a value, not an outage


def test_sqlite_bugs_are_not_an_outage_though_sqlite_calls_them_operational(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'x.db'}")
    missing = _raised(engine, "SELECT * FROM no_such_table")
    assert isinstance(missing.orig, sqlite3.OperationalError) and not is_unavailable(missing)
    assert not is_unavailable(_raised(engine, "SELEC 1"))
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE t (id INTEGER PRIMARY KEY)"))
        conn.execute(text("INSERT INTO t VALUES (1)"))
    duplicate = _raised(engine, "INSERT INTO t VALUES (1)")
    assert isinstance(duplicate, IntegrityError) and not is_unavailable(duplicate)


def test_sqlite_unreachable_file_and_full_disk_are_an_outage(tmp_path):
    engine = create_engine(f"sqlite:///{tmp_path / 'no' / 'such' / 'dir.db'}")
    assert is_unavailable(_raised(engine, "SELECT 1"))  # "unable to open database file"
    for message in ("database or disk is full", "disk I/O error", "database is locked"):
        assert is_unavailable(DBAPIError.instance("INSERT", {}, sqlite3.OperationalError(message), sqlite3.Error))


def test_an_outage_wrapped_by_other_code_is_still_one():
    engine = create_engine(f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/x")
    cause = _raised(engine, "SELECT 1")
    try:
        raise RuntimeError("storing the grade failed") from cause
    except RuntimeError as wrapped:
        assert is_unavailable(wrapped)
    assert not is_unavailable(RuntimeError("a bug"))


def test_backoff_doubles_to_its_cap_with_jitter_and_resets():
    backoff = Backoff(base_s=0.5, cap_s=4.0, rng=random.Random(7))
    delays = [backoff.next_s() for _ in range(8)]
    ceilings = [0.5, 1.0, 2.0, 4.0, 4.0, 4.0, 4.0, 4.0]
    assert all(c / 2 <= d <= c for d, c in zip(delays, ceilings, strict=True)), delays
    assert len(set(delays)) == len(delays)  # jittered: workers that failed together do not retry together
    backoff.reset()
    assert backoff.next_s() <= 0.5


def test_retrier_logs_an_outage_without_tracebacks_and_a_bug_with_one(caplog):
    """The loops' shared answer to an error: a real refused connection is one warning, a short line per
    retry and one info line when back, each wait from the capped backoff; a bug keeps its traceback."""
    import logging

    from service.outage import Retrier

    log = logging.getLogger("titangrade.test-retrier")
    caplog.set_level(logging.INFO, logger=log.name)
    retry = Retrier(who="loop", log=log, base_s=0.5, cap_s=1.0, resumes="work goes on")
    refused = _raised(create_engine(f"postgresql+psycopg://postgres@127.0.0.1:{_closed_port()}/x"), "SELECT 1")
    waits = [retry.failed(refused, doing="polling") for _ in range(4)]
    assert all(0.25 <= w <= 1.0 for w in waits) and waits[-1] >= 0.5  # capped at 1.0, jittered 0.5-1.0
    retry.succeeded()
    retry.succeeded()  # no second "back" line
    lines = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert [lvl for lvl, _ in lines] == [logging.WARNING] + [logging.INFO] * 5, lines
    assert "database unreachable while polling" in lines[0][1] and "OperationalError" in lines[0][1]
    assert lines[-1][1].startswith("loop: database reachable again after") and lines[-1][1].endswith("work goes on")
    assert not [r for r in caplog.records if r.exc_info]
    assert retry.backoff.failures == 0 and not retry.outage.down
    caplog.clear()
    try:
        raise KeyError("a bug")
    except KeyError as bug:
        retry.failed(bug, doing="polling")
    assert caplog.records[0].levelno == logging.ERROR and caplog.records[0].exc_info
