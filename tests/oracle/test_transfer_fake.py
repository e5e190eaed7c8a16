"""``import_store`` and ``export_store`` on the Oracle store at the statement level
(docs/transfer.md): the statements an import issues, one transaction per batch, the
batch sizes, the conflict modes, and the rows an export reads (recording fake
connection, fakedb.py)."""

from __future__ import annotations

import array
import base64
import io
import json
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from fakedb import FakeConnection
from oracle_helpers import NOW, parse_oracle, script_schema

from oam_core import InvalidArgumentError, SQLiteMemoryStore, copy_store, export_store, import_store
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.oracle import OracleDBMemoryStore
from oam_core.store.oracle import sql as oracle_sql
from oam_core.store.oracle.names import Names
from oam_core.transfer import TransferError

N = Names("S1_")
FACTS = [f"f{i}" for i in range(5)]
BEFORE = NOW - timedelta(days=1)


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    """Five facts, two messages of thread t1, one user profile (in that order)."""
    path = tmp_path / "d.jsonl"
    with SQLiteMemoryStore(
        str(tmp_path / "s.db"), embedder=HashingEmbedder(8), clock=lambda: BEFORE
    ) as source:
        source.add([f"fact {i}" for i in range(5)], "fact", record_ids=FACTS, user_ids="u")
        source.add(["hello", ""], "message", thread_ids="t1", roles="user", record_ids=["m0", "m1"])
        source.add(["likes tea"], "user_profile", record_ids="u")
        export_store(source, path)
    return path


def _store(conn: FakeConnection, clock: Any) -> OracleDBMemoryStore:
    script_schema(conn, N)
    return OracleDBMemoryStore(HashingEmbedder(8), conn, clock=clock, memory_store_id="s1")


def _inserts(conn: FakeConnection) -> list[tuple[str, list[dict[str, Any]]]]:
    """``(table, rows)`` of every executemany INSERT, in order."""
    out = []
    for call in conn.statements("executemany"):
        m = re.match(r"INSERT INTO (\w+)", call.sql)
        if m:
            out.append((m.group(1), call.binds))
    return out


def test_import_writes_each_batch_in_one_transaction(
    conn: FakeConnection, clock: Any, dump: Path
) -> None:
    store = _store(conn, clock)
    conn.reset()
    summary = import_store(store, dump, batch_rows=3)
    assert summary.records == {"fact": 5, "message": 2, "user_profile": 1}
    kinds = conn.kinds()
    # First the ids are looked up in the target (on_conflict="error": nothing is
    # written on a clash), in a read that writes nothing; then one commit per batch.
    first = kinds.index("commit")
    assert "executemany" not in kinds[:first]
    assert kinds[first + 1 :].count("commit") == 3
    tables = [(t, [r.get("id", r.get("record_pk")) for r in rows]) for t, rows in _inserts(conn)]
    records = [(t, ids) for t, ids in tables if t != "S1_RECORD_CHUNKS"]
    assert records == [
        ("S1_MEMORIES", ["f0", "f1", "f2"]),
        ("S1_MEMORIES", ["f3", "f4"]),
        ("S1_MESSAGES", ["m0"]),
        ("S1_MESSAGES", ["m1"]),
        ("S1_ACTOR_PROFILES", ["u"]),
    ]
    memories = _inserts(conn)[0][1]
    assert memories[0]["created_at"] == BEFORE.replace(tzinfo=None)
    assert memories[0]["user_id"] == "u" and memories[0]["seq_no"] is None
    messages = [rows[0] for t, rows in _inserts(conn) if t == "S1_MESSAGES"]
    assert [(m["seq_no"], m["content"], m["content_set"]) for m in messages] == [
        (0, "hello", 1),
        (1, "", 1),
    ]
    chunks = [row for t, rows in _inserts(conn) if t == "S1_RECORD_CHUNKS" for row in rows]
    assert len(chunks) == 7  # the empty message has no search row
    assert all(isinstance(c["embedding"], array.array) and len(c["embedding"]) == 8 for c in chunks)
    assert [c["user_id"] for c in chunks][-1] == "u"  # a profile's own id is its scope
    raised = [c for c in conn.statements("execute") if "SET seq_no" in c.sql]
    assert [c.binds for c in raised] == [
        {"seq_no": 0, "thread_id": "t1"},
        {"seq_no": 1, "thread_id": "t1"},
    ]
    for call in conn.statements():
        if call.sql.startswith(("INSERT", "UPDATE", "SELECT")) and "FETCH" not in call.sql:
            parse_oracle(call.sql)


