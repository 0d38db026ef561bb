"""The start-up steps every titangrade process shares: settings, logging, the engine, hooked sessions.

The commands (service/commands.py, service/*/commands.py), the app and the grading processes call these;
none of them reaches into another module's private helpers. What a process runs (executor, outbox
senders, worker) is chosen in service/wiring.py, which builds on these.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from pydantic import ValidationError
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from service import signals
from service.auth import cache as credential_cache
from service.config import Settings, load_settings
from service.db import SchemaMismatch, check_schema, make_engine, make_sessionmaker, transaction
from service.errors import ServiceError
from service.telemetry import logs as telemetry_logs


def configure_logging() -> None:
    """Log lines on stderr for a command's process: JSON with the request/submission/job ids, or
    TITANGRADE_LOG_FORMAT=text (service/telemetry/logs.py); Alembic only speaks up for warnings."""
    telemetry_logs.configure()


def settings(**overrides) -> Settings:
    """Validated settings (environment, then `overrides`); invalid ones end the command with the reason."""
    try:
        return load_settings(**overrides)
    except ValidationError as exc:
        sys.exit(f"titangrade: invalid settings: {exc}")


def engine(settings: Settings, *, migrate: bool) -> Engine:
    """The process's engine, its schema checked (and upgraded when `migrate`); a mismatch ends the command."""
    made = make_engine(settings.database_url)
    try:
        check_schema(made, migrate=migrate)
    except SchemaMismatch as exc:
        sys.exit(f"titangrade: {exc}")
    return made


def sessions(engine: Engine) -> sessionmaker[Session]:
    """A session factory with the service's commit hooks: committed progress events wake workers and event
    streams (service/signals.py); a committed credential change empties this process's credential caches."""
    factory = make_sessionmaker(engine)
    signals.install(factory)
    credential_cache.install(factory)
    return factory


def command_sessions() -> tuple[Settings, sessionmaker[Session]]:
    """Settings and sessions for an administrative command (the schema must already be at head)."""
    loaded = settings()
    return loaded, sessions(engine(loaded, migrate=False))


def fail(exc: BaseException) -> None:
    """End a command with the error's own message (a ServiceError's `message`, else its text)."""
    sys.exit(f"titangrade: {getattr(exc, 'message', exc)}")


@contextlib.contextmanager
def writing(*errors: type[Exception]) -> Iterator[tuple[Settings, Session]]:
    """One transaction for a command; a ServiceError (or one of `errors`) ends the CLI with its message."""
    caught: tuple[type[Exception], ...] = (ServiceError, *errors)
    loaded, factory = command_sessions()
    try:
        with transaction(factory) as session:
            yield loaded, session
    except caught as exc:
        fail(exc)
