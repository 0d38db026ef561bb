"""Alembic environment: uses the engine handed over by service.db, or TITANGRADE_DATABASE_URL."""
from alembic import context

from service.db import make_engine
from service.models import Base

config = context.config
target_metadata = Base.metadata


def _sqlite_foreign_keys(connection, on: bool) -> None:
    """SQLite rebuilds a table to alter it (batch mode); with foreign keys on, dropping the old
    `submissions` would cascade-delete its jobs and events. The pragma only works outside a transaction,
    so it goes straight to the driver connection (which runs in autocommit, see service.db)."""
    if connection.dialect.name == "sqlite":
        connection.connection.driver_connection.execute(f"PRAGMA foreign_keys={'ON' if on else 'OFF'}")


def run_migrations_online() -> None:
    engine = config.attributes.get("engine")
    if engine is None:
        from service.config import load_settings

        engine = make_engine(load_settings().database_url)
    with engine.connect() as connection:
        _sqlite_foreign_keys(connection, on=False)
        try:
            context.configure(connection=connection, target_metadata=target_metadata,
                              render_as_batch=connection.dialect.name == "sqlite")
            with context.begin_transaction():
                context.run_migrations()
            connection.commit()
        finally:
            _sqlite_foreign_keys(connection, on=True)


run_migrations_online()
