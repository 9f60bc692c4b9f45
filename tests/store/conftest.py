"""Store fixtures: each contract test runs on an SQLite file and on a throwaway PostgreSQL DB."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tm_guide.store import Store

PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"
PG_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/{name}"


def _admin(sql: str) -> None:
    import psycopg

    with psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5) as conn:
        conn.execute(sql)


class PostgresDatabases:
    """Creates throwaway databases and drops them all at the end of the session."""

    def __init__(self) -> None:
        self.created: list[str] = []
        self.unreachable: str | None = None
        try:
            _admin("SELECT 1")
        except Exception as exc:  # any connection failure means: no PostgreSQL here
            self.unreachable = f"PostgreSQL at 127.0.0.1:5432 unreachable: {exc}"

    def create(self) -> str:
        if self.unreachable:
            pytest.skip(self.unreachable)
        name = f"tmg_store_{uuid.uuid4().hex[:12]}"
        _admin(f'CREATE DATABASE "{name}"')
        self.created.append(name)
        return PG_URL.format(name=name)

    def drop_all(self) -> None:
        for name in self.created:
            _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_databases() -> Iterator[PostgresDatabases]:
    databases = PostgresDatabases()
    yield databases
    databases.drop_all()


@pytest.fixture(scope="session")
def pg_shared_url(pg_databases: PostgresDatabases) -> str:
    """One PostgreSQL database for the contract tests (emptied after each test)."""
    return pg_databases.create()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'tm.sqlite'}"
        return
    url = request.getfixturevalue("pg_shared_url")
    yield url
    _empty(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_db_url(
    request: pytest.FixtureRequest, tmp_path: Path, pg_databases: PostgresDatabases
) -> str:
    """An empty database with no schema at all (for migration tests)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    return pg_databases.create()


def _empty(url: str) -> None:
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("TRUNCATE memories, segments, api_keys RESTART IDENTITY CASCADE"))
    engine.dispose()


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    return tmp_path / "index"


@pytest.fixture
def store(db_url: str, index_dir: Path) -> Iterator[Store]:
    store = Store.open(db_url, index_dir)
    yield store
    store.close()
