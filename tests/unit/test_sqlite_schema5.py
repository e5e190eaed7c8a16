"""SQLite schema version 5 (docs/sqlite.md#schema-version-5): no covering scope index
on the chunks, a partial thread index, sparse expiry and no-vector chunk indexes.

A store with several users, agents, threads, profiles, expiring rows and quoting
context rows is searched (VECTOR, KEYWORD, HYBRID; scoped, typed and filtered). The
scoped results equal the unscoped ranking cut to the records whose chunk rows are in
the scope (what the version-4 queries read off the chunk columns); a version-4 file
gives the same results read-only, as it is, and after the upgrade of its first
writable open, with its data intact; the rewritten queries read no chunk table.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from oam_core import SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.memory.client import OracleAgentMemory
from oam_core.store.sqlite import schema
from oam_core.store.sqlite.backend import SQLiteBackend
from oam_core.store.text import index_text

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
LATER = T0 + timedelta(days=2)  # the 1-day TTLs have run out
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "lake",
    "river",
    "mountain",
    "tea",
    "coffee",
    "budget",
    "review",
    "python",
    "zebra",
    "quokka",
    "violet",
    "amber",
    "orbit",
    "piano",
    "garden",
    "winter",
]
USERS = ["u0", "u1", "u2", None]
AGENTS = ["a0", "a1", None]
THREADS = ["t0", "t1", None]
QUERIES = ["lake tea", "common", "zebra quokka piano", "common budget"]
SCOPES: list[dict[str, Any]] = [
    {"user_id": "u0"},
    {"user_id": "pu"},  # only a user profile
    {"user_id": None},
    {"agent_id": "a0"},
    {"agent_id": "pa"},  # only an agent profile
    {"agent_id": None},
    {"thread_id": "t0"},
    {"thread_id": "th1"},  # a thread's messages
    {"thread_id": None},
    {"user_id": "u1", "agent_id": "a0"},
    {"user_id": "u2", "thread_id": None},
    {"user_id": None, "agent_id": None},
]
EXTRAS: list[dict[str, Any]] = [
    {},
    {"metadata_filter": {"k": 2}},
    {"record_types": ["user_profile", "agent_profile"]},
    {"record_types": ["message"]},
    {"record_types": ["memory", "agent_profile"], "metadata_filter": {"tag": "x"}},
]


class _Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(6)) + " common"


def _open(path: Path, strategy: str = "HYBRID") -> SQLiteMemoryStore:
    return SQLiteMemoryStore(
        path, embedder=HashingEmbedder(64), search_strategy=strategy, clock=_Clock(LATER)
    )


def _build(path: Path, n: int = 600) -> None:
    rng = random.Random(7)
    store = SQLiteMemoryStore(
        path, embedder=HashingEmbedder(64), search_strategy="HYBRID", clock=_Clock(T0)
    )
    store.add(
        [_text(rng) for _ in range(n)],
        "memory",
        record_ids=[f"m{i}" for i in range(n)],
        user_ids=[rng.choice(USERS) for _ in range(n)],
        agent_ids=[rng.choice(AGENTS) for _ in range(n)],
        thread_ids=[rng.choice(THREADS) for _ in range(n)],
        ttl_days=[rng.choice([None, None, 1, 30]) for _ in range(n)],
        metadata=[{"k": rng.randint(0, 4), "tag": rng.choice("xy")} for _ in range(n)],
    )
    for user in ["u0", "u1", "pu"]:
        store.add_user(user, _text(rng))
    for agent in ["a0", "pa"]:
        store.add_agent(agent, _text(rng))
    memory = OracleAgentMemory(store=store, extract_memories=False)
    for t in range(4):
        thread = memory.create_thread(
            thread_id=f"th{t}", user_id=f"u{t % 3}", agent_id=AGENTS[t % 2]
        )
        for _ in range(6):  # each turn's context row quotes the turns before it
            turn = [{"role": "user", "content": _text(rng)}, {"role": "assistant", "content": "ok"}]
            thread.add_messages(turn, ttl_days=rng.choice([None, 1, 30]))
    store.close()


def _search(store: SQLiteMemoryStore, query: str, k: int, scope: dict[str, Any], **kw: Any) -> Any:
    exact = {f"exact_{name[:-3]}_match": True for name in scope}
    return [(r.id, round(d, 6)) for r, d in store.search(query, k, **scope, **exact, **kw)]


def _results(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for strategy in ("HYBRID", "KEYWORD", "VECTOR"):
        store = _open(path, strategy)
        for query in QUERIES:
            for i, scope in enumerate([{}, *SCOPES]):
                for j, extra in enumerate(EXTRAS):
                    out[f"{strategy}|{query}|{i}|{j}"] = _search(store, query, 8, scope, **extra)
        store.close()
    return out


def _in_scope(path: Path, scope: dict[str, Any]) -> set[str]:
    """The ids of the records with a live chunk row in ``scope``, read off the chunk
    columns (what the version-4 queries filtered on)."""
    parts, params = ["(c.expires_at IS NULL OR c.expires_at > ?)"], [LATER.timestamp()]
    for column, value in scope.items():
        parts.append(f"c.{column} IS NULL" if value is None else f"c.{column} = ?")
        params += [] if value is None else [value]
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT DISTINCT r.id FROM chunks c JOIN records r ON r.pk = c.record_pk "
            f"WHERE {' AND '.join(parts)}",
            params,
        )
        return {r[0] for r in rows}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("v5") / "s.db"
    _build(path)
    return path


@pytest.fixture
def store_file(built: Path, tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    shutil.copy(built, path)
    return path


def _as_version_4(path: Path) -> None:
    """Rewrite a current file as version 4 wrote it: the covering scope index, the
    whole thread index, no sparse chunk indexes, version row 4."""
    with sqlite3.connect(path) as conn:
        for name in ("records_thread", "chunks_expiry", "chunks_novector"):
            conn.execute(f"DROP INDEX {name}")
        conn.execute("CREATE INDEX records_thread ON records (thread_id, family, seq_no)")
        conn.execute(
            "CREATE INDEX chunks_scope ON chunks (user_id, record_type, has_vector, "
            "agent_id, thread_id, expires_at, record_pk)"
        )
        conn.execute("UPDATE oam_meta SET value = '4' WHERE key = 'schema_version'")


def _indexes(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'")
        return {name: sql for name, sql in rows if sql}


def _dump(path: Path) -> list[Any]:
    with sqlite3.connect(path) as conn:
        return [
            conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall()
            for table in ("records", "chunks", "chunk_sources")
        ]


# -- scoped results -------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["KEYWORD", "VECTOR"])
@pytest.mark.parametrize("scope", SCOPES, ids=repr)
def test_a_scoped_search_is_the_unscoped_ranking_cut_to_the_scope(
    built: Path, strategy: str, scope: dict[str, Any]
) -> None:
    store = _open(built, strategy)
    allowed = _in_scope(built, scope)
    assert allowed  # every scope of the store holds records
    for query in QUERIES:
        for extra in ({}, {"metadata_filter": {"k": 2}}):
            everything = _search(store, query, 10_000, {}, **extra)
            expected = [hit for hit in everything if hit[0] in allowed][:8]
            found = _search(store, query, 8, scope, **extra)
            if strategy == "KEYWORD":  # scores are scaled within each result list
                found, expected = [i for i, _ in found], [i for i, _ in expected]
            assert found == expected, (query, extra)
    store.close()


def test_profiles_are_found_by_their_own_id_as_the_scope(built: Path) -> None:
    store = _open(built, "KEYWORD")
    types = {"record_types": ["user_profile", "agent_profile"]}
    assert [i for i, _ in _search(store, "common", 8, {"user_id": "pu"}, **types)] == ["pu"]
    assert [i for i, _ in _search(store, "common", 8, {"agent_id": "pa"}, **types)] == ["pa"]
    # A profile's rows hold no thread: a thread scope leaves every profile out.
    assert _search(store, "common", 8, {"thread_id": "t0"}, **types) == []
    store.close()


def test_hybrid_scoped_results_stay_in_the_scope(built: Path) -> None:
    store = _open(built)
    for scope in SCOPES:
        allowed = _in_scope(built, scope)
        hits = _search(store, "lake tea common", 20, scope)
        assert hits and {i for i, _ in hits} <= allowed, scope
    store.close()


# -- version 4 -> 5 -------------------------------------------------------------------


def test_a_version_4_file_is_upgraded_on_a_writable_open_with_the_same_results(
    store_file: Path, built: Path
) -> None:
    before = _results(built)
    _as_version_4(store_file)
    data = _dump(store_file)
    assert "chunks_scope" in _indexes(store_file)
    assert _results(store_file) == before
    indexes = _indexes(store_file)
    assert "chunks_scope" not in indexes
    assert indexes["records_thread"].endswith("WHERE thread_id IS NOT NULL OR family = 'message'")
    assert {"chunks_expiry", "chunks_novector"} <= set(indexes)
    with sqlite3.connect(store_file) as conn:
        version = conn.execute("SELECT value FROM oam_meta WHERE key = 'schema_version'")
        assert version.fetchone() == (str(schema.SCHEMA_VERSION),)
    assert _dump(store_file) == data
    store = _open(store_file)
    store.add(["a later memory about lake tea"], "memory", record_ids="new", user_ids="u0")
    assert _search(store, "later", 3, {"user_id": "u0"})[0][0] == "new"
    store.close()


def test_a_read_only_version_4_file_is_searched_as_it_is(
    store_file: Path, built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _results(built)
    _as_version_4(store_file)
    image = store_file.read_bytes()
    connect = SQLiteBackend._connect

    def read_only(target: str, *, uri: bool = False) -> sqlite3.Connection:
        return connect(f"file:{target}?mode=ro", uri=True)

    monkeypatch.setattr(SQLiteBackend, "_connect", staticmethod(read_only))
    store = _open(store_file)
    assert store._impl.schema_version == 4
    store.close()
    assert _results(store_file) == before
    assert store_file.read_bytes() == image


# -- query plans ----------------------------------------------------------------------


@pytest.fixture
def traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    statements: list[str] = []
    connect = SQLiteBackend._connect

    def tracing(target: str, *, uri: bool = False) -> sqlite3.Connection:
        conn = connect(target, uri=uri)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(SQLiteBackend, "_connect", staticmethod(tracing))
    yield statements


def _plans(path: Path, statements: list[str], keep: Callable[[str], bool]) -> dict[str, list[str]]:
    conn = sqlite3.connect(path)
    conn.create_function(schema.FTS_FUNCTION, 1, index_text)
    try:
        return {
            sql: [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}")]
            for sql in dict.fromkeys(statements)
            if keep(sql)
        }
    finally:
        conn.close()


def _reads_chunks(plan: list[str]) -> bool:
    """Whether ``plan`` walks the chunk table's rows (an index holding only keys, such
    as ``chunks_record``, may be scanned: its pages hold no vector)."""
    return any(
        (line in ("SCAN c", "SCAN chunks") or line.startswith(("SCAN c ", "SCAN chunks ")))
        and "COVERING INDEX" not in line
        for line in plan
    )


def test_scoped_searches_purges_and_the_vector_count_read_no_chunk_table(
    store_file: Path, traced: list[str]
) -> None:
    store = _open(store_file)
    for strategy in ("KEYWORD", "VECTOR", "HYBRID"):
        other = _open(store_file, strategy)
        for scope in SCOPES:
            for extra in EXTRAS:
                for query in ("common", "lake tea"):
                    _search(other, query, 8, scope, **extra)
        other.close()
    store.purge_expired()
    store.close()
    plans = _plans(
        store_file,
        traced,
        lambda sql: (
            sql.startswith(("SELECT", "DELETE"))
            and ("chunks" in sql or sql.startswith("SELECT r.pk FROM records r"))
        ),
    )
    scoped = {sql: p for sql, p in plans.items() if "records r JOIN" in sql or "+rowid IN" in sql}
    assert len(scoped) > 20  # the user list, the unranked read and the candidates ran
    candidates = [sql for sql in plans if sql.startswith("SELECT r.pk FROM records r")]
    assert candidates  # the filtered VECTOR candidates (records only)
    purge = [p for sql, p in plans.items() if sql.startswith("DELETE FROM chunks WHERE expires")]
    assert purge == [
        ["SEARCH chunks USING COVERING INDEX chunks_expiry (expires_at>? AND expires_at<?)"]
    ]
    count = plans[schema.vector_count("")]
    assert "SEARCH chunks USING COVERING INDEX chunks_novector (has_vector=?)" in count
    assert not _reads_chunks(count)
    for sql, plan in plans.items():
        if "EXISTS (SELECT 1 FROM chunks_fts f" in sql or "embedding IS NULL" in sql:
            continue  # the unscoped walk in record order (stops early), unembedded rows
        assert not _reads_chunks(plan), (sql, plan)
        assert "SCAN r" not in plan, (sql, plan)


def test_a_one_type_scoped_search_reads_the_scope_index(
    store_file: Path, traced: list[str]
) -> None:
    store = _open(store_file, "KEYWORD")
    _search(store, "common", 8, {"user_id": "u0", "agent_id": "a0"}, record_types=["memory"])
    store.close()
    plans = _plans(store_file, traced, lambda sql: "records r JOIN" in sql)
    assert plans
    for plan in plans.values():
        assert not any("records_type" in line for line in plan), plan
