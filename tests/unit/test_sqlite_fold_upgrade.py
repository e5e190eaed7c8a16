"""Opening a SQLite file written by schema version 5 (before folded keyword search, B57).

``tests/data/sqlite_store_v5.db.gz`` was written by oam at commit 90998f7 (schema 5):
a HYBRID store (``HashingEmbedder(16)``) holding ``tr`` ("We flew to İstanbul in
May."), ``de`` ("The shop is on the Straße near the river."), ``el`` ("Η Αθήνα είναι
η πρωτεύουσα."), ``fr`` ("Un café à Montréal."), ``zh`` ("我的狗叫饼干。") and ``en``
("Plain lake sunrise."). Its first writable open upgrades it to version 6: the keyword
index is rebuilt from the stored chunk texts, folded (docs/sqlite.md#schema-version-6);
a file that cannot be written is searched as version 5 indexed it.
"""

from __future__ import annotations

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
from oam_core.store.sqlite import schema as sqlite_schema
from oam_core.store.text import index_text

TEXTS = {
    "tr": "We flew to İstanbul in May.",
    "de": "The shop is on the Straße near the river.",
    "el": "Η Αθήνα είναι η πρωτεύουσα.",
    "fr": "Un café à Montréal.",
    "zh": "我的狗叫饼干。",
    "en": "Plain lake sunrise.",
}


@pytest.fixture
def v5_file(tmp_path: Path) -> Path:
    return unpack("sqlite_store_v5.db.gz", tmp_path / "v5.db")


def test_the_fixture_is_version_5(v5_file: Path) -> None:
    assert file_version(v5_file) == "5"


def test_a_writable_open_folds_the_index_and_keeps_the_text(v5_file: Path) -> None:
    store = SQLiteMemoryStore(v5_file, search_strategy="KEYWORD")
    assert store._impl.schema_version == sqlite_schema.SCHEMA_VERSION == 8  # type: ignore[attr-defined]
    assert file_version(v5_file) == str(sqlite_schema.SCHEMA_VERSION)
    integrity_check(store)
    for query, ids in [
        ("ISTANBUL", ["tr"]),
        ("istanbul", ["tr"]),
        ("STRASSE", ["de"]),
        ("αθηνα", ["el"]),
        ("ΑΘΗΝΑ", ["el"]),
        ("cafe MONTREAL", ["fr"]),
        ("饼干", ["zh"]),
        ("lake", ["en"]),
    ]:
        assert found(store, query) == ids, query
    assert {r.id: r.content for r in store.list("memory")} == TEXTS
    # Later writes and deletes keep the index equal to its content view.
    store.add(["Ein Café an der Straße"], "memory", record_ids="new")
    store.delete("memory", "de")
    assert found(store, "strasse") == ["new"]
    integrity_check(store)
    store.close()
    # Vectors are untouched: the stored embedding of a text is still its nearest.
    assert_vectors_untouched(v5_file, TEXTS["en"], "en")


def test_a_read_only_version_5_file_is_searched_as_version_5_indexed_it(
    v5_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = v5_file.read_bytes()
    open_read_only(monkeypatch)
    store = SQLiteMemoryStore(v5_file, search_strategy="KEYWORD")
    assert store._impl.schema_version == 5  # type: ignore[attr-defined]
    for query, ids in [
        ("Straße", ["de"]),
        ("Αθήνα", ["el"]),
        ("café", ["fr"]),
        ("饼干", ["zh"]),
        ("LAKE", ["en"]),
    ]:
        assert found(store, query) == ids, query
    store.close()
    assert v5_file.read_bytes() == before


def test_a_connection_of_the_previous_release_cannot_delete_from_the_folded_index(
    v5_file: Path,
) -> None:
    # Version 5's function (oam_fts_text, the text unfolded) would delete words the
    # folded index does not hold; the renamed function makes its delete fail instead.
    assert_old_release_cannot_delete(v5_file, "oam_fts_text", lambda t: index_text(t, folded=False))
