"""The SQLite write path (docs/sqlite.md#writes): narrow INSERTs store the same rows
as full ones, WAL checkpoints run off the committing thread, schema version 4's
partial indexes (and the 3 -> 4 upgrade), the page size of new files, and the
column-wise metadata serialisation."""

from __future__ import annotations

import gc
import json
import math
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as hs

from oam_core import SQLiteMemoryStore
from oam_core.apis import metadatajson
from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.metadatajson import dump_metadata, dump_metadata_column
from oam_core.store import planning, writeplan
from oam_core.store.planning import PlanContext
from oam_core.store.sql import statements as st
from oam_core.store.sql.schema import THREAD_INDEX_WHERE
from oam_core.store.sqlite import checkpoint
from oam_core.store.sqlite.bulk import MAX_LITERAL_CHARS, literal, narrow_insert
from oam_core.store.sqlite.dialect import SQLITE
from oam_core.store.sqlite.schema import SCHEMA_VERSION, SPARSE_RECORD_INDEXES

# -- narrow_insert ------------------------------------------------------------------

COLUMNS = ["a", "b", "c", "d"]

_value = hs.one_of(
    hs.none(),
    hs.booleans(),
    hs.integers(-(2**63), 2**63 - 1),
    hs.floats(allow_nan=False, allow_infinity=False),
    hs.sampled_from([1, 1.0, True, 0, 0.0, False, "1", "", "it's", "x'); DROP TABLE t; --"]),
    hs.text(max_size=8),
    hs.text(min_size=MAX_LITERAL_CHARS - 1, max_size=MAX_LITERAL_CHARS + 1),
    hs.binary(max_size=4),
)


def _columns(rows: list[tuple[Any, ...]]) -> list[list[Any]]:
    return [list(c) for c in zip(*rows, strict=True)] if rows else [[] for _ in COLUMNS]


def _stored(sql: str, params: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (a, b, c, d)")
    conn.executemany(sql, params)
    return conn.execute(
        "SELECT typeof(a), a, typeof(b), b, typeof(c), c, typeof(d), d FROM t ORDER BY rowid"
    ).fetchall()


@settings(max_examples=300, deadline=None)
@given(
    hs.lists(hs.tuples(_value, _value, _value, _value), min_size=0, max_size=6),
    hs.sampled_from([0, 1, 2, 3]),
    hs.sampled_from([0, 1, 2, 3]),
)
@example(rows=[(None, None, None, None)] * 2, same=0, empty=0)  # every column left out
def test_a_narrow_insert_stores_what_a_full_insert_stores(rows, same, empty) -> None:
    # Make some columns constant or all-NULL, the cases narrowing acts on.
    rows = [
        tuple(None if j == empty else rows[0][j] if j == same else v for j, v in enumerate(row))
        for row in rows
    ]
    full = "INSERT INTO t (a, b, c, d) VALUES (?, ?, ?, ?)"
    sql, params = narrow_insert("t", COLUMNS, _columns(rows))
    assert _stored(sql, params) == _stored(full, rows)


def test_columns_null_or_equal_in_every_row_are_not_bound() -> None:
    rows = [(None, "memory", 7, "x"), (None, "memory", 7, "y")]
    sql, params = narrow_insert("t", COLUMNS, _columns(rows))
    assert sql == "INSERT INTO t (b, c, d) VALUES ('memory', 7, ?)"
    assert params == [("x",), ("y",)]


def test_equal_floats_stay_bound() -> None:
    # SQLite before 3.43 may read a decimal literal one unit in the last place off.
    rows = [(None, "memory", 1772366400.020769, "x"), (None, "memory", 1772366400.020769, "y")]
    sql, params = narrow_insert("t", COLUMNS, _columns(rows))
    assert sql == "INSERT INTO t (b, c, d) VALUES ('memory', ?, ?)"
    assert params == [(1772366400.020769, "x"), (1772366400.020769, "y")]


def test_one_row_binds_every_column_so_the_statement_is_reused() -> None:
    sql, params = narrow_insert("t", COLUMNS, _columns([(None, "memory", 1, "x")]))
    assert sql == "INSERT INTO t (a, b, c, d) VALUES (?, ?, ?, ?)"
    assert params == [(None, "memory", 1, "x")]


def test_equal_values_of_different_types_stay_bound() -> None:
    # 1 == 1.0 == True, but SQLite stores an integer, a real and an integer.
    sql, params = narrow_insert(
        "t", COLUMNS, _columns([(1, 0, 0, 0), (1.0, 0, 0, 0), (True, 0, 0, 0)])
    )
    assert sql == "INSERT INTO t (a, b, c, d) VALUES (?, 0, 0, 0)"
    assert [type(p[0]) for p in params] == [int, float, bool]


def test_bound_columns_are_never_compared() -> None:
    vec = np.zeros(3, dtype=np.float32)
    sql, params = narrow_insert(
        "t", COLUMNS, _columns([(vec, 1, 2, 3), (vec, 1, 2, 3)]), bound=("a",)
    )
    assert sql == "INSERT INTO t (a, b, c, d) VALUES (?, 1, 2, 3)"
    assert len(params) == 2 and params[0][0] is vec


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (7, "7"),
        (-(2**63), str(-(2**63))),
        (0.1, None),
        (1e300, None),
        ("it's", "'it''s'"),
        ("", "''"),
        (float("nan"), None),
        (float("inf"), None),
        (True, None),
        (b"x", None),
        ("a\x00b", None),
        ("x" * (MAX_LITERAL_CHARS + 1), None),
    ],
)
def test_literal(value: object, expected: str | None) -> None:
    assert literal(value) == expected
    if expected is not None:
        back = sqlite3.connect(":memory:").execute(f"SELECT {expected}").fetchone()[0]
        assert back == value and type(back) is type(value)


