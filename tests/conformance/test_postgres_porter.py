"""PostgreSQL and SQLite hold the same keyword tokens (docs/store.md#keyword-search):
PostgreSQL stems with the original Porter algorithm, as FTS5's ``porter`` tokenizer
does, and keeps as they are the tokens FTS5 does not stem (under 3 or over 64
bytes), so KEYWORD ranks alike. Schema version 5 stemmed with Snowball English
("news" stayed ``news``, FTS5 makes it ``new``); a version-5 store is upgraded to
version 6 on its first ``CREATE_IF_NECESSARY`` open, in one transaction.

The SQLite tokens are read from the store's own FTS5 index (``fts5vocab``), the
PostgreSQL ones from the stored ``tsvector``.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from oam_core.store.postgres import fulltext
from oam_core.store.postgres import schema as pg_schema
from oam_core.store.sqlite import SQLiteMemoryStore

psycopg = pytest.importorskip("psycopg")

CORPUS = {  # LoCoMo-like turns, and the words Snowball English stems apart from FTS5
    "news": "Did you see the news? A new park opened near us.",
    "sky": "The skies were clear when we went skiing, as always.",
    "plants": "My plants were dying while I was lying on the beach all day.",
    "gift": "She generously cooked for us; it's a generous community.",
    "cook": "I cooked soup and he cooks stew every few days.",
    "adopt": "Caroline is researching adoption agencies and counseling careers.",
    "pride": "I went to an LGBTQ support group yesterday and it was so powerful!",
    "paint": "Melanie loves painting sunsets, pottery classes and camping with the kids.",
    "race": "We ran a charity race for mental health in the 1990s; the kids' ages vary.",
    "trip": "Audrey's birthday trip: hiking, swimming and a concert, certainly amazing.",
    "long": "x" * 61 + "ings, and " + "x" * 60 + "ings are two long words.",
}

SNOWBALL_PORTER_APART = {
    # word: (PostgreSQL's Snowball "porter", FTS5's porter). Snowball's porter follows
    # Porter's 1980 paper; FTS5 his later C version, which maps "logi" to "log" and
    # "bli" to "ble" (the paper: "abli" to "able") and undoubles any final double
    # consonant but l, s, z (Snowball lists bb dd ff gg mm nn pp rr tt).
    "ecology": ("ecologi", "ecolog"),
    "psychology": ("psychologi", "psycholog"),
    "incredibly": ("incredibli", "incred"),
    "trekked": ("trekk", "trek"),
}


def _pg(conninfo: str, **kwargs: Any) -> Any:
    from oam_core.store.postgres import PostgresMemoryStore

    kwargs.setdefault("schema_policy", "CREATE_IF_NECESSARY")
    return PostgresMemoryStore(conninfo, search_strategy="KEYWORD", embedder=None, **kwargs)


def _lite(tmp_path: Path) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(tmp_path / "s.db", search_strategy="KEYWORD", embedder=None)


def _add(store: Any, corpus: dict[str, str] = CORPUS) -> None:
    store.add(list(corpus.values()), "memory", record_ids=list(corpus))


def _sqlite_tokens(path: Path) -> dict[str, Counter[str]]:
    """Each record's tokens in the SQLite store's FTS5 index, with their counts."""
    out: dict[str, Counter[str]] = {}
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, instance)")
        rows = conn.execute(
            "SELECT r.id, v.term FROM temp.v v JOIN chunks c ON c.pk = v.doc "
            "JOIN records r ON r.pk = c.record_pk"
        )
        for rid, term in rows:
            out.setdefault(rid, Counter())[term] += 1
    return out


def _pg_tokens(conninfo: str, p: str = "") -> dict[str, Counter[str]]:
    """Each record's lexemes in the PostgreSQL store's ``tsvector``, with their counts."""
    out: dict[str, Counter[str]] = {}
    with psycopg.connect(conninfo) as conn:
        rows = conn.execute(
            "SELECT r.id, u.lexeme, array_length(u.positions, 1) "
            f"FROM {p}chunks c JOIN {p}records r ON r.pk = c.record_pk, unnest(c.tsv) u"
        )
        for rid, lexeme, n in rows:
            out.setdefault(rid, Counter())[lexeme] += n
    return out


def _ranked(store: Any, query: str) -> list[tuple[str, float]]:
    return [(r.id, d) for r, d in store.search(query, 6)]


def _same(lite: list[tuple[str, float]], pg: list[tuple[str, float]]) -> None:
    assert [i for i, _ in lite] == [i for i, _ in pg]
    assert [d for _, d in lite] == pytest.approx([d for _, d in pg], abs=1e-6)


def test_postgres_indexes_the_tokens_fts5_indexes(conninfo: str, tmp_path: Path) -> None:
    lite, pg = _lite(tmp_path), _pg(conninfo)
    for store in (lite, pg):
        _add(store)
    lite.close()
    pg.close()
    lite_tokens, pg_tokens = _sqlite_tokens(tmp_path / "s.db"), _pg_tokens(conninfo)
    assert set(lite_tokens) == set(CORPUS)
    for rid in CORPUS:
        assert pg_tokens[rid] == lite_tokens[rid], rid
    # What Snowball English (schema version 5) made of these words differently:
    assert {"new", "ski", "dy", "ly", "gener", "cook", "us", "is", "as"} <= set(
        lite_tokens["news"]
        + lite_tokens["sky"]
        + lite_tokens["plants"]
        + lite_tokens["gift"]
        + lite_tokens["cook"]
        + lite_tokens["adopt"]
    )
    assert lite_tokens["long"]["x" * 61 + "ings"] == 1  # over 64 bytes: not stemmed
    assert lite_tokens["long"]["x" * 60 + "ing"] == 1  # 64 bytes: stemmed


def test_the_words_snowball_porter_stems_apart_from_fts5(conninfo: str, tmp_path: Path) -> None:
    apart = {w: w for w in SNOWBALL_PORTER_APART}
    lite, pg = _lite(tmp_path), _pg(conninfo)
    for store in (lite, pg):
        _add(store, apart)
    lite.close()
    pg.close()
    lite_tokens, pg_tokens = _sqlite_tokens(tmp_path / "s.db"), _pg_tokens(conninfo)
    for word, (on_pg, on_lite) in SNOWBALL_PORTER_APART.items():
        assert (list(pg_tokens[word]), list(lite_tokens[word])) == ([on_pg], [on_lite])


def test_kept_words_are_held_as_to_tsvector_holds_words(conninfo: str) -> None:
    """A word kept as it is counts at most 255 times in a row, as a stemmed one does in
    ``to_tsvector``; one over 2,046 bytes, which no ``tsvector`` holds, is left out
    (as ``to_tsvector`` leaves out a longer word) and the row is still written."""
    pg = _pg(conninfo)
    pg.add(["us cooks " * 300, "z" * 3000 + " stays"], "memory", record_ids=["many", "huge"])
    assert [r.id for r, _ in pg.search("us", 2)] == ["many"]
    assert [r.id for r, _ in pg.search("stays", 2)] == ["huge"]
    pg.close()
    tokens = _pg_tokens(conninfo)
    assert tokens["many"] == Counter({"us": 255, "cook": 255})
    assert tokens["huge"] == Counter({"stai": 1})
    with psycopg.connect(conninfo) as conn:
        n_tokens = dict(
            conn.execute(
                "SELECT r.id, c.n_tokens FROM chunks c JOIN records r ON r.pk = c.record_pk"
            ).fetchall()
        )
    assert n_tokens == {"many": 600, "huge": 2}


QUERIES = ["news", "new", "skies", "dying", "lying", "generously", "us", "cooked", "kids"]


def test_keyword_search_ranks_alike(conninfo: str, tmp_path: Path) -> None:
    lite, pg = _lite(tmp_path), _pg(conninfo)
    for store in (lite, pg):
        _add(store)
    # FTS5 stems "news" to "new": the query finds both words, on both back ends.
    assert [i for i, _ in _ranked(lite, "news")] == ["news"]
    assert [i for i, _ in _ranked(lite, "skies")] == ["sky"]  # skies, skiing: ski
    assert [i for i, _ in _ranked(lite, "lying")] == ["plants"]
    assert [i for i, _ in _ranked(lite, "generously")] == ["gift"]  # both: gener
    assert [i for i, _ in _ranked(lite, "us")] == ["gift", "news"]
    for query in QUERIES:
        _same(_ranked(lite, query), _ranked(pg, query))
    _same(_ranked(lite, "news about us"), _ranked(pg, "news about us"))
    lite.close()
    pg.close()


# -- the upgrade from version 5 ---------------------------------------------------------


def _make_version_5(conninfo: str, p: str) -> None:
    """Turn the current store of prefix ``p`` into what version 5 wrote: the
    dictionary's language Snowball English, every token stemmed by it, the
    statistics in two writers' rows, version row 5."""
    with psycopg.connect(conninfo) as conn:
        conn.execute(f"ALTER TEXT SEARCH DICTIONARY {p}oam_stem (Language = english)")
        for pk, text in conn.execute(f"SELECT pk, text FROM {p}chunks").fetchall():
            conn.execute(
                f"UPDATE {p}chunks SET tsv = to_tsvector('{p}oam_fts', %s) WHERE pk = %s",
                (" ".join(fulltext.tokens(text)), pk),
            )
        conn.execute(f"UPDATE {p}chunk_stats SET shard = 3")
        conn.execute(
            f"INSERT INTO {p}chunk_stats SELECT 7, 1, 10, 1 FROM {p}chunk_stats WHERE shard = 3"
        )
        conn.execute(
            f"UPDATE {p}chunk_stats SET n_rows = n_rows - 1, n_tokens = n_tokens - 10 "
            "WHERE shard = 3"
        )
        conn.execute(f"UPDATE {p}oam_meta SET value = '5' WHERE key = 'schema_version'")


