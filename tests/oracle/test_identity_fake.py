"""The Oracle store records and checks its embedder's identity, statement by statement
(docs/failure-modes.md#c32; docs/store.md#embedder-identity)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from fakedb import FakeConnection
from oracle_helpers import binds_of, script_schema

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.identity import EmbedderIdentity
from oam_core.store.oracle import OracleDBMemoryStore
from oam_core.store.oracle.names import Names

N = Names("S1_")


class _Renamed(HashingEmbedder):
    @property
    def embedder_id(self) -> str:
        return "another-model"


def _open(conn: FakeConnection, clock: Any, embedder: Any, **kwargs: Any) -> OracleDBMemoryStore:
    return OracleDBMemoryStore(embedder, conn, memory_store_id="s1", clock=clock, **kwargs)


def test_the_first_vector_writes_the_identity_in_its_transaction(
    conn: FakeConnection, clock: Any
) -> None:
    script_schema(conn, N)
    store = _open(conn, clock, HashingEmbedder(8))
    conn.reset()
    store.add(["pizza night"], "memory", record_ids="m1")
    kinds = conn.kinds()
    merges = [c for c in conn.statements() if "MERGE INTO S1_MEMORY_STORE_META" in c.sql]
    [rows] = [c.binds for c in merges]
    [row] = rows
    assert row["meta_key"] == "embedder"
    recorded = EmbedderIdentity.from_json(row["meta_value"], "test")
    assert recorded is not None and recorded.embedder_id == "hashing/8"
    assert recorded.dimension == 8 and recorded.fingerprint is not None
    assert len(row["meta_value"]) < 4000  # fits meta_value VARCHAR2(4000)
    commit_at = next(i for i, c in enumerate(conn.calls) if c.kind == "commit")
    assert kinds.count("commit") == 1 and commit_at > conn.calls.index(merges[0])
    conn.reset()
    store.add(["more pizza"], "memory", record_ids="m2")
    assert not binds_of(conn, "MERGE INTO S1_MEMORY_STORE_META")  # recorded once


def test_another_embedder_is_refused_before_any_ddl(conn: FakeConnection, clock: Any) -> None:
    identity = EmbedderIdentity("hashing/8", 8, None).to_json()
    script_schema(conn, N, meta={"embedder": identity})
    with pytest.raises(ValueError, match=r"'hashing/8' \(8 dimensions\).*'another-model'"):
        _open(conn, clock, _Renamed(8), schema_policy="CREATE_IF_NECESSARY")
    assert not [s for s in conn.sql() if s.lstrip().startswith(("CREATE", "ALTER", "MERGE"))]
    store = _open(conn, clock, _Renamed(8), allow_embedder_change=True)
    assert store.embedder_identity is not None
    assert store.embedder_identity.embedder_id == "hashing/8"


def test_reindex_embeds_the_rows_listed_without_vectors(conn: FakeConnection, clock: Any) -> None:
    script_schema(conn, N)
    store = _open(conn, clock, HashingEmbedder(8))
    answers = [[("memory", "m1")], []]
    conn.script(r"c\.embedding IS NULL", lambda *_: answers.pop(0))
    created = datetime(2026, 3, 1, 12, 0, 0)
    row = (
        7,
        "memory",
        "old",
        1,
        None,
        0,
        None,
        created,
        None,
        None,
        None,
        None,
        None,
        None,
    )  # ..., expires_at, valid_from, valid_until
    conn.script(r"FROM S1_MEMORIES r WHERE r.id = :id", [row])
    conn.script(r"SELECT chunk_text FROM S1_RECORD_CHUNKS", [("old text",)])
    conn.reset()
    assert store.reindex() == 1
    inserts = [c for c in conn.statements() if c.sql.startswith("INSERT INTO S1_RECORD_CHUNKS")]
    assert inserts and all(r["embedding"] is not None for r in inserts[0].binds)


def test_identity_json_is_stable() -> None:
    text = EmbedderIdentity("hashing/8", 8, (1.0, 0.0)).to_json()
    assert json.loads(text) == {"id": "hashing/8", "dimension": 8, "fingerprint": [1.0, 0.0]}
    assert EmbedderIdentity.from_json(text, "x") == EmbedderIdentity("hashing/8", 8, (1.0, 0.0))
    with pytest.raises(ValueError, match="unreadable"):
        EmbedderIdentity.from_json('{"dimension": 8}', "x")
