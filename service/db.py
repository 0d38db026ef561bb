"""Engine, sessions and schema checks. SQLite (WAL, immediate transactions) or PostgreSQL (psycopg 3)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
READ_ONLY = "titangrade_read_only"  # execution option: on SQLite, a plain (deferred) BEGIN, no writer lock


class Base(DeclarativeBase):
    pass


class SchemaMismatch(RuntimeError):
    """The database schema is not the one this code was written for."""


def utcnow() -> dt.datetime:
    """Naive UTC, the one time representation stored in both SQLite and PostgreSQL."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def normalise_url(url: str) -> str:
    """Accept plain postgresql:// URLs and route them to psycopg 3."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def make_engine(url: str) -> Engine:
    """One engine per process. SQLite gets WAL and BEGIN IMMEDIATE so a claim is one atomic writer."""
    url = normalise_url(url)
    if url.startswith("sqlite"):
        # pool_size: the request threads' credential checks, the intake writer and the workers each hold one;
        # past the pool, SQLAlchemy opens and closes a connection (and its PRAGMAs) per checkout
        engine = create_engine(
            url, connect_args={"timeout": 30, "check_same_thread": False}, pool_size=20, max_overflow=20
        )

        @event.listens_for(engine, "connect")
        def _sqlite_connect(dbapi_conn, _record) -> None:
            dbapi_conn.isolation_level = None  # we emit BEGIN ourselves
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn) -> None:
            # Immediate: the writer lock is taken at BEGIN, so read-then-write never hits SQLITE_BUSY mid-way.
            # A session made by read_sessions() only reads: WAL gives it a snapshot without the writer lock,
            # so it never queues behind (or holds up) a write.
            conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get(READ_ONLY) else "BEGIN IMMEDIATE")

        return engine
    return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    """Plain sessions whose rows stay readable after commit. The service's commit hooks (wake-ups, credential
    cache) are installed by service/bootstrap.sessions: this module imports no feature package."""
    return sessionmaker(engine, expire_on_commit=False)


def read_sessions(engine: Engine) -> sessionmaker[Session]:
    """Sessions for lookups that write nothing (the per-request credential check). On SQLite their
    transactions are deferred: they neither wait for nor hold up the single writer (so they must not write:
    a deferred transaction that writes can fail with "database is locked")."""
    return sessionmaker(engine.execution_options(**{READ_ONLY: True}), expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session whose work commits together or not at all."""
    with factory() as session, session.begin():
        yield session


def _alembic_config(engine: Engine):
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    cfg = _alembic_config(None)  # type: ignore[arg-type]
    head = ScriptDirectory.from_config(cfg).get_current_head()
    if head is None:
        raise RuntimeError(f"no migration head in {MIGRATIONS_DIR}")
    return head


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def upgrade(engine: Engine) -> str:
    """Bring the schema to head (`titangrade db upgrade`); returns the new revision."""
    from alembic import command

    command.upgrade(_alembic_config(engine), "head")
    return head_revision()


def check_schema(engine: Engine, *, migrate: bool) -> str:
    """Refuse a schema we do not know; upgrade an older one only when asked to."""
    from alembic.script import ScriptDirectory

    current = current_revision(engine)
    head = head_revision()
    if current == head:
        return head
    known = {rev.revision for rev in ScriptDirectory.from_config(_alembic_config(engine)).walk_revisions()}
    if current is not None and current not in known:
        raise SchemaMismatch(
            f"database schema revision {current} is unknown to this titangrade version "
            f"(head {head}); upgrade titangrade or point TITANGRADE_DATABASE_URL elsewhere"
        )
    if not migrate:
        raise SchemaMismatch(
            f"database schema is at {current or 'empty'}, code needs {head}; run `titangrade db upgrade` first"
        )
    return upgrade(engine)
