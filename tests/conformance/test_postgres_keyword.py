"""PostgreSQL KEYWORD search against SQLite's, its corpus statistics, and the upgrade of
a version-1 store (docs/failure-modes.md#c31).

KEYWORD ranks alike on both back ends: the same query over the same rows gives the
same records with the same distances. BM25's corpus statistics come from
``chunk_stats`` (kept by triggers), which must equal the chunk table at all times.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest
import regex

from oam_core.store.postgres.schema import SCHEMA_VERSION
from oam_core.store.sqlite import SQLiteMemoryStore

psycopg = pytest.importorskip("psycopg")

CORPUS = [
    "我的狗叫饼干，它每天早上都要吃骨头。",
    "我的猫叫豆豆，它喜欢睡觉。",
    "今天天气很好，我们下午去公园散步了。",
    "明天的天气怎么样？可能会下雨。",
    "うちの猫はミケという名前で、魚が大好きです。",
    "毎朝コーヒーを飲んでから会社に行きます。",
    "コーヒーより紅茶が好きです。",
    "我每天用Python编程，也写一些Rust。",
    "Caroline painted a sunrise over the lake last week.",
    "Melanie went to the lake with her kids to paint.",
    "The budget review is next Wednesday with the team.",
    "우리 고양이가 생선을 좋아해요.",
]
QUERIES = [
    "我的狗",
    "天气",
    "猫",
    "コーヒー",
    "猫の名前は？",
    "Python编程",
    "lake paint",
    "budget",
    "고양이",
    "它喜欢什么",
]


def _pg_store(conninfo: str, **kwargs: Any) -> Any:
    from oam_core.store.postgres import PostgresMemoryStore

    kwargs.setdefault("schema_policy", "CREATE_IF_NECESSARY")
    return PostgresMemoryStore(conninfo, search_strategy="KEYWORD", embedder=None, **kwargs)


def _ids() -> list[str]:
    return [f"r{i:02d}" for i in range(len(CORPUS))]


def _stats(conninfo: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """``((rows, tokens) from chunk_stats, (rows, tokens) counted in chunks)``."""
    with psycopg.connect(conninfo) as conn:
        kept = conn.execute(
            "SELECT COALESCE(sum(n_rows), 0), COALESCE(sum(n_tokens), 0) FROM chunk_stats"
        ).fetchone()
        counted = conn.execute(
            "SELECT count(*), COALESCE(sum(n_tokens), 0) FROM chunks WHERE tsv IS NOT NULL"
        ).fetchone()
    return (int(kept[0]), int(kept[1])), (int(counted[0]), int(counted[1]))


def test_keyword_ranks_alike_on_sqlite_and_postgres(conninfo: str, tmp_path: Path) -> None:
    pg = _pg_store(conninfo)
    lite = SQLiteMemoryStore(tmp_path / "s.db", search_strategy="KEYWORD")
    for store in (pg, lite):
        store.add(CORPUS, "memory", record_ids=_ids())
    for query in QUERIES:
        got_pg = [(r.id, round(d, 9)) for r, d in pg.search(query, 5)]
        got_lite = [(r.id, round(d, 9)) for r, d in lite.search(query, 5)]
        assert got_pg == got_lite, query
        assert got_pg, query
    pg.close()
    lite.close()


def test_chunk_stats_follow_adds_updates_deletes_and_purges(conninfo: str, clock: Any) -> None:
    store = _pg_store(conninfo, clock=clock)
    store.add(CORPUS, "memory", record_ids=_ids())
    store.add(["short lived 短命"], "memory", record_ids="ttl", ttl_days=1)
    kept, counted = _stats(conninfo)
    assert kept == counted and kept[0] == len(CORPUS) + 1
    store.update("memory", "r00", text="我的鸟叫小黄，它会唱歌。")
    store.delete("memory", "r01")
    clock.advance(days=2)
    store.purge_expired()
    kept, counted = _stats(conninfo)
    assert kept == counted and kept[0] == len(CORPUS) - 1
    assert [r.id for r, _ in store.search("小黄", 3)] == ["r00"]
    store.close()


def test_a_write_by_another_store_object_moves_the_statistics(conninfo: str) -> None:
    reader = _pg_store(conninfo)
    writer = _pg_store(conninfo)
    writer.add(["zebra crossing", "lion", "tiger"], "memory", record_ids=["z", "l", "t"])
    assert [r.id for r, _ in reader.search("zebra", 5)] == ["z"]  # df of zebra cached
    # zebra becomes common (in more than half of the rows): ranked rows holding it and
    # "stripes" must now put the stripes row first, as a fresh store ranks them.
    writer.add(
        [f"zebra {i}" for i in range(6)] + ["zebra stripes"],
        "memory",
        record_ids=[f"z{i}" for i in range(6)] + ["s"],
    )
    fresh = _pg_store(conninfo)
    assert reader.search("zebra stripes", 3) == fresh.search("zebra stripes", 3)
    assert reader.search("zebra stripes", 3)[0][0].id == "s"
    for s in (reader, writer, fresh):
        s.close()


def _v1_tokens(text: str) -> str:
    """How version 1 cut a row's text: Unicode words after NFKD folding."""
    folded = "".join(
        ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch)
    )
    return " ".join(regex.findall(r"[\p{L}\p{N}]+", folded.lower()))


