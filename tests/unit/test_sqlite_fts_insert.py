"""New chunk text reaches the FTS5 index from the written column through the same
expression the index's view and delete trigger apply (oam_core/store/sqlite/backend.py
``insert_chunk_columns``, ``schema.fts_text``, docs/sqlite.md#writes): the index equals
one rebuilt from the rows, for ASCII, accented, CJK and mixed text, in the bulk and
the row-by-row shapes, and stays consistent through deletes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from oam_core import SQLiteMemoryStore

TEXTS = [
    "plain ascii words about the harbour",
    "café crème at the Élysée",
    "東京タワーに行った",
    "mixed 東京 and Tokyo tower",
    "emoji 🎉 party tonight",
    "한국어 문장 하나",
    "ascii again: harbour lights",
]


def _vocab(store: SQLiteMemoryStore) -> list[tuple[str, int, int]]:
    impl = store._impl  # type: ignore[attr-defined]
    with impl.lock:
        conn = impl.conn
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.v USING fts5vocab(main, {impl.p}chunks_fts, row)"
        )
        return [tuple(r) for r in conn.execute("SELECT term, doc, cnt FROM temp.v ORDER BY term")]


def _check(store: SQLiteMemoryStore) -> None:
    impl = store._impl  # type: ignore[attr-defined]
    fts = f"{impl.p}chunks_fts"
    with impl.lock:
        impl.conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('integrity-check', 1)")


def test_the_index_equals_one_rebuilt_from_the_rows(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "f.db", vector_dim=4)
    vectors = np.random.default_rng(1).standard_normal((len(TEXTS), 4)).astype(np.float32)
    ids = [f"b{i}" for i in range(len(TEXTS))]
    store.add(TEXTS, "memory", embeddings=vectors, record_ids=ids)  # the bulk shape
    store.add(  # the row-by-row shape (per-row TTL)
        TEXTS,
        "memory",
        embeddings=vectors,
        record_ids=[f"r{i}" for i in range(len(TEXTS))],
        ttl_days=[30] * len(TEXTS),
    )
    store.add(["just one 東京 row"], "memory", embeddings=vectors[:1], record_ids=["one"])
    _check(store)
    written = _vocab(store)
    # CJK text is indexed as characters and character pairs (docs/store.md); the
    # pair 東京 is in two texts of each shape and in the single row.
    assert ("東京", 5, 5) in written and ("cafe", 2, 2) in written  # diacritics removed
    impl = store._impl  # type: ignore[attr-defined]
    fts = f"{impl.p}chunks_fts"
    with impl.lock:
        impl.conn.execute(f"INSERT INTO {fts} ({fts}) VALUES ('rebuild')")
    assert _vocab(store) == written
    store.close()


def test_deletes_remove_exactly_what_was_indexed(tmp_path: Path) -> None:
    store = SQLiteMemoryStore(tmp_path / "d.db", search_strategy="KEYWORD")
    store.add(TEXTS, "memory", record_ids=[f"m{i}" for i in range(len(TEXTS))])
    assert {r.id for r, _ in store.search("café", 5)} == {"m1"}
    assert "m2" in {r.id for r, _ in store.search("東京タワー", 5)}
    for record_id in ("m1", "m2", "m0"):
        store.delete("memory", record_id)
    _check(store)
    assert store.search("café", 5) == []
    assert {r.id for r, _ in store.search("harbour", 5)} == {"m6"}
    store.close()
