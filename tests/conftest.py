"""Shared fixtures: a migrated database, on SQLite (a fresh file per test) and PostgreSQL (a fresh schema per
module, tables emptied per test). PostgreSQL is 127.0.0.1:5432 database `test`; TITANGRADE_TEST_PG_URL overrides."""
from __future__ import annotations

import os
import shutil
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from sqlalchemy import create_engine, text

# tests/ is on sys.path (pytest's prepend import mode), and tests/service or tests/exercises would shadow
# the real packages as namespace packages; the repository root must win.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PG_URL = os.environ.get("TITANGRADE_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
DB_KINDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def _migrate(url: str) -> None:
    from service.db import make_engine, upgrade

    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory) -> str:
    """One migrated SQLite file; each test copies it (much faster than migrating per test)."""
    path = tmp_path_factory.mktemp("dbtemplate") / "template.db"
    _migrate(f"sqlite:///{path}")
    return str(path)


def _fresh_sqlite(template: str, directory) -> str:
    target = directory / f"tg-{uuid.uuid4().hex[:8]}.db"
    shutil.copyfile(template, target)
    return f"sqlite:///{target}"


def _pg_schema(prefix: str) -> tuple[str, callable]:
    """A new, migrated schema; returns its URL (search_path set) and a dropper."""
    admin = create_engine(PG_URL.replace("postgresql://", "postgresql+psycopg://", 1))
    schema = f"{prefix}_{uuid.uuid4().hex[:10]}"
    try:
        with admin.begin() as conn:
            conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    except Exception as exc:  # noqa: BLE001
        admin.dispose()
        pytest.skip(f"PostgreSQL at {PG_URL} unavailable ({type(exc).__name__}); start it or set TITANGRADE_TEST_PG_URL")
    sep = "&" if "?" in PG_URL else "?"
    url = f"{PG_URL}{sep}options={quote(f'-csearch_path={schema}')}"
    _migrate(url)

    def drop() -> None:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()

    return url, drop


def _truncate(url: str) -> None:
    from service.db import make_engine
    from service.models import Base

    engine = make_engine(url)
    names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
    engine.dispose()


@pytest.fixture(scope="module")
def _pg_module_url() -> Iterator[str]:
    url, drop = _pg_schema("tgtest")
    yield url
    drop()


@pytest.fixture(params=DB_KINDS)
def db_url(request, sqlite_template, tmp_path) -> str:
    """A migrated, empty database for one test."""
    if request.param == "sqlite":
        return _fresh_sqlite(sqlite_template, tmp_path)
    url = request.getfixturevalue("_pg_module_url")
    _truncate(url)
    return url


@pytest.fixture(scope="module", params=DB_KINDS)
def module_db_url(request, sqlite_template, tmp_path_factory) -> Iterator[str]:
    """A migrated database shared by one module's tests (e.g. behind a module-scoped server)."""
    if request.param == "sqlite":
        yield _fresh_sqlite(sqlite_template, tmp_path_factory.mktemp("moddb"))
        return
    url, drop = _pg_schema("tgmod")
    yield url
    drop()


@pytest.fixture
def db_engine(db_url):
    from service.db import make_engine

    engine = make_engine(db_url)
    yield engine
    engine.dispose()
