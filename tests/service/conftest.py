"""Fixtures of the ``oam mcp`` / ``oam serve`` tests: a store URL per back end
(a SQLite file, or a fresh schema on the session's pgserver PostgreSQL) and a
seeded store (``_seed.py``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
from _seed import Seeded, seed_store

BACKENDS = ["sqlite", "postgres"]


def _pg_module() -> ModuleType:
    """The conformance suite's pgserver helper (one server per session)."""
    if "_pg" not in sys.modules:
        path = Path(__file__).parents[1] / "conformance" / "_pg.py"
        spec = importlib.util.spec_from_file_location("_pg", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["_pg"] = module
        spec.loader.exec_module(module)
    return sys.modules["_pg"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, tmp_path: Path) -> str:
    """An empty store location: a SQLite file path, or a PostgreSQL URL whose
    search_path is a new schema."""
    if backend == "sqlite":
        return str(tmp_path / "store.db")
    pg = _pg_module()
    try:
        return str(pg.conninfo_for(pg.new_schema()))
    except pg.ServerUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture
def seeded(db_url: str) -> Seeded:
    """The store at ``db_url`` with the seeded data written."""
    return seed_store(db_url)
