"""What the keyword ranking keeps per database state and clock interval
(``oam_core/store/sqlite/heldstate.py``: ``ChunkScopes._clocked``, the rows passing
a scope until the next expiry or window edge; ``ChunkScopes.rankings``, the
rankings computed from them) gives what the row by row check and FTS5 in SQL give:
at every clock, on the edges themselves, after writes of this connection, of
another connection and of another process, and through a whole HYBRID search."""

from __future__ import annotations

import multiprocessing
import random
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.checks import types_arg
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store import search
from oam_core.store.backend import Predicate
from oam_core.store.sqlite.heldstate import ChunkScopes

WORDS = ["kiwi", "plum", "pear", "fig", "lime"]
FILLER = ["alpha", "beta", "gamma", "delta"]
UTC = timezone.utc


def _texts(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choices(WORDS, k=2) + rng.choices(FILLER, k=3)) for _ in range(n)]


def _store(path: Path, seed: int, **kw: Any) -> SQLiteMemoryStore:
    """Memories of three users, half expiring on five different days, with windows."""
    rng = random.Random(seed)
    store = SQLiteMemoryStore(path, **{"search_strategy": "KEYWORD", "embedder": None, **kw})
    n = 120
    store.add(
        _texts(rng, n),
        "memory",
        record_ids=[f"m{i}" for i in range(n)],
        user_ids=[f"u{i % 3}" for i in range(n)],
        ttl_days=[None if i % 2 else 1 + i % 5 for i in range(n)],
        valid_from=[f"2026-0{1 + i % 6}-01T00:00:00Z" for i in range(n)],
        valid_until=[None if i % 3 else "2026-05-01T00:00:00Z" for i in range(n)],
    )
    return store


def _at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def test_clocked_rows_equal_row_checks_on_every_edge(tmp_path: Path) -> None:
    """One long-lived ``ChunkScopes`` asked at clocks on, just before and just after
    each expiry and window edge, in random order, gives each time what a fresh one
    checking row by row gives; inside an interval the held array is reused."""
    store = _store(tmp_path / "e.db", 1)
    backend = store.runtime.backend
    conn = backend.conn  # type: ignore[attr-defined]
    ranker = backend.keywords  # type: ignore[attr-defined]
    cols = conn.execute("SELECT pk, expires_at, valid_from, valid_until FROM chunks").fetchall()
    pks = [int(r[0]) for r in cols]
    expiries = sorted({r[1] for r in cols if r[1] is not None})
    edges = sorted({v for r in cols for v in r[2:] if v is not None})
    assert len(expiries) >= 5 and len(edges) >= 3
    nows = [e + d for e in expiries for d in (-1e-3, 0.0, 1e-3)] + [expiries[0] - 9e5]
    valids: list[float | None] = [e + d for e in edges for d in (-1.0, 0.0, 1.0)] + [None]
    clocks = [(n, v) for n in nows for v in valids]
    random.Random(2).shuffle(clocks)
    held = ChunkScopes(ranker.d, ranker.p)
    rows = np.array(pks, np.int64)
    for user in ("u1", None):
        for now, valid in clocks:
            pred = Predicate(
                record_types=types_arg({"memory"}),
                now=_at(now),
                valid_at=None if valid is None else _at(valid),
                **({"user_id": user} if user else {}),  # type: ignore[arg-type]
            )
            got = held.passing_array(conn, (1, 0), pred, rows, 10_000)
            want = ChunkScopes(ranker.d, ranker.p).passing(conn, (1, 0), pred, pks)
            assert got is not None
            assert {pk: r for pk, r in zip(pks, got.tolist(), strict=True) if r >= 0} == want
    assert held.clocked and all(c is not None for c in held.clocked.values())
    # Two clocks inside one interval share the held array; one past an edge does not.
    pred = Predicate(record_types=types_arg({"memory"}), now=_at(expiries[0] + 1.0))
    scope = held._scope((1, 0), pred)
    held.passing_array(conn, (1, 0), pred, rows, 10_000)
    first = held.clocked[scope]
    later = Predicate(record_types=types_arg({"memory"}), now=_at(expiries[1] - 1.0))
    held.passing_array(conn, (1, 0), later, rows, 10_000)
    assert held.clocked[scope] is first
    past = Predicate(record_types=types_arg({"memory"}), now=_at(expiries[1]))
    held.passing_array(conn, (1, 0), past, rows, 10_000)
    assert held.clocked[scope] is not first
    store.close()


def _three(store: SQLiteMemoryStore, words: list[str], k: int, pred: Predicate) -> Any:
    """``(kept, computed from held state, FTS5)`` rankings of ``words``."""
    backend = store.runtime.backend
    ranker = backend.keywords  # type: ignore[attr-defined]
    kept = backend.rank_keyword(words, k, pred)
    ranker.hold_rankings = False
    computed = backend.rank_keyword(words, k, pred)
    ranker.hold_terms = False
    fts5 = backend.rank_keyword(words, k, pred)
    ranker.hold_terms = ranker.hold_rankings = True
    return kept, computed, fts5


