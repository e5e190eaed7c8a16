"""Conformance: a partial store (one table dropped) is refused, not completed, by
``CREATE_IF_EMPTY`` and ``REQUIRE_EXISTING``, naming what is missing;
``CREATE_IF_NECESSARY`` completes it (docs/store.md#schema-policies).
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import _pg
import pytest

from oam_core import OracleAgentMemory
from oam_core.errors import SchemaError


def _tables(backend: Any, tmp_path: Path, name: str) -> set[str]:
    if backend.id == "postgres":
        import psycopg

        with psycopg.connect(_pg.schema_conninfo((str(tmp_path), name))) as conn:
            rows = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            ).fetchall()
        return {r[0] for r in rows}
    with contextlib.closing(sqlite3.connect(tmp_path / name)) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _drop(backend: Any, tmp_path: Path, name: str, table: str) -> None:
    if backend.id == "postgres":
        import psycopg

        with psycopg.connect(_pg.schema_conninfo((str(tmp_path), name)), autocommit=True) as c:
            c.execute(f"DROP TABLE {table} CASCADE")
    else:
        with contextlib.closing(sqlite3.connect(tmp_path / name)) as conn:
            conn.execute(f"DROP TABLE {table}")
            conn.commit()


@pytest.mark.parametrize("table", ["chunk_sources", "chunks", "records"])
def test_a_dropped_table_is_refused_by_create_if_empty_and_filled_by_create_if_necessary(
    backend: Any, make_store: Any, tmp_path: Path, table: str
) -> None:
    if not backend.shared_storage or backend.id == "oracle":
        pytest.skip(f"{backend.id}: storage does not outlive the store object")
    first = make_store(name="p.db")
    first.add(["kept"], "memory", record_ids="k")
    first.close()
    assert table in _tables(backend, tmp_path, "p.db")
    _drop(backend, tmp_path, "p.db", table)
    for policy in ("CREATE_IF_EMPTY", "REQUIRE_EXISTING"):
        with pytest.raises(SchemaError, match=rf"{policy}.*\b{table}\b.* missing"):
            make_store(name="p.db", schema_policy=policy)
    assert table not in _tables(backend, tmp_path, "p.db")  # nothing was created
    completed = make_store(name="p.db", schema_policy="CREATE_IF_NECESSARY")
    assert table in _tables(backend, tmp_path, "p.db")
    if table == "chunk_sources":
        assert completed.get("memory", "k").content == "kept"
    completed.add(["more"], "memory", record_ids="m")
    assert make_store(name="p.db", schema_policy="CREATE_IF_EMPTY").get("memory", "m")


def test_the_client_passes_the_policy_to_the_embedded_store(tmp_path: Path) -> None:
    path = tmp_path / "c.db"
    memory = OracleAgentMemory(connection=path, extract_memories=False)
    memory.add_memory("kept", memory_id="k")
    memory.close()
    _drop(SimpleNamespace(id="sqlite-file"), tmp_path, "c.db", "chunk_sources")
    with pytest.raises(SchemaError, match=r"chunk_sources.* missing"):
        OracleAgentMemory(connection=path, schema_policy="CREATE_IF_EMPTY")
    assert "chunk_sources" not in _tables(SimpleNamespace(id="sqlite-file"), tmp_path, "c.db")
    fresh = tmp_path / "fresh.db"
    created = OracleAgentMemory(
        connection=fresh, schema_policy="CREATE_IF_EMPTY", extract_memories=False
    )
    created.add_memory("new", memory_id="n")
    created.close()


def test_require_existing_never_creates_a_database(tmp_path: Path) -> None:
    from oam_core import SQLiteMemoryStore

    missing = tmp_path / "typo.db"
    for open_it in (
        lambda: SQLiteMemoryStore(missing, schema_policy="REQUIRE_EXISTING"),
        lambda: OracleAgentMemory(connection=missing, schema_policy="REQUIRE_EXISTING"),
        lambda: SQLiteMemoryStore(":memory:", schema_policy="REQUIRE_EXISTING"),
    ):
        with pytest.raises(SchemaError, match="REQUIRE_EXISTING, but no database exists at"):
            open_it()
    assert not missing.exists()
    assert list(tmp_path.iterdir()) == []
    SQLiteMemoryStore(missing).close()  # created under the default policy
    reopened = SQLiteMemoryStore(missing, schema_policy="REQUIRE_EXISTING")
    assert reopened.list("memory") == []
    reopened.close()