def _make_version_1(conninfo: str) -> None:
    """Turn the current store into what version 1 wrote: words as they are (a CJK run
    is one token), no ``chunk_stats`` and its triggers, version row 1."""
    with psycopg.connect(conninfo) as conn:
        for pk, text in conn.execute("SELECT pk, text FROM chunks").fetchall():
            words = _v1_tokens(text)
            conn.execute(
                "UPDATE chunks SET tsv = to_tsvector('oam_fts', %s), n_tokens = %s WHERE pk = %s",
                (words, len(words.split()), pk),
            )
        conn.execute("DROP TABLE chunk_stats")
        conn.execute("DROP TRIGGER chunks_stats_ai ON chunks")
        conn.execute("DROP TRIGGER chunks_stats_ad ON chunks")
        conn.execute("DROP FUNCTION oam_chunk_stats()")
        conn.execute("UPDATE oam_meta SET value = '1' WHERE key = 'schema_version'")


def test_a_version_1_store_is_upgraded_on_open(conninfo: str, tmp_path: Path) -> None:
    _pg_store(conninfo).add(CORPUS, "memory", record_ids=_ids())
    _make_version_1(conninfo)
    with pytest.raises(ValueError, match="version 1, older"):
        _pg_store(conninfo, schema_policy="REQUIRE_EXISTING")
    old = _pg_store(conninfo)  # CREATE_IF_NECESSARY upgrades
    with psycopg.connect(conninfo) as conn:
        version = conn.execute("SELECT value FROM oam_meta WHERE key = 'schema_version'")
        assert version.fetchone() == (str(SCHEMA_VERSION),)  # through every step
    kept, counted = _stats(conninfo)
    assert kept == counted == (len(CORPUS), counted[1])
    assert [r.id for r, _ in old.search("饼干", 3)] == ["r00"]
    assert [r.id for r, _ in old.search("lake paint", 3)][:2] == ["r08", "r09"]  # shorter first
    lite = SQLiteMemoryStore(tmp_path / "s.db", search_strategy="KEYWORD")
    lite.add(CORPUS, "memory", record_ids=_ids())
    for query in QUERIES:
        assert old.search(query, 5) and [(r.id, round(d, 9)) for r, d in old.search(query, 5)] == [
            (r.id, round(d, 9)) for r, d in lite.search(query, 5)
        ]
    old.add(["新しい記録です"], "memory", record_ids="new")
    assert [r.id for r, _ in old.search("記録", 3)] == ["new"]
    assert _stats(conninfo)[0] == _stats(conninfo)[1]
    old.close()
    lite.close()


def test_dropped_statistics_are_recounted_by_create_if_necessary(conninfo: str) -> None:
    _pg_store(conninfo).add(CORPUS, "memory", record_ids=_ids())
    with psycopg.connect(conninfo) as conn:
        conn.execute("DROP TABLE chunk_stats")
    _pg_store(conninfo).close()
    kept, counted = _stats(conninfo)
    assert kept == counted and kept[0] == len(CORPUS)
