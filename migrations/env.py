"""Alembic environment: uses the engine handed over by service.db, or TITANGRADE_DATABASE_URL."""
from alembic import context

from service.db import make_engine
from service.models import Base

config = context.config
target_metadata = Base.metadata


def run_migrations_online() -> None:
    engine = config.attributes.get("engine")
    if engine is None:
        from service.config import load_settings

        engine = make_engine(load_settings().database_url)
    with engine.connect() as connection:
        context.configure(connection=connection, target_metadata=target_metadata,
                          render_as_batch=connection.dialect.name == "sqlite")
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations_online()