def test_kept_rankings_equal_computed_ones_at_every_clock(tmp_path: Path) -> None:
    store = _store(tmp_path / "k.db", 3)
    ranker = store.runtime.backend.keywords  # type: ignore[attr-defined]
    rng = random.Random(4)
    start = datetime.now(UTC)
    compared = 0
    for days in (0, 2, 2.5, 4, 9, 0):  # back to an earlier clock too
        for valid_at in ("2026-02-15", "2026-05-01", None):
            pred = Predicate(
                record_types=types_arg({"memory"}),
                now=start + timedelta(days=days),
                valid_at=None
                if valid_at is None
                else datetime.fromisoformat(valid_at).replace(tzinfo=UTC),
                user_id=rng.choice(["u0", "u1"]),
            )
            for _ in range(4):
                words = rng.sample(WORDS, rng.randint(1, 3)) + rng.sample(FILLER, 1)
                for k in (1, 5, 50):
                    store.runtime.backend.rank_keyword(words, k, pred)  # the first search
                    kept, computed, fts5 = _three(store, words, k, pred)
                    assert repr(kept) == repr(computed) == repr(fts5)
                    compared += len(fts5)
    assert compared > 1000
    assert any(c is not None and c.rankings for c in ranker.scopes.clocked.values())
    store.close()


def _ids(store: SQLiteMemoryStore, query: str) -> list[str]:
    return [r.id for r, _ in store.search(query, 10, user_id="u1")]


def _write_in_another_process(path: str) -> None:
    store = SQLiteMemoryStore(path, search_strategy="KEYWORD", embedder=None)
    store.add(["kiwi kiwi kiwi"], "memory", record_ids=["p"], user_ids="u1")
    store.close()


def test_kept_rankings_are_dropped_by_any_committed_write(tmp_path: Path) -> None:
    """Writes of this store, of another store object on the file (another
    connection) and of another process are each seen by the next search; each
    search equals the one computed without kept rankings and the FTS5 one."""
    path = tmp_path / "w.db"
    store = _store(path, 5)
    other = SQLiteMemoryStore(path, search_strategy="KEYWORD", embedder=None)
    ranker = store.runtime.backend.keywords  # type: ignore[attr-defined]

    def settled() -> list[str]:
        for _ in range(3):  # cold, warm (kept), kept again
            got = _ids(store, "kiwi plum")
        ranker.hold_rankings = False
        assert _ids(store, "kiwi plum") == got
        ranker.hold_terms = False
        assert _ids(store, "kiwi plum") == got
        ranker.hold_terms = ranker.hold_rankings = True
        return got

    before = settled()
    assert any(c is not None and c.rankings for c in ranker.scopes.clocked.values())
    other.add(["kiwi plum kiwi plum"], "memory", record_ids=["o"], user_ids="u1")
    assert _ids(store, "kiwi plum")[0] == "o"  # another connection's commit
    assert settled()[0] == "o"
    other.delete("memory", "o")
    assert settled() == before
    store.add(["plum kiwi plum kiwi"], "memory", record_ids=["s"], user_ids="u1")
    assert settled()[0] == "s"  # this connection's own commit
    store.delete("memory", "s")
    assert settled() == before
    child = multiprocessing.get_context("spawn").Process(
        target=_write_in_another_process, args=(str(path),)
    )
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert "p" in _ids(store, "kiwi plum")  # another process's commit
    assert "p" in settled()
    other.close()
    store.close()


def test_kept_rankings_follow_the_clock(tmp_path: Path) -> None:
    """A record expiring between two searches of one database state leaves the
    kept ranking at the next search whose clock is past its expiry."""
    store = SQLiteMemoryStore(tmp_path / "c.db", search_strategy="KEYWORD", embedder=None)
    store.add(
        ["fig fig fig", "fig plum"], "memory", record_ids=["soon", "stays"], ttl_days=[1, None]
    )
    backend = store.runtime.backend
    now = datetime.now(UTC)
    pred = Predicate(record_types=types_arg({"memory"}), now=now)
    for _ in range(3):
        assert [key for key, _ in backend.rank_keyword(["fig"], 5, pred)] == [1, 2]
    later = Predicate(record_types=types_arg({"memory"}), now=now + timedelta(days=2))
    kept, computed, fts5 = _three(store, ["fig"], 5, later)
    assert [key for key, _ in kept] == [2] and kept == computed == fts5
    assert [key for key, _ in backend.rank_keyword(["fig"], 5, pred)] == [1, 2]
    store.close()


