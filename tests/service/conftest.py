"""Fixtures of the ``oam mcp`` / ``oam serve`` tests: a store URL per back end
(a SQLite file, or a fresh schema on the session's pgserver PostgreSQL) and a
seeded store (``_seed.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _seed import Seeded, seed_store

from tests.pgload import pg_module

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, tmp_path: Path) -> str:
    """An empty store location: a SQLite file path, or a PostgreSQL URL whose
    search_path is a new schema."""
    if backend == "sqlite":
        return str(tmp_path / "store.db")
    pg = pg_module()
    try:
        return str(pg.conninfo_for(pg.new_schema()))
    except pg.ServerUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def seeded(db_url: str) -> Seeded:
    """The store at ``db_url`` with the seeded data written."""
    return seed_store(db_url)
