"""Alembic environment: runs on a connection handed in by `Store.open`, or on a URL.

URL order: `alembic -x url=...`, $TM_GUIDE_DB, `sqlalchemy.url` in alembic.ini.
"""

from __future__ import annotations

import os
from logging.config import fileConfig

from alembic import context

from tm_guide.store.engine import create_store_engine
from tm_guide.store.models import Base

config = context.config
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)

target_metadata = Base.metadata


def database_url() -> str:
    url = context.get_x_argument(as_dictionary=True).get("url") or os.environ.get("TM_GUIDE_DB")
    return url or config.get_main_option("sqlalchemy.url") or "sqlite:///tm-guide.sqlite"


def run_on(connection) -> None:  # type: ignore[no-untyped-def]
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    context.configure(
        url=database_url(),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=database_url().startswith("sqlite"),
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run_on(connection)
        return
    engine = create_store_engine(database_url())
    try:
        with engine.connect() as connection:
            run_on(connection)
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
