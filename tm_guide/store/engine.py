"""Engine creation and schema migration; SQLite gets WAL and foreign keys on every connection."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from tm_guide.errors import InvalidInput

MIGRATIONS_PACKAGE = "tm_guide._migrations"  # migrations/ as the wheel ships it (pyproject.toml)
SQLITE_BUSY_TIMEOUT_S = 30


def create_store_engine(url: str, pool_size: int = 5, max_overflow: int = 10) -> Engine:
    """An engine for `url`; SQLite connections get WAL, foreign keys and a busy timeout.

    `pool_size` connections stay open once made, `max_overflow` more are opened under load and
    closed when returned; size the pool to the threads that use the store at once, or every
    request beyond it pays for a new connection (SQLite: its pragmas; PostgreSQL: a backend)."""
    try:
        parsed = make_url(url)
    except Exception as exc:  # sqlalchemy raises ArgumentError with a terse message
        raise InvalidInput(f"not a database URL: {url!r} ({exc})", field="db") from exc
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:"):
            raise InvalidInput(
                "an in-memory SQLite database cannot be shared with the index; use a file URL",
                field="db",
            )
        engine = create_engine(
            parsed,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S, "check_same_thread": False},
            pool_size=pool_size,
            max_overflow=max_overflow,
        )
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return create_engine(parsed, pool_pre_ping=True, pool_size=pool_size, max_overflow=max_overflow)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_S * 1000}")
    cursor.close()


def migrations_dir() -> Path:
    """The Alembic scripts: the checkout's migrations/ (editable installs, the repository
    itself) or the copy a regular install put into the package."""
    checkout = Path(__file__).resolve().parents[2] / "migrations"
    if (checkout / "env.py").is_file():
        return checkout
    spec = importlib.util.find_spec(MIGRATIONS_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        if (Path(location) / "env.py").is_file():
            return Path(location)
    raise InvalidInput(
        f"Alembic migrations not found (neither {checkout} nor the {MIGRATIONS_PACKAGE} package)"
    )


def alembic_config(url: str | None = None) -> Any:
    """An Alembic Config pointing at the project's migrations (no alembic.ini needed)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    if url is not None:
        config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    config.attributes["configure_logger"] = False
    return config


def upgrade_to_head(engine: Engine) -> None:
    """Bring the schema to the newest migration; cheap when it is already there."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext
    from alembic.script import ScriptDirectory

    config = alembic_config()
    head = ScriptDirectory.from_config(config).get_current_head()
    with engine.connect() as connection:
        if MigrationContext.configure(connection).get_current_revision() == head:
            return
    try:
        with engine.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "head")
    except Exception:
        # Another process may have migrated at the same moment; that is fine if we are at head now.
        with engine.connect() as connection:
            if MigrationContext.configure(connection).get_current_revision() != head:
                raise
