"""Opening a SQLite file written by schema version 1 (before CJK keyword search).

``tests/data/sqlite_store_v1.db.gz`` was written by oam at commit e8e8ce9 (schema 1):
a HYBRID store (``HashingEmbedder(16)``, user ``u1``) holding ``zh-dog``, ``ja-cat``,
``mix-python``, ``en-lake`` and ``en-budget``, and a KEYWORD store with
``memory_store_id="alt"`` holding ``p-zh`` and ``p-en``, in one file. Opening it
upgrades the opened store to version 2: the keyword index is rebuilt from the stored
chunk texts, in one transaction; a file that cannot be written keeps working as
version 1.
"""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

import pytest

from oam_core import SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import StoreError
from oam_core.store.sqlite import schema as sqlite_schema
from oam_core.store.sqlite.backend import SQLiteBackend

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "sqlite_store_v1.db.gz"


@pytest.fixture
def v1_file(tmp_path: Path) -> Path:
    path = tmp_path / "v1.db"
    with gzip.open(FIXTURE) as src, path.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return path


def _meta(path: Path, prefix: str = "") -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute(f"SELECT key, value FROM {prefix}oam_meta").fetchall())


def _integrity_check(store: SQLiteMemoryStore) -> None:
    """FTS5 compares its index with the content view row by row (raises on a
    mismatch)."""
    impl = store._impl
    fts = f"{impl.p}chunks_fts"
    with impl.lock:
        impl.conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('integrity-check', 1)")


def found(results):
    return [r.id for r, _ in results]


def test_the_fixture_is_version_1(v1_file: Path) -> None:
    assert _meta(v1_file)["schema_version"] == "1"
    assert _meta(v1_file, "alt_")["schema_version"] == "1"


def test_opening_upgrades_the_store_and_keeps_every_record(v1_file: Path) -> None:
    store = SQLiteMemoryStore(v1_file, embedder=HashingEmbedder(16), search_strategy="HYBRID")
    assert _meta(v1_file)["schema_version"] == str(sqlite_schema.SCHEMA_VERSION)
    assert _meta(v1_file, "alt_")["schema_version"] == "1"  # not opened yet
    assert sorted(r.id for r in store.list("memory")) == [
        "en-budget",
        "en-lake",
        "ja-cat",
        "mix-python",
        "zh-dog",
    ]
    _integrity_check(store)
    keyword = SQLiteMemoryStore(v1_file, search_strategy="KEYWORD")
    assert found(keyword.search("饼干", 3)) == ["zh-dog"]
    assert found(keyword.search("ミケ", 3)) == ["ja-cat"]
    assert found(keyword.search("Python", 3)) == ["mix-python"]
    assert found(keyword.search("lake sunrise", 3)) == ["en-lake"]
    # Vectors are untouched: the stored embedding of a text is still its nearest.
    vec = HashingEmbedder(16).embed(["The budget review is next Wednesday with the team."])[0]
    assert found(store.search(query_vector=vec, k=1)) == ["en-budget"]
    assert "zh-dog" in found(store.search("饼干", 3))
    keyword.close()
    store.close()


def test_the_upgraded_store_takes_writes_and_stays_consistent(v1_file: Path) -> None:
    store = SQLiteMemoryStore(v1_file, search_strategy="KEYWORD")
    store.add(["新しい記録です。"], "memory", record_ids="ja-new")
    # No embedder: the record's vectors are dropped only when asked (embedding=None).
    store.update("memory", "zh-dog", text="我的鸟叫小黄。", embedding=None)
    store.delete("memory", "ja-cat")
    _integrity_check(store)
    assert found(store.search("記録", 3)) == ["ja-new"]
    assert found(store.search("小黄", 3)) == ["zh-dog"]
    assert found(store.search("饼干", 3)) == []
    assert found(store.search("ミケ", 3)) == []
    store.close()


def test_each_prefix_is_upgraded_when_opened(v1_file: Path) -> None:
    alt = SQLiteMemoryStore(v1_file, search_strategy="KEYWORD", memory_store_id="alt")
    assert _meta(v1_file, "alt_")["schema_version"] == str(sqlite_schema.SCHEMA_VERSION)
    assert _meta(v1_file)["schema_version"] == "1"
    assert found(alt.search("烤鸭", 3)) == ["p-zh"]
    assert found(alt.search("prefix", 3)) == ["p-en"]
    _integrity_check(alt)
    alt.close()


def test_a_failed_upgrade_leaves_the_file_as_it_was(
    v1_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = v1_file.read_bytes()
    step = sqlite_schema.UPGRADES[1]

    def broken(p: str) -> list[str]:  # drops the old index, then fails
        return [*step(p)[:3], "SELECT no_such_function()"]

    monkeypatch.setitem(sqlite_schema.UPGRADES, 1, broken)
    with pytest.raises(StoreError, match="no_such_function") as info:
        SQLiteMemoryStore(v1_file, search_strategy="KEYWORD")
    assert isinstance(info.value.__cause__, sqlite3.OperationalError)  # mapped at the boundary
    monkeypatch.undo()
    with sqlite3.connect(v1_file) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "chunks_fts" in tables and "chunks_fts_src" not in tables
    assert _meta(v1_file)["schema_version"] == "1"
    store = SQLiteMemoryStore(v1_file, search_strategy="KEYWORD")  # and it still opens
    assert found(store.search("饼干", 3)) == ["zh-dog"]
    store.close()
    assert before != v1_file.read_bytes()  # now upgraded


def test_a_read_only_version_1_file_is_searched_as_version_1(
    v1_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = v1_file.read_bytes()
    connect = SQLiteBackend._connect

    def read_only(target: str, *, uri: bool = False) -> sqlite3.Connection:
        return connect(f"file:{target}?mode=ro", uri=True)

    monkeypatch.setattr(SQLiteBackend, "_connect", staticmethod(read_only))
    store = SQLiteMemoryStore(v1_file, embedder=HashingEmbedder(16), search_strategy="HYBRID")
    assert store._impl.schema_version == 1
    assert found(store.search("budget Wednesday", 2))[0] == "en-budget"
    store.search("饼干", 2)  # version 1 cut CJK runs as one word: no match needed, no error
    store.search("!!!", 2)
    store.close()
    assert v1_file.read_bytes() == before


def test_a_newer_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SQLiteMemoryStore(path, search_strategy="KEYWORD").close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE oam_meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(ValueError, match="schema version 99"):
        SQLiteMemoryStore(path, search_strategy="KEYWORD")
    assert _meta(path)["schema_version"] == "99"


def test_a_plain_sqlite3_client_reads_the_index_but_cannot_write_chunks(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteMemoryStore(path, search_strategy="KEYWORD")
    store.add(["我的狗叫饼干"], "memory", record_ids="m1")
    store.close()
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH '\"饼干\"'"
        ).fetchall()
        assert len(rows) == 1
        with pytest.raises(sqlite3.OperationalError, match=sqlite_schema.FTS_FUNCTION):
            conn.execute("DELETE FROM chunks")