# -- the background checkpoint --------------------------------------------------------


def _add(store: SQLiteMemoryStore, n: int, start: int = 0, dim: int = 384) -> None:
    rng = np.random.default_rng(start)
    store.add(
        [f"text {i}" for i in range(start, start + n)],
        "memory",
        embeddings=rng.standard_normal((n, dim)).astype(np.float32),
        record_ids=[f"r{i}" for i in range(start, start + n)],
    )


def _with_checkpointer(
    *args: Any, **kwargs: Any
) -> tuple[SQLiteMemoryStore, checkpoint.Checkpointer]:
    """A file store and its WAL checkpointer (a file store always has one)."""
    store = SQLiteMemoryStore(*args, **kwargs)
    ckpt = store._impl.checkpointer
    assert ckpt is not None
    return store, ckpt


def _wal_frames(path: Path) -> tuple[int, int]:
    """``(frames in the log, frames copied to the database)`` from a new connection."""
    conn = sqlite3.connect(path)
    try:
        _busy, log, done = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return log, done
    finally:
        conn.close()


def test_commits_past_the_threshold_are_checkpointed_by_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store, ckpt = _with_checkpointer(str(path), vector_dim=384)
    assert store._impl.conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    _add(store, 4000)  # 4000 rows of 1.5 KiB: past WAL_CHECKPOINT_BYTES
    assert (path.parent / "s.db-wal").stat().st_size >= checkpoint.WAL_CHECKPOINT_BYTES
    assert ckpt.drain()
    assert ckpt.done >= 1
    log, done = _wal_frames(path)
    assert log == done  # every frame of the log is in the database file
    assert len(store.list("memory")) == 4000
    store.close()


def test_small_commits_do_not_start_the_thread(tmp_path: Path) -> None:
    store, ckpt = _with_checkpointer(str(tmp_path / "s.db"), vector_dim=4)
    for i in range(5):
        _add(store, 1, start=i, dim=4)
    assert ckpt._thread is None and ckpt.done == 0
    store.close()


