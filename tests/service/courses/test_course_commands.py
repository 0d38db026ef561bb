"""`titangrade courses schedule set|show`, `courses extend` and `courses timezone` against a real database
(SQLite and PostgreSQL): what they write is what the API and the intake read; bad times and zones are refused
with the fix named."""

from __future__ import annotations

import datetime as dt

from cli_support import cli
from sqlalchemy import select

from service.auth.service import get_or_create_identity
from service.courses import schedules
from service.courses.schedule_models import Extension
from service.db import transaction


def test_set_show_extend_and_timezone(db_url, sessions):
    assert cli("courses", "timezone", "c1", "Europe/Berlin", db_url=db_url).returncode == 0
    set_ = cli("courses", "schedule", "set", "c1", "ch05.svc_sum", "--opens-at", "2026-09-01T08:00:00Z",
               "--due-at", "2026-10-24T12:00:00+02:00", "--late", "per_hour", "--percent", "5", "--floor", "50",
               db_url=db_url)
    assert set_.returncode == 0, set_.stderr
    assert "due 2026-10-24T12:00+02:00 (Europe/Berlin)" in set_.stdout and "per_hour 5% floor 50%" in set_.stdout
    with transaction(sessions) as s:
        get_or_create_identity(s, issuer="titangrade", subject="alice")
    ext = cli("courses", "extend", "c1", "--user", "alice", "--exercise", "ch05.svc_sum", "--due-at",
              "2026-10-26T12:00:00+01:00", db_url=db_url)  # after the clocks went back (25 October): +01:00
    assert ext.returncode == 0, ext.stderr
    shown = cli("courses", "schedule", "show", "c1", db_url=db_url).stdout
    assert "times in Europe/Berlin" in shown and "titangrade:alice ch05.svc_sum due 2026-10-26T12:00+01:00" in shown
    with sessions() as s:
        row = schedules.schedules(s, course="c1")["ch05.svc_sum"]
        assert row.due_at == dt.datetime(2026, 10, 24, 10, 0) and row.late_kind == "per_hour"
        assert s.scalar(select(Extension.due_at)) == dt.datetime(2026, 10, 26, 11, 0)


def test_bad_times_zones_and_policies_are_refused_with_the_fix(db_url):
    naive = cli("courses", "schedule", "set", "c1", "ch05.svc_sum", "--due-at", "2026-10-25T12:00", db_url=db_url)
    assert naive.returncode != 0 and "no offset" in naive.stderr
    zone = cli("courses", "timezone", "c1", "Moon/Base", db_url=db_url)
    assert zone.returncode != 0 and "IANA" in zone.stderr
    policy = cli("courses", "schedule", "set", "c1", "ch05.svc_sum", "--late", "closed", db_url=db_url)
    assert policy.returncode != 0 and "needs a due_at" in policy.stderr
    nobody = cli("courses", "extend", "c1", "--user", "zed", "--exercise", "x", "--due-at", "2026-10-25T12:00Z",
                 db_url=db_url)
    assert nobody.returncode != 0 and "no user 'zed'" in nobody.stderr