def _messages(store: SQLiteMemoryStore, rng: random.Random, n: int, at: int) -> None:
    speakers = ["Ana", "Ben", "Cy"]
    store.add(
        _texts(rng, n),
        "message",
        record_ids=[f"t{at + i}" for i in range(n)],
        thread_ids="t1",
        user_ids="u1",
        roles=[rng.choice(["user", "assistant"]) for _ in range(n)],
        metadata=[{"$message": {"name": rng.choice(speakers)}} for _ in range(n)],
    )


def test_hybrid_search_equals_the_uncached_one_across_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whole HYBRID searches of conversation turns (vector half, feedback list,
    speaker and own-words lists) with everything held and kept give the same ids
    and distances, bit for bit, as with the keyword state and the per-pool memo of
    feedback words and signal lists off, while another connection writes between
    them (its records are new objects: nothing kept is used after it)."""
    path = tmp_path / "h.db"
    rng = random.Random(6)
    store = SQLiteMemoryStore(path, embedder=HashingEmbedder(64), search_strategy="HYBRID")
    other = SQLiteMemoryStore(path, embedder=HashingEmbedder(64), search_strategy="HYBRID")
    _messages(store, rng, 150, 0)
    ranker = store.runtime.backend.keywords  # type: ignore[attr-defined]
    queries = [" ".join(rng.sample(WORDS + FILLER, 3)) for _ in range(12)]
    queries += [f"What did {s} say about kiwi and plum?" for s in ("Ana", "Ben")]
    queries = list(dict.fromkeys(queries))
    kept_per_pool = search._per_pool
    computed: list[str] = []
    asked: list[str] = []

    def counted(key: Any, pooled: Any, compute: Any) -> Any:
        asked.append(key[0])

        def traced() -> Any:
            computed.append(key[0])
            return compute()

        return kept_per_pool(key, pooled, traced)

    for round_ in range(3):
        for query in queries:
            monkeypatch.setattr(search, "_per_pool", counted)
            for _ in range(2):
                kept = repr(store.search(query, 10, user_id="u1", exact_user_match=True))
            ranker.hold_rankings = ranker.hold_terms = False
            monkeypatch.setattr(search, "_per_pool", lambda key, pooled, compute: compute())
            plain = repr(store.search(query, 10, user_id="u1", exact_user_match=True))
            ranker.hold_rankings = ranker.hold_terms = True
            assert kept == plain
        _messages(other, rng, 5, 1000 + 10 * round_)  # another connection, between rounds
        assert len(store.search("kiwi plum pear fig lime", 300, user_id="u1")) > 150 + round_
    # Each query's second search at a state used what its first computed.
    for what in ("feedback", "signals"):
        assert asked.count(what) == 2 * 3 * len(queries)
        assert computed.count(what) == 3 * len(queries)
    other.close()
    store.close()


def test_kept_signal_lists_follow_the_clock_of_relative_dates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A question naming a relative day ("yesterday") has its signal lists kept per
    day of the store clock (the query's spans are in the key): each day's are
    computed once, another day's are not reused, and every search equals the one
    computed without the memo."""
    day = [datetime(2024, 3, 10, 12, tzinfo=UTC)]
    store = SQLiteMemoryStore(
        tmp_path / "d.db",
        embedder=HashingEmbedder(64),
        search_strategy="HYBRID",
        clock=lambda: day[0],
    )
    store.add(
        ["We ate kiwi at the market yesterday.", "Plum jam again today."] * 3,
        "message",
        record_ids=["a9", "a10", "b9", "b10", "c9", "c10"],
        thread_ids="t1",
        roles="user",
        timestamps=["2024-03-09T10:00:00", "2024-03-10T10:00:00"] * 3,
    )
    # A memo of its own: the shared one is emptied when full, at any test's search.
    monkeypatch.setattr(search, "_POOL_KEPT", {})
    kept_per_pool = search._per_pool
    computed: list[Any] = []

    def counted(key: Any, pooled: Any, compute: Any) -> Any:
        def traced() -> Any:
            computed.append(key)
            return compute()

        return kept_per_pool(key, pooled, traced)

    query = "What did we eat yesterday at the market?"
    for today in (10, 11, 10, 11):
        day[0] = datetime(2024, 3, today, 12, tzinfo=UTC)
        monkeypatch.setattr(search, "_per_pool", counted)
        kept = [repr(store.search(query, 6)) for _ in range(2)]
        monkeypatch.setattr(search, "_per_pool", lambda key, pooled, compute: compute())
        plain = repr(store.search(query, 6))
        assert kept == [plain, plain]
    signals = [key for key in computed if key[0] == "signals"]
    assert len(signals) == 2 and signals[0][-1] != signals[1][-1]  # one per day
    store.close()