def test_conflict_modes(conn: FakeConnection, clock: Any, dump: Path) -> None:
    store = _store(conn, clock)
    import_store(store, dump)
    conn.reset()
    with pytest.raises(TransferError, match="record id 'f0' \\(fact\\) already exists"):
        import_store(store, dump)
    # The clash is found by the look-up of every id before any write (nothing written).
    assert _inserts(conn) == [] and "executemany" not in conn.kinds()
    conn.reset()
    skipped = import_store(store, dump, on_conflict="skip")
    assert (skipped.records, skipped.skipped_existing) == ({}, 8)
    assert _inserts(conn) == []
    conn.reset()
    replaced = import_store(store, dump, on_conflict="replace")
    assert replaced.records == {"fact": 5, "message": 2, "user_profile": 1}
    sql = conn.sql()
    first_insert = next(i for i, s in enumerate(sql) if s.startswith("INSERT INTO S1_MEMORIES"))
    looked_up = [
        c.binds["id"]
        for c in conn.statements()[:first_insert]
        if c.sql.startswith("SELECT pk FROM") and "FOR UPDATE" in c.sql
    ]
    assert sorted(looked_up) == sorted([*FACTS, "m0", "m1", "u"])


def test_export_reads_every_family_page_by_page(conn: FakeConnection, clock: Any) -> None:
    store = _store(conn, clock)
    vector = array.array("f", [0.5] * 8)
    created = NOW.replace(tzinfo=None)

    def facts(sql: str, binds: dict[str, Any]) -> list[tuple[Any, ...]]:
        if binds["after"] != -1:
            return []
        meta = json.dumps({"$agent_memory": {"status": "invalid", "superseded_by": "f2"}})
        return [
            (
                7,
                "f1",
                "fact",
                "Ana has a dog",
                1,
                None,
                None,
                None,
                "ana",
                None,
                None,
                0,
                meta,
                created,
                None,
                created,  # valid_from
                None,  # valid_until
            )
        ]

    def threads(sql: str, binds: dict[str, Any]) -> list[tuple[Any, ...]]:
        if binds["after"] != -1:
            return []
        return [(3, "t1", "ana", None, None, '{"k": 1}', '{"watermark": 4}', created, 4)]

    conn.script(r"FROM S1_MEMORIES r WHERE r.pk > :after", facts)
    conn.script(r"FROM S1_THREADS r WHERE r.pk > :after", threads)
    conn.script(
        r"FROM S1_RECORD_CHUNKS c WHERE c.record_family = :fam",
        lambda sql, b: [(70, 7, "Ana has a dog", vector, None)] if b["fam"] == "memory" else [],
    )
    out = io.BytesIO()
    summary = export_store(store, out)
    assert summary.records == {"thread": 1, "fact": 1}
    lines = [orjson.loads(line) for line in out.getvalue().splitlines()]
    assert lines[0]["embedder"]["id"] == "hashing/8"
    thread, fact, end = lines[1:]
    assert thread == {
        "kind": "thread",
        "id": "t1",
        "user_id": "ana",
        "agent_id": None,
        "metadata": None,
        "created_at": "2026-03-01T12:00:00.000000+00:00",
        "config": {"k": 1},
        "state": {"watermark": 4},
        "seq_no": 4,
    }
    assert fact["metadata"]["$agent_memory"]["superseded_by"] == "f2"
    [row] = fact["search_rows"]
    assert np.frombuffer(base64.b64decode(row["vector"]), "<f4").tolist() == [0.5] * 8
    assert end == {"kind": "end", "record_counts": {"fact": 1, "thread": 1}, "search_rows": 1}
    pages = [c for c in conn.statements() if "FETCH FIRST :n ROWS ONLY" in c.sql]
    assert [re.search(r"FROM (\w+)", c.sql).group(1) for c in pages] == [  # type: ignore[union-attr]
        "S1_THREADS",
        "S1_THREADS",
        "S1_ACTOR_PROFILES",
        "S1_MESSAGES",
        "S1_MEMORIES",
        "S1_MEMORIES",
    ]


def test_copy_refuses_two_store_objects_on_the_same_oracle_tables() -> None:
    """Two store objects on one schema and prefix (say, two connections to one
    database) are one store: ``copy_store`` refuses, before anything is read; another
    host or prefix is another store. The identity statement parses as Oracle SQL."""
    ident = ("FREE", None, "FREEPDB1", "db-host-1", "FREE", "APP")
    parse_oracle(oracle_sql.database_identity().sql)
    stores = []
    for host, prefix in (("db-host-1", "S1_"), ("db-host-1", "S1_"), ("db-host-2", "S1_")):
        conn = FakeConnection()
        script_schema(conn, Names(prefix))
        conn.script(r"SYS_CONTEXT\('USERENV', 'DB_UNIQUE_NAME'\)", [(*ident[:3], host, *ident[4:])])
        stores.append(
            OracleDBMemoryStore(HashingEmbedder(8), conn, clock=lambda: NOW, memory_store_id="s1")
        )
    a, b, other = stores
    assert a.runtime.backend.database_key() == ("oracle", *ident, "S1_")
    with pytest.raises(InvalidArgumentError, match="the same tables of the same database"):
        copy_store(a, b)
    assert other.runtime.backend.database_key() != a.runtime.backend.database_key()
