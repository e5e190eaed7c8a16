"""Store conformance: a message's text does not outlive it inside the context rows of
the messages after it (docs/store.md#search-rows-that-quote-other-messages; issue 14).

A thread message's context row quotes the messages before it. After the quoted
message is deleted (every delete path), changed or expired, its text must be found by
neither KEYWORD, VECTOR nor HYBRID search, and be absent from the stored rows (for
SQLite, every table of the file read directly), while the other messages are still
found by their own text.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.memory.client import OracleAgentMemory
from oam_core.memory.thread import OracleThread
from oam_core.store.quotes import QuotingChunk

STRATEGIES = ["KEYWORD", "VECTOR", "HYBRID"]
SECRET = "zebracorn quixotic vault 4471"
"""Words found in no other message (hashing embedder: no shared buckets with them)."""
TURNS = [
    ("user", f"my {SECRET} please remember"),
    ("assistant", "noted carefully"),
    ("user", "thanks friend"),
    ("assistant", "welcome always"),
]


def _embedder() -> HashingEmbedder:
    return HashingEmbedder(1024)


def _open(make_store: Callable[..., Any], strategy: str, **kwargs: Any) -> tuple[Any, OracleThread]:
    store = make_store(search_strategy=strategy, embedder=_embedder(), **kwargs)
    mem = OracleAgentMemory(store=store, extract_memories=False)
    thread = mem.create_thread(thread_id="t1", user_id="u1")
    return store, thread


def _write(thread: OracleThread, **kwargs: Any) -> list[str]:
    ids = [
        *thread.add_messages([{"role": r, "content": c} for r, c in TURNS[:2]], **kwargs),
        *thread.add_messages([{"role": r, "content": c} for r, c in TURNS[2:]]),
    ]
    return ids


def _distance_to_secret(store: Any, record_id: str) -> float:
    hits = {r.id: d for r, d in store.search(SECRET, 50)}
    return hits.get(record_id, 2.0)


def _row_distance(store: Any, backend: Any, record_id: str) -> float:
    """The cosine distance from the secret to the nearest stored row of a record."""
    texts = [t for t, _ in backend.search_rows(store, "message", record_id) if t]
    query, *rows = _embedder().embed([SECRET, *texts])
    return min((1.0 - float(np.dot(query, r)) for r in rows), default=2.0)


def _assert_not_found(store: Any, backend: Any, strategy: str) -> None:
    """No result of the secret query is there because of a row holding the secret."""
    results = store.search(SECRET, 50)
    if strategy == "KEYWORD":
        assert results == []
        return
    if strategy == "VECTOR":
        assert all(d > 0.9 for _, d in results), results
    # HYBRID distances are ranks fused; the rows behind each result are far.
    assert all(_row_distance(store, backend, r.id) > 0.9 for r, _ in results), results


def _stored_texts(store: Any, backend: Any) -> list[str]:
    """Every text value the back end holds in its records and search rows; for a
    SQLite file, every text value of every table, read through a new connection."""
    texts: list[str] = []
    raw = backend.dump(store)
    for rows in raw.values():
        texts += [v for row in rows for v in row if isinstance(v, str)]
    path = getattr(store, "path", None)
    if backend.id == "sqlite-file" and path:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = [
                n
                for (n,) in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' "
                    "AND name NOT LIKE '%chunks_fts%'"
                )
            ]
            for table in tables:
                for row in conn.execute(f'SELECT * FROM "{table}"'):
                    texts += [v for v in row if isinstance(v, str)]
        finally:
            conn.close()
    return texts


def _assert_secret_gone(store: Any, backend: Any, strategy: str, kept: list[str]) -> None:
    """The secret is neither found nor stored; ``kept`` messages are found by their
    own text."""
    _assert_not_found(store, backend, strategy)
    assert not [t for t in _stored_texts(store, backend) if "zebracorn" in t]
    for record_id in kept:
        text = store.get("message", record_id).content
        best = store.search(text, 1)
        assert [r.id for r, _ in best] == [record_id], text


def _assert_quoted_before(store: Any, strategy: str, reply_id: str) -> None:
    """Before: the reply is found by the secret through its context row (so the test
    can fail)."""
    if strategy == "KEYWORD":
        assert reply_id in [r.id for r, _ in store.search(SECRET, 50)]
    elif strategy == "VECTOR":
        assert _distance_to_secret(store, reply_id) < 0.5
    else:
        assert reply_id in [r.id for r, _ in store.search(SECRET, 3)]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize(
    "delete",
    [
        pytest.param(lambda s, t, mid: s.delete("message", mid), id="store.delete"),
        pytest.param(lambda s, t, mid: s.delete_records("message", [mid]), id="delete_records"),
        pytest.param(
            lambda s, t, mid: s.delete_records("message", [mid], thread_id="t1"),
            id="delete_records-thread",
        ),
        pytest.param(lambda s, t, mid: t.delete_message(mid), id="thread.delete_message"),
        pytest.param(
            lambda s, t, mid: s.upsert(["replaced text"], "message", record_ids=mid, roles="user"),
            id="upsert",
        ),
        pytest.param(
            lambda s, t, mid: s.update("message", mid, text="replaced text"), id="update-text"
        ),
    ],
)
def test_quoted_text_goes_with_its_message(
    make_store: Callable[..., Any], backend: Any, strategy: str, delete: Any
) -> None:
    store, thread = _open(make_store, strategy)
    ids = _write(thread)
    _assert_quoted_before(store, strategy, ids[1])
    _assert_quoted_before(store, strategy, ids[2])  # two turns later, in the next write
    delete(store, thread, ids[0])
    kept = ids[1:] if store.get("message", ids[0]) is None else ids
    _assert_secret_gone(store, backend, strategy, kept)
    # The two replies after it lost their context rows; the last one, quoting only
    # messages that stay, keeps its own.
    assert [len(backend.search_rows(store, "message", m)) for m in ids[1:]] == [1, 1, 2]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_quoted_text_expires_with_its_message(
    make_store: Callable[..., Any], backend: Any, clock: Any, strategy: str
) -> None:
    store, thread = _open(make_store, strategy)
    ids = _write(thread)
    store.update("message", ids[0], ttl_days=1)  # a TTL set later clamps quoting rows too
    _assert_quoted_before(store, strategy, ids[1])
    clock.advance(days=2)
    # Search stops returning the quoting rows when it stops returning the message ...
    assert store.get("message", ids[0]) is None
    results = store.search(SECRET, 50)
    if strategy == "KEYWORD":
        assert results == []
    elif strategy == "VECTOR":
        assert all(d > 0.9 for _, d in results), results
    # (HYBRID fuses ranks: its distances say nothing here; checked after the purge.)
    # ... and the purge deletes them with it.
    assert store.purge_expired() == 1
    _assert_secret_gone(store, backend, strategy, ids[1:])


def test_quoting_rows_expire_with_the_earliest_source(
    make_store: Callable[..., Any], backend: Any, clock: Any
) -> None:
    """Written with a TTL: the messages of the first write expire in 1 day, the reply
    quoting them in the second write lives on, found by its own text only."""
    store, thread = _open(make_store, "KEYWORD")
    ids = _write(thread, ttl_days=1)
    assert ids[2] in [r.id for r, _ in store.search("zebracorn", 50)]
    clock.advance(days=2)
    assert store.search("zebracorn", 50) == []
    assert store.search("thanks friend", 5)[0][0].id == ids[2]
    assert store.purge_expired() == 2
    _assert_secret_gone(store, backend, "KEYWORD", ids[2:])


def test_a_longer_ttl_later_keeps_the_quoting_rows(
    make_store: Callable[..., Any], clock: Any
) -> None:
    store, thread = _open(make_store, "KEYWORD")
    ids = _write(thread, ttl_days=1)
    for mid in ids[:2]:
        store.update("message", mid, ttl_days=10)
    clock.advance(days=2)
    assert ids[2] in [r.id for r, _ in store.search("zebracorn", 50)]


@pytest.mark.parametrize(
    "drop",
    [
        pytest.param(lambda s, mem: s.delete_thread("t1"), id="delete_thread"),
        pytest.param(lambda s, mem: mem.delete_user("u1"), id="delete_user"),
    ],
)
def test_cascading_deletes_leave_no_quoting_rows(
    make_store: Callable[..., Any], backend: Any, drop: Any
) -> None:
    store = make_store(search_strategy="HYBRID", embedder=_embedder())
    mem = OracleAgentMemory(store=store, extract_memories=False)
    _write(mem.create_thread(thread_id="t1", user_id="u1"))
    other = mem.create_thread(thread_id="t2", user_id="u2")
    other.add_messages([{"role": "user", "content": "hello there"}])
    drop(store, mem)
    assert not [t for t in _stored_texts(store, backend) if "zebracorn" in t]
    assert [r.thread_id for r, _ in store.search("hello there", 5)] == ["t2"]


def test_a_row_quoting_a_missing_message_is_not_written(
    make_store: Callable[..., Any], backend: Any
) -> None:
    """A caller's quoting chunk naming a message that does not exist (deleted
    between the read of the thread and the write) is left out; its record is written."""
    store = make_store(search_strategy="KEYWORD", embedder=_embedder())
    context = QuotingChunk(f"{SECRET}\nnoted", ["gone"])
    store.add(["noted"], "message", record_ids="m1", index_texts=[["noted", context]])
    assert store.get("message", "m1").content == "noted"
    assert store.search("zebracorn", 5) == []
    assert [r.id for r, _ in store.search("noted", 5)] == ["m1"]
    assert not [t for t in _stored_texts(store, backend) if "zebracorn" in t]


def test_updating_a_message_without_changing_its_text_keeps_the_quoting_rows(
    make_store: Callable[..., Any],
) -> None:
    store, thread = _open(make_store, "KEYWORD")
    ids = _write(thread)
    store.update("message", ids[0], metadata={"k": "v"})
    store.update("message", ids[0], embedding=np.ones(1024, dtype=np.float32))
    assert ids[1] in [r.id for r, _ in store.search("zebracorn", 50)]


def test_quoting_chunk_rejects_bad_sources() -> None:
    with pytest.raises(ValueError, match="sources"):
        QuotingChunk("x", "m1")
    with pytest.raises(ValueError, match="sources"):
        QuotingChunk("x", [1])  # type: ignore[list-item]
    assert QuotingChunk("x", ["a", "a", "b"]).sources == ("a", "b")


def _downgrade_to_v2(store: Any, backend: Any) -> None:
    """Make the store's storage look as schema version 2 wrote it: no links table."""
    impl = store._impl  # test-only: raw statements
    statements = [
        f"DROP TABLE {impl.p}chunk_sources",
        f"UPDATE {impl.p}oam_meta SET value = '2' WHERE key = 'schema_version'",
    ]
    if backend.id.startswith("sqlite"):
        with impl.lock:
            for stmt in statements:
                impl.conn.execute(stmt)
            impl.conn.commit()
    else:
        with impl.reading() as conn:
            for stmt in statements:
                conn.execute(stmt)
            conn.commit()