def _state(conninfo: str, p: str) -> tuple[str, str, list[Any], tuple[int, int]]:
    """``(schema version, dictionary options, (pk, tsv, n_tokens) rows, chunk_stats
    totals)`` of the store of prefix ``p``."""
    with psycopg.connect(conninfo) as conn:
        version = conn.execute(
            f"SELECT value FROM {p}oam_meta WHERE key = 'schema_version'"
        ).fetchone()
        options = conn.execute(
            "SELECT dictinitoption FROM pg_ts_dict WHERE dictname = %s "
            "AND dictnamespace = current_schema()::regnamespace",
            (f"{p}oam_stem",),
        ).fetchone()
        rows = conn.execute(f"SELECT pk, tsv::text, n_tokens FROM {p}chunks ORDER BY pk")
        stats = conn.execute(
            f"SELECT sum(n_rows)::int, sum(n_tokens)::int FROM {p}chunk_stats"
        ).fetchone()
        return version[0], options[0], rows.fetchall(), tuple(stats)


def test_a_version_5_store_is_stemmed_again_on_open(
    conninfo: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_schema, "REINDEX_BATCH", 4)  # three batches of the 11 rows
    _add(_pg(conninfo, memory_store_id="old"))
    current = _state(conninfo, "old_")
    _make_version_5(conninfo, "old_")
    with psycopg.connect(conninfo) as conn:
        changes = conn.execute("SELECT sum(changes)::int FROM old_chunk_stats").fetchone()[0]
    version, options, rows, stats = _state(conninfo, "old_")
    assert (version, options) == ("5", "language = 'english'")
    assert "'news'" in rows[0][1] and "'new'" in rows[0][1]
    assert stats == current[3]
    with pytest.raises(ValueError, match="version 5, older"):
        _pg(conninfo, memory_store_id="old", schema_policy="REQUIRE_EXISTING")
    upgraded = _pg(conninfo, memory_store_id="old")
    assert _state(conninfo, "old_") == current
    assert current[:2] == (str(pg_schema.SCHEMA_VERSION), "language = 'porter'")
    assert pg_schema.SCHEMA_VERSION == 6
    with psycopg.connect(conninfo) as conn:
        shards = conn.execute("SELECT shard, changes FROM old_chunk_stats").fetchall()
    assert shards == [(0, changes + 1)]  # one row; the change counter moved on
    fresh, lite = _pg(conninfo), _lite(tmp_path)
    for store in (fresh, lite):
        _add(store)
    for query in [*QUERIES, "news about us"]:
        got = _ranked(upgraded, query)
        assert got == _ranked(fresh, query), query
        _same(_ranked(lite, query), got)
    upgraded.add(["fresh news"], "memory", record_ids="later")
    assert [i for i, _ in _ranked(upgraded, "new")][:2] == ["later", "news"]
    for store in (upgraded, fresh, lite):
        store.close()


def test_a_failed_upgrade_leaves_version_5_as_it_was(
    conninfo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _add(_pg(conninfo))
    _make_version_5(conninfo, "")
    before = _state(conninfo, "")

    def fail(conn: Any, p: str) -> None:
        raise RuntimeError("the server went away while counting")

    monkeypatch.setattr(pg_schema, "recount_stats", fail)
    with pytest.raises(RuntimeError, match="went away"):
        _pg(conninfo)
    assert _state(conninfo, "") == before
    monkeypatch.undo()
    _pg(conninfo).close()
    assert _state(conninfo, "")[:2] == ("6", "language = 'porter'")
