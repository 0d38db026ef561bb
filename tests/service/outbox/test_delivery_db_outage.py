"""The delivery loop waits out a database that went away (service/outage.py): capped backoff, one warning
when the outage starts, a short line per retry and no traceback, one line when it is back; and then it
delivers what was stored meanwhile. A real SQLite file whose directory disappears, a real receiver."""

from __future__ import annotations

import logging
import shutil
import threading

import pytest

pytestmark = pytest.mark.timeout(120)


def test_delivery_loop_waits_out_an_unreachable_database_and_delivers_after(
    sqlite_template, tmp_path, svc, receivers, store_grade, wait_for, caplog
):
    from service import bootstrap
    from service.db import make_engine, transaction
    from service.webhooks import service
    from service.wiring import build_deliverer
    from service.webhooks.models import WebhookEndpoint
    from service.outbox.ssrf import AddressPolicy

    home, away = tmp_path / "db", tmp_path / "db-away"
    home.mkdir()
    shutil.copyfile(sqlite_template, home / "tg.db")
    url = f"sqlite:///{home / 'tg.db'}"
    engine = make_engine(url)
    sessions = bootstrap.sessions(engine)
    with transaction(sessions) as s:
        row = service.create(
            s,
            course="c1",
            url="http://placeholder.invalid",
            event_types=["grade.stored"],
            policy=AddressPolicy(enforce=False),
        )
        secret = row.secret
    recv = receivers([secret]).start()
    with transaction(sessions) as s:
        s.get(WebhookEndpoint, row.id).url = recv.url
    settings = svc.settings(
        url,
        webhook_poll_s=0.05,
        webhook_retry_base_s=0.05,
        webhook_timeout_s=5.0,
        db_retry_base_s=0.05,
        db_retry_max_s=0.2,
    )
    deliverer = build_deliverer(settings, sessions=sessions)
    caplog.set_level(logging.INFO, logger="titangrade.webhooks")
    loop = threading.Thread(target=deliverer.run, daemon=True)
    loop.start()
    try:
        home.rename(away)  # the file and its directory are gone: every new connection fails
        engine.dispose()
        retries = lambda: [r for r in caplog.records if "database down for" in r.getMessage()]  # noqa: E731
        wait_for(lambda: len(retries()) >= 5, 30, "five retries while the database is away")
        away.rename(home)
        wait_for(lambda: any("reachable again" in r.getMessage() for r in caplog.records), 30, "the recovery line")
        sid = store_grade(sessions, score=2.0)  # stored after the outage: delivered by the same loop
        wait_for(lambda: [e for e in recv.entries() if e["submission_id"] == sid], 30, "the delivery after it")
    finally:
        deliverer.stop.set()
        loop.join(timeout=30)
        engine.dispose()
    assert not loop.is_alive()
    ours = [r for r in caplog.records if r.name == "titangrade.webhooks"]
    assert not [r for r in ours if r.exc_info], "a traceback was logged for an outage"
    started = [r for r in ours if r.levelno == logging.WARNING and "database unreachable" in r.getMessage()]
    assert len(started) == 1, [r.getMessage() for r in ours]
    back = [r for r in ours if "reachable again" in r.getMessage()]
    assert len(back) == 1 and back[0].levelno == logging.INFO
    assert all(r.levelno == logging.INFO for r in retries())
    assert "unable to open database file" in started[0].getMessage()