def test_upgrade_deletes_the_context_rows_that_do_not_say_what_they_quote(
    make_store: Callable[..., Any], backend: Any
) -> None:
    if not backend.shared_storage:
        pytest.skip(f"{backend.id} storage does not outlive the store object")
    store, thread = _open(make_store, "KEYWORD", name="old.db")
    ids = _write(thread)
    long_text = " ".join(f"word{i}\nline" for i in range(220))  # two own rows, no context
    store.add([long_text], "message", record_ids="long", thread_ids="t2", index_texts=[long_text])
    rows_before = backend.search_rows(store, "message", "long")
    assert len(rows_before) == 2
    _downgrade_to_v2(store, backend)
    store.close()
    reopened = make_store(search_strategy="KEYWORD", embedder=_embedder(), name="old.db")
    assert [len(backend.search_rows(reopened, "message", m)) for m in ids] == [1, 1, 1, 1]
    assert backend.search_rows(reopened, "message", "long") == rows_before
    assert [r.id for r, _ in reopened.search("zebracorn", 50)] == [ids[0]]
    # The links table is back: new context rows quote, and go with what they quote.
    mem = OracleAgentMemory(store=reopened, extract_memories=False)
    later = mem.get_thread("t1").add_messages([{"role": "user", "content": "one more"}])
    assert len(backend.search_rows(reopened, "message", later[0])) == 2
    reopened.delete("message", ids[3])
    assert len(backend.search_rows(reopened, "message", later[0])) == 1


def test_another_connection_does_not_return_a_dropped_row(
    make_store: Callable[..., Any], backend: Any
) -> None:
    """A second store object on the same storage (its in-process vector index, on
    SQLite) catches up with the rows another one dropped."""
    if not backend.shared_storage:
        pytest.skip(f"{backend.id} storage is private to its store object")
    writer, thread = _open(make_store, "VECTOR", name="shared.db")
    ids = _write(thread)
    reader = make_store(search_strategy="VECTOR", embedder=_embedder(), name="shared.db")
    assert _distance_to_secret(reader, ids[1]) < 0.5  # loaded, context row included
    writer.delete("message", ids[0])
    assert all(d > 0.9 for _, d in reader.search(SECRET, 50))
