"""Batches written through ``json_each`` (oam_core/store/sqlite/jsonrows.py,
docs/sqlite.md#writes) store exactly the rows, keys, types and vector bytes that one
bound INSERT per row stores; values JSON cannot carry exactly fall back to binding;
a store writes the same file either way, and a clashing id leaves it as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as hs

from oam_core import SQLiteMemoryStore
from oam_core.store.sqlite import jsonrows
from oam_core.store.strategy import searching_with

NAMES = ["a", "b", "c", "d"]

_value = hs.one_of(
    hs.none(),
    hs.booleans(),
    hs.integers(-(2**64), 2**64),
    hs.floats(allow_nan=False, allow_infinity=False),
    hs.sampled_from(
        [1, 1.0, True, 0, "1", "", "it's", '"quoted" \\ back', "x'); DROP TABLE t; --"]
    ),
    hs.text(alphabet=hs.characters(codec="utf-8"), max_size=12),  # no lone surrogates
    hs.binary(max_size=4),
)


def _table(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE t (pk INTEGER PRIMARY KEY AUTOINCREMENT, a, b, c, d, v BLOB)")


def _dump(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT pk, typeof(a), a, typeof(b), b, typeof(c), c, typeof(d), d, v FROM t ORDER BY pk"
    ).fetchall()


def _bound(rows: list[tuple[Any, ...]], first: int, vectors: np.ndarray | None) -> list[Any]:
    conn = sqlite3.connect(":memory:")
    _table(conn)
    blobs = [None] * len(rows) if vectors is None else [v.tobytes() for v in vectors]
    conn.executemany(
        "INSERT INTO t (pk, a, b, c, d, v) VALUES (?, ?, ?, ?, ?, ?)",
        [(first + i, *row, blobs[i]) for i, row in enumerate(rows)],
    )
    return _dump(conn)


def _int64(value: Any) -> bool:
    return type(value) is not int or -(2**63) <= value < 2**63


def _exact_in_json(value: Any) -> bool:
    return (
        value is None
        or (type(value) is int and _int64(value))
        or (type(value) is str and "\x00" not in value)
    )


@settings(max_examples=400, deadline=None)
@given(
    hs.lists(hs.tuples(_value, _value, _value, _value), min_size=2, max_size=7),
    hs.sampled_from([0, 1, 2, 3]),
    hs.sampled_from([0, 1, 2, 3]),
    hs.integers(1, 2**40),
    hs.booleans(),
)
@example(rows=[(None, None, None, None)] * 3, same=0, empty=0, first=1, vectors=False)
@example(rows=[(1.5, "x", 2, None), (2.5, "y", 3, None)], same=0, empty=3, first=9, vectors=True)
def test_a_json_insert_stores_what_bound_inserts_store(rows, same, empty, first, vectors) -> None:
    # Some columns equal or NULL in every row: the cases written as literals or left out.
    rows = [
        tuple(None if j == empty else rows[0][j] if j == same else v for j, v in enumerate(row))
        for row in rows
    ]
    matrix = (
        np.random.default_rng(len(rows)).standard_normal((len(rows), 3)).astype(np.float32)
        if vectors
        else None
    )
    columns = [list(c) for c in zip(*rows, strict=True)]
    planned = jsonrows.plan(
        "t", "pk", first, NAMES, columns, None if matrix is None else ("v", matrix)
    )
    varying = [c for c in columns if not (c.count(c[0]) == len(c) and len(set(map(type, c))) == 1)]
    carried = all(_exact_in_json(v) for c in varying for v in c) and all(
        _int64(c[0]) for c in columns
    )
    assert (planned is not None) == carried
    if planned is None:
        return
    conn = sqlite3.connect(":memory:")
    _table(conn)
    conn.execute(*planned)
    assert _dump(conn) == _bound(rows, first, matrix)


def test_equal_values_become_literals_or_one_parameter() -> None:
    columns = [["memory"] * 3, [1.25] * 3, [None] * 3, ["x", "y", "z"]]
    sql, params = jsonrows.plan("t", "pk", 5, NAMES, columns)  # type: ignore[misc]
    assert sql == (
        "INSERT INTO t (pk, a, b, d) SELECT ?1 + key, 'memory', ?2, value ->> 0 FROM json_each(?3)"
    )
    assert params == [5, 1.25, '[["x"],["y"],["z"]]']


@pytest.mark.parametrize(
    "column",
    [
        [0.5, 1.5],  # varying floats: SQLite before 3.43 may not read them back exactly
        [True, False],  # bools: JSON would carry true and false, not SQLite's 1 and 0
        [b"a", b"b"],
        ["a\x00b", "c"],
        [2**63, 1],
        [1, 1.0],  # equal, but an integer and a real
    ],
)
def test_values_json_does_not_carry_exactly_fall_back(column: list[Any]) -> None:
    assert jsonrows.plan("t", "pk", 1, ["a"], [column]) is None


def test_vectors_are_cut_from_one_blob() -> None:
    matrix = np.arange(12, dtype=np.float32).reshape(4, 3)
    sql, params = jsonrows.plan("t", "pk", 1, ["a"], [[1, 2, 3, 4]], ("v", matrix))  # type: ignore[misc]
    assert "substr(?2, key * 12 + 1, 12)" in sql and params[1] is matrix  # bound, not copied
    assert jsonrows.plan("t", "pk", 1, ["a"], [[1, 2, 3]], ("v", matrix)) is None  # 4 != 3 rows
    assert jsonrows.plan("t", "pk", 1, ["a"], [[1, 2]], ("v", matrix[:, ::2][:2])) is None


_TIMES = {"created_at", "updated_at", "expires_at", "event_ts"}


def _file(store: SQLiteMemoryStore) -> dict[str, list[tuple[Any, ...]]]:
    impl = store._impl  # type: ignore[attr-defined]
    p = impl.p
    with impl.lock:
        conn = impl.conn
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.v USING fts5vocab(main, {p}chunks_fts, row)"
        )
        out = {}
        for table in ("records", "chunks"):
            cols = [r[1] for r in conn.execute(f"PRAGMA table_info({p}{table})")]
            # Times differ between two stores written a moment apart: their types do not.
            typed = ", ".join(f"typeof({c})" if c in _TIMES else f"typeof({c}), {c}" for c in cols)
            out[table] = conn.execute(f"SELECT {typed} FROM {p}{table} ORDER BY pk").fetchall()
        out["fts"] = conn.execute("SELECT term, doc, cnt FROM temp.v ORDER BY term").fetchall()
        out["seq"] = conn.execute("SELECT name, seq FROM sqlite_sequence ORDER BY name").fetchall()
    return out


def _fill(store: SQLiteMemoryStore) -> None:
    rng = np.random.default_rng(7)
    n = 40
    texts = [f"record {i} about the harbour {'東京' if i % 5 == 0 else 'café'}" for i in range(n)]
    store.add(
        texts,
        "memory",
        embeddings=rng.standard_normal((n, 8)).astype(np.float32),
        record_ids=[f"m{i}" for i in range(n)],
        user_ids=[f"u{i % 3}" for i in range(n)],
        agent_ids="agent-1",
        metadata=[{"i": i, "tag": "t'x"} for i in range(n)],
        ttl_days=30,
    )
    store.add(  # the row-by-row shape, some without a vector
        ["no vector here", "another one"], "memory", record_ids=["k1", "k2"], user_ids="u9"
    )
    store.delete("memory", "m3")
    store.add(
        ["after a delete"],
        "memory",
        embeddings=rng.standard_normal((1, 8)).astype(np.float32),
        record_ids="last",
    )


def test_a_store_writes_the_same_file_with_and_without_json(tmp_path: Path) -> None:
    files = []
    for use_json in (True, False):
        store = SQLiteMemoryStore(tmp_path / f"{use_json}.db", vector_dim=8)
        if not store._impl.json_rows:  # type: ignore[attr-defined]
            pytest.skip("this SQLite has no ->> (before 3.38): every batch is bound")
        store._impl.json_rows = use_json  # type: ignore[attr-defined]
        _fill(store)
        files.append(_file(store))
        query = np.linspace(-1, 1, 8).astype(np.float32)
        hits = store.search(query_vector=query, k=5, user_id="u1", exact_user_match=True)
        files[-1]["hits"] = [(r.id, round(d, 6)) for r, d in hits]  # type: ignore[list-item]
        store.close()
    assert files[0] == files[1]
    assert len(files[0]["records"]) == 42 and files[0]["hits"]


def test_a_clashing_id_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "c.db", vector_dim=8)
    _fill(store)
    before = _file(store)
    vectors = np.ones((3, 8), dtype=np.float32)
    with pytest.raises(ValueError, match=r"record ids already exist: \['m5'\]"):
        store.add(["a", "b", "c"], "memory", embeddings=vectors, record_ids=["new1", "m5", "new2"])
    assert _file(store) == before


def _long_fill(store: SQLiteMemoryStore, n: int = 6, words: int = 60_000) -> None:
    rng = np.random.default_rng(3)
    store.add(
        [f"w{i} " * words + "é東京" for i in range(n)],  # ~0.4 MB each
        "memory",
        embeddings=rng.standard_normal((n, 8)).astype(np.float32),
        record_ids=[f"r{i}" for i in range(n)],
        user_ids=[f"u{i % 2}" for i in range(n)],
    )
    store.add(
        [f"k{i} " * words for i in range(n)],  # no vectors: the keyword shape
        "memory",
        index_texts=[[f"k{i} " * words, f"x{i} " * words] for i in range(n)],
        record_ids=[f"k{i}" for i in range(n)],
    )


@pytest.mark.skipif(not hasattr(sqlite3.Connection, "setlimit"), reason="Python 3.11+")
def test_a_batch_longer_than_sqlites_value_limit_is_written(tmp_path: Path) -> None:
    # Each row is far below the limit on one value, the batch as one JSON text is not:
    # binding row by row wrote it, so the JSON statements must be cut to fit.
    files = []
    for use_json in (True, False):
        store = SQLiteMemoryStore(tmp_path / f"{use_json}.db", vector_dim=8)
        store._impl.json_rows = use_json  # type: ignore[attr-defined]
        store._impl.conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1_000_000)  # type: ignore[attr-defined]
        _long_fill(store)
        files.append(_file(store))
        with searching_with(store, "KEYWORD"):  # no embedder: the text by keywords
            assert [r.id for r, _ in store.search("x5", k=3)] == ["k5"]
        store.close()
    assert files[0] == files[1]
    assert len(files[0]["records"]) == 12 and len(files[0]["chunks"]) == 18


def test_statements_are_cut_to_the_bytes_they_may_bind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonrows, "MAX_STATEMENT_BYTES", 100_000)
    files, statements = [], []
    for use_json in (True, False):
        store = SQLiteMemoryStore(tmp_path / f"{use_json}.db", vector_dim=8)
        store._impl.json_rows = use_json  # type: ignore[attr-defined]
        store._impl.conn.set_trace_callback(statements.append)  # type: ignore[attr-defined]
        _long_fill(store, n=5, words=10_000)  # 30 KB a row: 5 rows = 150 KB
        store._impl.conn.set_trace_callback(None)  # type: ignore[attr-defined]
        files.append(_file(store))
        store.close()
    assert files[0] == files[1]
    json_inserts = [s for s in statements if "json_each" in s and "json_each('[]')" not in s]
    # The 5 records of each call in halves of 2 and 3 rows; the 10 chunks of the
    # second call (30 KB each) in at least 4 statements, and their FTS rows too.
    assert all(len(s) < 100_000 for s in json_inserts)
    assert len([s for s in json_inserts if "INSERT INTO records " in s]) == 4
    assert len([s for s in json_inserts if "INSERT INTO chunks " in s]) >= 5
    assert len([s for s in json_inserts if "INSERT INTO chunks_fts " in s]) >= 5


def test_cached_statements_let_go_of_a_batch_after_it_is_written(tmp_path: Path) -> None:
    # A cached statement keeps its last bound values: each one built here runs once
    # more with an empty array, writing nothing, so the batch's JSON text and vector
    # BLOB are not kept in memory until the statement's next use.
    store = SQLiteMemoryStore(tmp_path / "r.db", vector_dim=8)
    impl = store._impl  # type: ignore[attr-defined]
    if not impl.json_rows:
        pytest.skip("this SQLite has no ->> (before 3.38): every batch is bound")
    seen: list[str] = []
    impl.conn.set_trace_callback(seen.append)
    n = 20
    store.add(
        [f"text {i}" for i in range(n)],
        "memory",
        embeddings=np.ones((n, 8), dtype=np.float32),
        record_ids=[f"r{i}" for i in range(n)],
    )
    impl.conn.set_trace_callback(None)
    batches = [s for s in seen if "json_each(" in s and "json_each('[]')" not in s]
    emptied = [s for s in seen if "json_each('[]')" in s]
    assert len(batches) == 3 and len(emptied) == 3  # records, chunks, FTS rows
    assert all("x'" not in s.lower() for s in emptied)  # no vector BLOB bound
    before = _file(store)
    assert len(before["records"]) == len(before["chunks"]) == n
    hits = store.search(query_vector=np.ones(8, dtype=np.float32), k=3)
    assert len(hits) == 3
