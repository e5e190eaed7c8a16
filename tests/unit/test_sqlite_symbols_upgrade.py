"""Opening a SQLite file written by schema version 7 (emoji inside keyword tokens).

``tests/data/sqlite_store_v7.db.gz`` was written by oam at commit ab4c202 (schema 7):
a HYBRID store (``HashingEmbedder(16)``) holding the memories of ``TEXTS``. Version 7
indexed "Bob🙂" as the one token ``bob🙂`` (FTS5's tokenizer knows Unicode 6.1), so
"Bob" did not find it. Its first writable open upgrades it to version 8: the keyword
index is rebuilt from the stored chunk texts with every character that is neither a
letter nor a digit a space (docs/sqlite.md#schema-version-8); a file that cannot be
written is searched as version 7 indexed it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from _oldfiles import (
    assert_old_release_cannot_delete,
    assert_vectors_untouched,
    file_version,
    found,
    integrity_check,
    open_read_only,
    unpack,
)

from oam_core import SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.sqlite import schema as sqlite_schema
from oam_core.store.text import index_text

TEXTS = {
    "bob": "Bob🙂 likes tea",
    "maybe": "Hmm🤔maybe tomorrow",
    "rent": "Rent 500₽ monthly",
    "tone": "Great👍🏽teamwork",
    "zh": "我的狗叫饼干🙂",
    "fr": "Un café à Montréal.",
    "en": "Plain lake sunrise.",
}
JOINED = {"500₽", "bob🙂", "hmm🤔mayb", "🏽teamwork", "🙂"}
"""The version-7 tokens holding a symbol (stemmed)."""


@pytest.fixture
def v7_file(tmp_path: Path) -> Path:
    return unpack("sqlite_store_v7.db.gz", tmp_path / "v7.db")


def _tokens(conn: sqlite3.Connection) -> set[str]:
    """Every token the keyword index holds (FTS5's own vocabulary table)."""
    conn.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.vocab USING fts5vocab(main, chunks_fts, 'row')"
    )
    return {row[0] for row in conn.execute("SELECT term FROM temp.vocab")}


def _store_tokens(store: SQLiteMemoryStore) -> set[str]:
    impl = store._impl  # type: ignore[attr-defined]
    with impl.lock:
        return _tokens(impl.conn)


def test_the_fixture_is_version_7_with_symbols_inside_tokens(v7_file: Path) -> None:
    assert file_version(v7_file) == "7"
    with sqlite3.connect(v7_file) as conn:
        tokens = _tokens(conn)
        view = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts_src'")
        assert sqlite_schema.FOLD_FUNCTION in view.fetchone()[0]
    assert tokens >= JOINED
    assert "bob" not in tokens


def test_a_writable_open_rebuilds_the_index_without_symbols(v7_file: Path) -> None:
    store = SQLiteMemoryStore(v7_file, embedder=HashingEmbedder(16), search_strategy="KEYWORD")
    assert store._impl.schema_version == sqlite_schema.SCHEMA_VERSION == 8  # type: ignore[attr-defined]
    assert file_version(v7_file) == "8"
    integrity_check(store)
    tokens = _store_tokens(store)
    assert not tokens & JOINED
    assert {"bob", "hmm", "mayb", "500", "teamwork"} <= tokens
    for query, ids in [
        ("Bob", ["bob"]),
        ("bob🙂", ["bob"]),
        ("maybe", ["maybe"]),
        ("500", ["rent"]),
        ("teamwork", ["tone"]),
        ("饼干", ["zh"]),
        ("MONTREAL", ["fr"]),
        ("lake", ["en"]),
    ]:
        assert found(store, query) == ids, query
    assert {r.id: r.content for r in store.list("memory")} == TEXTS
    # Later deletes and updates send the same tokens: none is left behind.
    store.delete("memory", "bob")
    store.update("memory", "maybe", text="Perhaps🥰 never")
    tokens = _store_tokens(store)
    assert not {"bob", "like", "tea", "hmm", "mayb", "tomorrow"} & tokens
    assert {"perhap", "never"} <= tokens
    assert found(store, "perhaps") == ["maybe"]
    integrity_check(store)
    store.close()
    # Vectors are untouched: the stored embedding of a text is still its nearest.
    assert_vectors_untouched(v7_file, TEXTS["en"], "en")
    hybrid = SQLiteMemoryStore(v7_file, embedder=HashingEmbedder(16), search_strategy="HYBRID")
    assert [r.id for r, _ in hybrid.search("teamwork", 1)] == ["tone"]
    hybrid.close()


def test_a_read_only_version_7_file_is_searched_as_version_7_indexed_it(
    v7_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = v7_file.read_bytes()
    open_read_only(monkeypatch)
    store = SQLiteMemoryStore(v7_file, search_strategy="KEYWORD")
    assert store._impl.schema_version == 7  # type: ignore[attr-defined]
    for query, ids in [
        ("Bob", []),  # indexed as bob🙂
        ("likes tea", ["bob"]),
        ("tomorrow", ["maybe"]),
        ("monthly", ["rent"]),
        ("饼干", ["zh"]),
        ("café", ["fr"]),
        ("LAKE", ["en"]),
    ]:
        assert found(store, query) == ids, query
    # The view of version 7 still reads: oam_fts_fold is registered.
    impl = store._impl  # type: ignore[attr-defined]
    with impl.lock:
        texts = {t for (t,) in impl.conn.execute("SELECT text FROM chunks_fts")}
    assert "bob🙂 likes tea" in texts
    store.close()
    assert v7_file.read_bytes() == before


def test_a_connection_of_the_previous_release_cannot_delete_from_the_new_index(
    v7_file: Path,
) -> None:
    # Version 7's function (oam_fts_fold, symbols kept) would delete tokens the new
    # index does not hold; the renamed function makes its delete fail instead.
    assert_old_release_cannot_delete(
        v7_file, sqlite_schema.FOLD_FUNCTION, lambda t: index_text(t, separated=False)
    )
