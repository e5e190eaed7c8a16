"""PostgreSQL folded keyword search (docs/store.md#keyword-search, B57): it ranks alike
with SQLite's on text that folds (İ, ß, Greek tonos, accents), and a version-3 store
(lower-cased, accents removed, ß kept) is upgraded to version 4 on open.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest
import regex

from oam_core.store.postgres.schema import SCHEMA_VERSION
from oam_core.store.sqlite import SQLiteMemoryStore
from oam_core.store.text import cjk_grams, split_cjk

psycopg = pytest.importorskip("psycopg")

CORPUS = {
    "tr": "We flew to İstanbul in May, then on to İzmir.",
    "de": "Die Straße ist lang; die STRASSE ist gesperrt.",
    "el": "Η Αθήνα είναι όμορφη τον Μάιο.",
    "el-up": "ΑΘΗΝΑ ΚΑΙ ΘΕΣΣΑΛΟΝΙΚΗ",
    "fr": "Un café à Montréal, un autre café à Québec.",
    "es": "El niño comió en Logroño.",
    "zh": "我的狗叫饼干。",
    "en": "Plain lake sunrise in Istanbul.",
}
QUERIES = ["İstanbul", "STRASSE", "Αθήνα", "θεσσαλονικη", "CAFE quebec", "NIÑO", "饼干", "lake"]


def _pg_store(conninfo: str, **kwargs: Any) -> Any:
    from oam_core.store.postgres import PostgresMemoryStore

    kwargs.setdefault("schema_policy", "CREATE_IF_NECESSARY")
    return PostgresMemoryStore(conninfo, search_strategy="KEYWORD", embedder=None, **kwargs)


def _ranked(store: Any, query: str) -> list[tuple[str, float]]:
    return [(r.id, round(d, 9)) for r, d in store.search(query, 5)]


def _v3_tokens(text: str) -> str:
    """How version 3 cut a row's text: words NFKD-folded and lower-cased (ß kept), CJK
    runs as characters and pairs."""
    out: list[str] = []
    for other, segments in split_cjk(text):
        decomposed = unicodedata.normalize("NFKD", other)
        plain = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).lower()
        out += regex.findall(r"[\p{L}\p{N}]+", plain)
        out += cjk_grams(segments)
    return " ".join(out)


def _make_version_3(conninfo: str) -> None:
    with psycopg.connect(conninfo) as conn:
        for pk, text in conn.execute("SELECT pk, text FROM chunks").fetchall():
            words = _v3_tokens(text)
            conn.execute(
                "UPDATE chunks SET tsv = to_tsvector('oam_fts', %s), n_tokens = %s WHERE pk = %s",
                (words, len(words.split()), pk),
            )
        conn.execute("DELETE FROM chunk_stats")
        conn.execute(
            "INSERT INTO chunk_stats (shard, n_rows, n_tokens, changes) "
            "SELECT 0, count(*), sum(n_tokens), 1 FROM chunks WHERE tsv IS NOT NULL"
        )
        conn.execute("UPDATE oam_meta SET value = '3' WHERE key = 'schema_version'")


def _stats(conninfo: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """``((rows, tokens) from chunk_stats, (rows, tokens) counted in chunks)``."""
    with psycopg.connect(conninfo) as conn:
        kept = conn.execute("SELECT sum(n_rows), sum(n_tokens) FROM chunk_stats").fetchone()
        counted = conn.execute(
            "SELECT count(*), sum(n_tokens) FROM chunks WHERE tsv IS NOT NULL"
        ).fetchone()
    return (int(kept[0]), int(kept[1])), (int(counted[0]), int(counted[1]))


def test_b57_folded_keyword_search_ranks_alike_on_sqlite_and_postgres(
    conninfo: str, tmp_path: Path
) -> None:
    pg = _pg_store(conninfo)
    lite = SQLiteMemoryStore(tmp_path / "s.db", search_strategy="KEYWORD")
    for store in (pg, lite):
        store.add(list(CORPUS.values()), "memory", record_ids=list(CORPUS))
    for query in QUERIES:
        got = _ranked(pg, query)
        assert got and got == _ranked(lite, query), query
    assert sorted(i for i, _ in _ranked(pg, "İstanbul")) == ["en", "tr"]
    pg.close()
    lite.close()


def test_b57_a_version_3_store_is_refolded_on_open(conninfo: str, tmp_path: Path) -> None:
    _pg_store(conninfo).add(list(CORPUS.values()), "memory", record_ids=list(CORPUS))
    _make_version_3(conninfo)
    with pytest.raises(ValueError, match="version 3, older"):
        _pg_store(conninfo, schema_policy="REQUIRE_EXISTING")
    store = _pg_store(conninfo)  # CREATE_IF_NECESSARY upgrades
    with psycopg.connect(conninfo) as conn:
        version = conn.execute("SELECT value FROM oam_meta WHERE key = 'schema_version'")
        assert version.fetchone() == (str(SCHEMA_VERSION),) == ("6",)
    kept, counted = _stats(conninfo)
    assert kept == counted
    assert [r.id for r, _ in store.search("strasse", 3)] == ["de"]
    assert {r.id: r.content for r in store.list("memory")} == CORPUS
    lite = SQLiteMemoryStore(tmp_path / "s.db", search_strategy="KEYWORD")
    lite.add(list(CORPUS.values()), "memory", record_ids=list(CORPUS))
    for query in QUERIES:
        assert _ranked(store, query) == _ranked(lite, query), query
    store.close()
    lite.close()