def test_after_a_checkpoint_the_log_shrinks_and_small_commits_stay_quiet(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    store, ckpt = _with_checkpointer(str(path), vector_dim=384)
    _add(store, 8000)
    assert ckpt.drain() and ckpt.done == 1
    for i in range(20):  # the first resets the log, truncated to the threshold
        _add(store, 1, start=8000 + i)
    assert ckpt.drain()
    assert ckpt.done == 1
    assert (tmp_path / "s.db-wal").stat().st_size <= checkpoint.WAL_CHECKPOINT_BYTES
    store.close()


def test_an_idle_log_is_truncated_by_the_thread(tmp_path: Path) -> None:
    """After a bulk load the log is cut to zero bytes once no commit came for
    ``IDLE_TRUNCATE_S`` (polled, not timed); searches and adds go on after it."""
    path = tmp_path / "s.db"
    wal = tmp_path / "s.db-wal"
    store, ckpt = _with_checkpointer(str(path), vector_dim=384)
    _add(store, 8000)
    assert wal.stat().st_size > checkpoint.WAL_CHECKPOINT_BYTES
    for _ in range(600):  # up to 60 s on a loaded machine
        if ckpt.truncated:
            break
        time.sleep(0.1)
    assert ckpt.truncated == 1 and ckpt.drain()
    assert wal.stat().st_size == 0
    assert len(store.list("memory")) == 8000
    _add(store, 10, start=8000)
    assert len(store.list("memory")) == 8010
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM records").fetchone() == (8010,)


def test_without_the_thread_the_committer_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store, ckpt = _with_checkpointer(str(path), vector_dim=384)
    ckpt.close()  # as after a fork: the thread is gone
    _add(store, 4000)
    log, done = _wal_frames(path)
    assert ckpt.done == 0
    assert log == done  # the commit checkpointed on its own connection
    store.close()


def test_close_stops_the_thread(tmp_path: Path) -> None:
    store, ckpt = _with_checkpointer(str(tmp_path / "s.db"), vector_dim=384)
    _add(store, 4000)
    thread = ckpt._thread
    assert thread is not None and thread.is_alive()
    store.close()
    assert not thread.is_alive()
    assert thread not in threading.enumerate()


def test_a_store_never_closed_stops_its_thread_when_collected(tmp_path: Path) -> None:
    store, ckpt = _with_checkpointer(str(tmp_path / "s.db"), vector_dim=384)
    _add(store, 4000)
    thread = ckpt._thread
    assert thread is not None and thread.is_alive()
    del store
    gc.collect()
    thread.join(timeout=30)
    assert not thread.is_alive()


def test_in_memory_and_read_only_stores_have_no_checkpoint_thread(tmp_path: Path) -> None:
    assert SQLiteMemoryStore(":memory:")._impl.checkpointer is None


def test_the_thread_survives_a_failing_checkpoint(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "s.db"
    store, ckpt = _with_checkpointer(str(path), vector_dim=384)
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.setattr(ckpt, "uri", f"{(tmp_path / 'elsewhere' / 'missing.db').as_uri()}?mode=rw")
    _add(store, 4000)  # its connection cannot open: logged, not raised
    assert ckpt.drain()
    assert ckpt._thread.is_alive() and ckpt.done == 0
    assert not (tmp_path / "elsewhere" / "missing.db").exists()  # never created
    monkeypatch.setattr(ckpt, "uri", f"{path.as_uri()}?mode=rw")
    _add(store, 10, start=4000)
    assert ckpt.drain()
    assert ckpt.done == 1
    store.close()


# -- schema version 4 -------------------------------------------------------------------


def _index_sql(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        return dict(
            conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
            )
        )


def test_new_stores_have_partial_agent_and_expiry_indexes(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    SQLiteMemoryStore(str(path)).close()
    sql = _index_sql(path)
    for name, column in zip(SPARSE_RECORD_INDEXES, ["agent_id", "expires_at"], strict=True):
        assert sql[name].endswith(f"WHERE {column} IS NOT NULL")
    assert "WHERE" not in sql["records_user"]
    # Schema 5: memories without a thread skip the thread index; every message stays
    # in it, so the next number of thread-less messages is still read off it.
    assert sql["records_thread"].endswith(f"WHERE {THREAD_INDEX_WHERE}")
    with sqlite3.connect(path) as conn:
        for thread_id in (None, "t1"):
            stmt = st.next_seq(SQLITE, "", thread_id)
            plan = conn.execute(f"EXPLAIN QUERY PLAN {stmt.sql}", stmt.params).fetchall()
            assert any("records_thread" in row[-1] for row in plan), plan


def _as_version_3(path: Path) -> None:
    """Rewrite a current file as version 3 wrote it: full indexes, version row 3."""
    with sqlite3.connect(path) as conn:
        for name, sql in _index_sql(path).items():
            if name in SPARSE_RECORD_INDEXES:
                conn.execute(f"DROP INDEX {name}")
                conn.execute(sql[: sql.index(" WHERE")])
        conn.execute("UPDATE oam_meta SET value = '3' WHERE key = 'schema_version'")


def test_a_version_3_file_is_upgraded_and_keeps_its_records(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteMemoryStore(str(path), vector_dim=4)
    store.add(
        ["a", "b"],
        "memory",
        embeddings=[[1, 0, 0, 0], [0, 1, 0, 0]],
        record_ids=["x", "y"],
        agent_ids=["ag", None],
        ttl_days=[3, None],
    )
    store.close()
    _as_version_3(path)
    assert "WHERE" not in _index_sql(path)["records_agent"]
    store = SQLiteMemoryStore(str(path), vector_dim=4)
    with sqlite3.connect(path) as conn:
        assert conn.execute(
            "SELECT value FROM oam_meta WHERE key = 'schema_version'"
        ).fetchone() == (str(SCHEMA_VERSION),)
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT pk FROM records WHERE agent_id = ?", ("ag",)
        ).fetchall()
        assert any("records_agent" in row[-1] for row in plan)
    assert _index_sql(path)["records_agent"].endswith("WHERE agent_id IS NOT NULL")
    assert [r.id for r in store.list("memory", agent_id="ag")] == ["x"]
    assert [r.id for r, _ in store.search(query_vector=[0, 1, 0, 0], k=1)] == ["y"]
    store.close()


# -- metadata, column-wise ----------------------------------------------------------------

METADATA = [
    None,
    {},
    {"user": "u1", "tags": ["a", "b"]},
    {"n": 1e-05, "big": 2**63 - 1, "neg": -(2**63), "f": -0.0, "t": True, "z": None},
    {"nested": {"deeper": [1, [2, {"k": "v"}]]}},
    {"text": 'naïve 日本語 \u2028 "quoted" \\ back'},
    {"lookalike": "a literal \\u0000 escape"},
    {"tuple": (1, 2)},
    {"nul": "a\x00b"},
    {"surrogate": "\ud800"},
    {"nan": math.nan},
    {"inf": math.inf},
    {"huge": 2**64},
    {1: "int key"},
    {"$agent_memory": {"x": 1}},
    {"$agent_memory": {"managed": True}, "a": 1},
    {"$agent_memory": {"managed": 1}},
    {"$agent_memory": {"managed": True, "status": "invalid"}},
    {"when": object()},
    "not a dict",
    [1, 2],
]


def _one(value: object, i: int) -> str | Exception:
    try:
        return dump_metadata(value, f"metadata[{i}]")  # type: ignore[return-value]
    except ValueError as exc:
        return exc


@pytest.mark.parametrize("i", range(len(METADATA)))
def test_the_column_serialises_each_entry_as_dump_metadata_does(i: int) -> None:
    value = METADATA[i]
    column = [{"ok": 1}, value, {"ok": 2}]
    expected = _one(value, 1)
    if isinstance(expected, Exception):
        with pytest.raises(ValueError) as info:
            dump_metadata_column(column)
        assert str(info.value) == str(expected)
        assert "metadata[1]" in str(info.value)
    else:
        out = dump_metadata_column(column)
        assert out[1] == expected
        assert out[0] == '{"ok":1}' and out[2] == '{"ok":2}'
        if value is not None:
            assert json.loads(out[1]) == json.loads(json.dumps(value))


def test_the_managed_mark_is_the_one_reserved_object_a_caller_writes() -> None:
    assert dump_metadata({"$agent_memory": {"managed": True}, "a": 1}) == (
        '{"$agent_memory":{"managed":true},"a":1}'
    )
    for reserved in ({"managed": 1}, {"managed": False}, {"managed": True, "x": 1}, {}):
        with pytest.raises(ValueError, match=r"the one object you may write there is"):
            dump_metadata({"$agent_memory": reserved})
    # the library writes any object there
    text = dump_metadata({"$agent_memory": {"managed": True, "x": 1}}, library=True)
    assert json.loads(text) == {"$agent_memory": {"managed": True, "x": 1}}


def test_one_dict_broadcast_is_serialised_once(monkeypatch) -> None:
    calls = []
    real = metadatajson._plain_text
    monkeypatch.setattr(metadatajson, "_plain_text", lambda v: calls.append(v) or real(v))
    shared = {"user": "u"}
    assert dump_metadata_column([shared] * 50) == ['{"user":"u"}'] * 50
    assert len(calls) == 1


# -- the bulk shape of plan_records -------------------------------------------------------------


class _Text(str):
    """A str subclass: plan_records then plans row by row (the bulk shape needs exact str)."""


def _plans(contents: list[str], matrix: np.ndarray, **kw: Any) -> list[planning.RowPlan]:
    from datetime import datetime, timezone

    from oam_core.store.options import MemoryRetentionConfig

    ctx = PlanContext(
        chunk_chars=2000,
        vector_dim=matrix.shape[1],
        has_embedder=False,
        retention=MemoryRetentionConfig(),
        now=datetime(2026, 12, 1, tzinfo=timezone.utc),
    )
    args: dict[str, Any] = dict(
        index_texts=NOT_SET,
        embeddings=matrix,
        record_ids=[f"id{i}" for i in range(len(contents))],
        thread_ids=NOT_SET,
        user_ids=NOT_SET,
        agent_ids=NOT_SET,
        roles=NOT_SET,
        timestamps=NOT_SET,
        metadata=NOT_SET,
        ttl_days=NOT_SET,
        ttl_anchor=NOT_SET,
    )
    args.update(kw)
    planned = writeplan.plan_batch(PendingRecordBatch(contents, "memory", **args), ctx)
    return planned.row_plans() if isinstance(planned, planning.BulkPlan) else planned


def test_the_bulk_shape_plans_what_the_row_by_row_loop_plans() -> None:
    contents = ["alpha beta", "   ", "", "gamma\n", "x" * 3000, "naïve"]
    matrix = np.random.default_rng(0).standard_normal((len(contents), 8)).astype(np.float32)
    kw: dict[str, Any] = dict(
        user_ids=["u1", "u2", None, "u1", "u3", "u1"],
        thread_ids="t1",
        metadata=[{"a": 1}, None, {"b": [1, 2]}, None, {}, {"c": "d"}],
        ttl_days=7,
    )
    bulk = _plans(contents, matrix, **kw)
    rows = _plans([_Text(c) for c in contents], matrix, **kw)
    assert len(bulk) == len(rows) == len(contents)
    for b, r in zip(bulk, rows, strict=True):
        assert type(b.content) is str and type(r.content) is _Text
        for name in (
            "family",
            "id",
            "record_type",
            "content",
            "role",
            "thread_id",
            "user_id",
            "agent_id",
            "timestamp",
            "metadata",
            "expires_at",
            "chunk_scope",
        ):
            assert getattr(b, name) == getattr(r, name), name
        assert [(c.text, c.sources) for c in b.chunks] == [(c.text, c.sources) for c in r.chunks]
        assert all(
            np.array_equal(x.vector, y.vector) for x, y in zip(b.chunks, r.chunks, strict=True)
        )
    assert [c.text for p in bulk for c in p.chunks][1:3] == [None, None]  # blank: no text


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_if_the_thread_dies_commits_checkpoint_themselves(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "s.db"
    store, ckpt = _with_checkpointer(str(path), vector_dim=384)

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("not a database error: the thread ends")

    monkeypatch.setattr(checkpoint.sqlite3, "connect", broken)
    _add(store, 4000)
    assert ckpt._thread is not None
    ckpt._thread.join(timeout=30)
    assert not ckpt._thread.is_alive() and ckpt.drain(timeout=1)
    monkeypatch.undo()
    _add(store, 4000, start=4000)  # no wait on a dead thread; checkpointed inline
    log, done = _wal_frames(path)
    assert log == done
    assert len(store.list("memory")) == 8000
    store.close()
