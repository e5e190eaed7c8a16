"""What the SQLite store holds between searches of one database state
(``oam_core/store/sqlite/heldstate.py``, ``oam_core/store/sqlite/heldstate.py``;
docs/sqlite.md): a warm keyword ranking summed from each term's FTS5 scores equals,
bit for bit, FTS5's many-term ``bm25()``; a commit by another connection or process,
landing inside a search (injected, not slept for), is not seen by that search's
snapshot and is seen by the next one; a result's records are the caller's own; both
caches stay within their bounds."""

from __future__ import annotations

import multiprocessing
import random
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.apis._sentinel import NOT_SET
from oam_core.checks import types_arg
from oam_core.store.backend import Predicate
from oam_core.store.sqlite import heldstate
from oam_core.store.sqlite.heldstate import RowCache, TermScores

WORDS = ["kiwi", "plum", "pear", "fig", "lime", "date", "yam", "okra", "running", "runs"]
FILLER = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "theta", "the", "a"]


def _pred(user: str | None = None) -> Predicate:
    return Predicate(
        record_types=types_arg(None),
        now=datetime.now(timezone.utc),
        user_id=NOT_SET if user is None else user,
    )


def _fts5(path: Path, words: list[str]) -> list[tuple[int, float]]:
    """FTS5's own ``(rowid, bm25)`` of the many-term query, best first, ties by rowid."""
    conn = sqlite3.connect(path)
    try:
        match = " OR ".join(f'"{w}"' for w in words)
        rows = conn.execute(
            "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)
        ).fetchall()
    finally:
        conn.close()
    return sorted(rows, key=lambda r: (r[1], r[0]))


def _corpus(store: SQLiteMemoryStore, rng: random.Random, n: int, start: int = 0) -> None:
    texts = [
        " ".join(
            rng.choices(WORDS, k=rng.randint(1, 4)) + rng.choices(FILLER, k=rng.randint(0, 12))
        )
        for _ in range(n)
    ]
    store.add(
        texts,
        "memory",
        record_ids=[f"m{i}" for i in range(start, start + n)],
        user_ids=[f"u{i % 4}" for i in range(start, start + n)],
    )


def test_summed_term_scores_equal_fts5_bit_for_bit(tmp_path: Path) -> None:
    """Every query of one to five terms (repeated terms and terms of one stem
    included): the same rows, in the same order, with the same float64 scores."""
    rng = random.Random(5)
    store = SQLiteMemoryStore(tmp_path / "t.db", search_strategy="KEYWORD", embedder=None)
    _corpus(store, rng, 300)
    held = TermScores("chunks_fts")
    conn = sqlite3.connect(tmp_path / "t.db")
    checked = 0
    for _ in range(200):
        words = rng.choices(WORDS, k=rng.randint(1, 5))
        got = held.scores(conn, words)
        assert got is not None
        keys, scores = got
        want = _fts5(tmp_path / "t.db", words)
        assert keys.tolist() == [r for r, _ in want]
        assert scores.tobytes() == np.array([s for _, s in want], np.float64).tobytes()
        checked += len(want)
    assert checked > 10_000
    conn.close()
    store.close()


def test_warm_rankings_equal_cold_ones_across_states(tmp_path: Path) -> None:
    """Searches repeated on one state (the second on are warm) and across writes of
    this store object: every warm ranking equals the one FTS5 gives (the ranker with
    term scores off)."""
    rng = random.Random(7)
    store = SQLiteMemoryStore(tmp_path / "w.db", search_strategy="KEYWORD", embedder=None)
    ranker = store.runtime.backend.keywords  # type: ignore[attr-defined]
    for state in range(4):
        _corpus(store, rng, 80, start=80 * state)
        for _ in range(12):
            words = rng.sample(WORDS, rng.randint(1, 3))
            for user in (None, "u1"):
                for k in (1, 5, 30):
                    warm = store.runtime.backend.rank_keyword(words, k, _pred(user))
                    ranker.hold_terms = False
                    cold = store.runtime.backend.rank_keyword(words, k, _pred(user))
                    ranker.hold_terms = True
                    assert warm == cold
        assert ranker.term_scores.terms  # the warm searches read held terms
    store.close()


def test_a_commit_inside_a_search_is_seen_by_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another connection commits while a warm search reads a term: that search's
    snapshot predates the commit, and the next search ranks the new row."""
    store = SQLiteMemoryStore(tmp_path / "c.db", search_strategy="KEYWORD", embedder=None)
    store.add(["kiwi tart", "plum jam", "kiwi kiwi kiwi"], "memory", record_ids=["a", "b", "c"])
    other = sqlite3.connect(tmp_path / "c.db", isolation_level=None)
    ids = lambda q: [r.id for r, _ in store.search(q, 5)]  # noqa: E731
    assert ids("kiwi") == ["c", "a"]
    assert ids("kiwi") == ["c", "a"]  # warm: held from here on
    real = TermScores._read
    commits: list[int] = []

    def commit_first(self: TermScores, conn: sqlite3.Connection, term: str) -> Any:
        if not commits:  # inside the search's read transaction, before the term is read
            other.execute("UPDATE chunks SET text = 'kiwi kiwi kiwi kiwi' WHERE pk = 2")
            other.execute(
                "INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', 2, 'plum jam')"
            )
            other.execute("INSERT INTO chunks_fts (rowid, text) VALUES (2, 'kiwi kiwi kiwi kiwi')")
            commits.append(1)
        return real(self, conn, term)

    ranker = store.runtime.backend.keywords  # type: ignore[attr-defined]
    ranker.hold_terms = False
    before = ids("kiwi tart")  # FTS5's ranking at this state
    ranker.hold_terms = True
    monkeypatch.setattr(TermScores, "_read", commit_first)
    assert ids("kiwi tart") == before  # reads "tart": its snapshot predates the commit
    assert commits == [1] and "b" not in before
    after = ids("kiwi tart")  # the next search (cold) sees the commit
    assert "b" in after
    assert ids("kiwi tart") == after  # and so does the next warm one
    ranker.hold_terms = False
    assert ids("kiwi tart") == after
    other.close()
    store.close()


def _write_in_another_process(path: str) -> None:
    store = SQLiteMemoryStore(path, search_strategy="KEYWORD", embedder=None)
    store.add(["fig fig fig fig"], "memory", record_ids=["z"])
    store.update("memory", "a", text="fig")
    store.close()


def test_writes_of_another_process_are_seen(tmp_path: Path) -> None:
    path = str(tmp_path / "p.db")
    store = SQLiteMemoryStore(path, search_strategy="KEYWORD", embedder=None)
    store.add(["fig tart", "plum", "fig jam fig"], "memory", record_ids=["a", "b", "c"])
    for _ in range(3):
        assert [r.id for r, _ in store.search("fig", 5)] == ["c", "a"]
    first = store.search("fig", 5)[0][0]
    child = multiprocessing.get_context("spawn").Process(
        target=_write_in_another_process, args=(path,)
    )
    child.start()
    child.join(60)
    assert child.exitcode == 0
    for _ in range(2):
        got = store.search("fig", 5)
        assert [r.id for r, _ in got] == ["z", "a", "c"]
        assert next(r for r, _ in got if r.id == "a").content == "fig"  # not the held row
    assert first.content == "fig jam fig"
    store.close()


def test_results_are_the_callers_own(tmp_path: Path) -> None:
    """A result's metadata changed by the caller changes nothing a later search
    returns (the held rows build new records), within one database state."""
    store = SQLiteMemoryStore(tmp_path / "r.db", search_strategy="KEYWORD", embedder=None)
    store.add(["kiwi"], "memory", record_ids=["a"], metadata=[{"tag": "x"}])
    first = store.search("kiwi", 1)[0][0]
    assert first.metadata is not None
    first.metadata["tag"] = "changed"
    again = store.search("kiwi", 1)[0][0]
    assert again.metadata == {"tag": "x"} and again is not first
    store.close()


def test_a_rolled_back_write_is_never_held(tmp_path: Path) -> None:
    """A search inside a write transaction that rolls back neither reads nor fills
    the caches (``total_changes`` does not go back on a rollback)."""
    store = SQLiteMemoryStore(tmp_path / "b.db", search_strategy="KEYWORD", embedder=None)
    store.add(["kiwi"], "memory", record_ids=["a"])
    backend = store.runtime.backend
    assert [r.id for r, _ in store.search("kiwi", 2)] == ["a"]
    with pytest.raises(RuntimeError), backend.transaction():  # type: ignore[attr-defined]
        backend.conn.execute("UPDATE records SET content = 'gone' WHERE id = 'a'")  # type: ignore[attr-defined]
        assert backend.load_for_ranking([1])[1].content == "gone"
        assert backend.rank_keyword(["kiwi"], 2, _pred()) == backend.rank_keyword(
            ["kiwi"], 2, _pred()
        )
        raise RuntimeError("roll back")
    got = store.search("kiwi", 2)
    assert [r.content for r, _ in got] == ["kiwi"]
    assert backend.load_for_ranking([1])[1].content == "kiwi"
    store.close()


def test_bounds() -> None:
    rows = RowCache(max_rows=2, max_chars=20)
    rows.at((1, 0))
    row = [1, "memory", "a", "memory", "abcd", None, None, None, None, None, None, "{}"]
    rows.put(1, row)
    rows.put(2, [2, *row[1:]])
    assert list(rows.rows) == [1, 2] and rows.chars == 12  # content and metadata text
    rows.put(3, [3, *row[1:]])  # a third row passes the row bound: emptied first
    assert list(rows.rows) == [3] and rows.chars == 6
    rows.put(4, [4, *row[1:4], "x" * 20, *row[5:]])  # more text than the bound: not held
    assert 4 not in rows.rows and rows.chars <= 20
    rows.put(5, [5, *row[1:]])
    rows.at((1, 0))  # the same state keeps its rows
    assert 5 in rows.rows
    rows.at((2, 0))
    assert not rows.rows and rows.chars == 0
    held = TermScores("chunks_fts", max_entries=heldstate.TERM_SCORES_MAX_ENTRIES)
    assert held.warm((1, 0)) is False and held.warm((1, 0)) is True
    assert held.warm((1, 1)) is False  # a write of this connection


def test_held_scopes_compare_the_clock_at_each_search(tmp_path: Path) -> None:
    """Rows held with their record's type, scope, expiry and validity window: a warm
    ranking at any time, type and scope equals FTS5's checked in SQL."""
    rng = random.Random(3)
    store = SQLiteMemoryStore(tmp_path / "s.db", search_strategy="KEYWORD", embedder=None)
    n = 120
    texts = [" ".join(rng.choices(WORDS, k=3) + rng.choices(FILLER, k=4)) for _ in range(n)]
    store.add(
        texts,
        "memory",
        record_ids=[f"m{i}" for i in range(n)],
        user_ids=[f"u{i % 3}" for i in range(n)],
        agent_ids=[None if i % 4 == 0 else "a1" for i in range(n)],
        ttl_days=[None if i % 2 else 1 + i % 5 for i in range(n)],
        valid_from=[f"2026-0{1 + i % 6}-01T00:00:00Z" for i in range(n)],
        valid_until=[None if i % 3 else "2026-05-01T00:00:00Z" for i in range(n)],
    )
    store.add(texts[:40], "fact", record_ids=[f"f{i}" for i in range(40)], user_ids="u1")
    backend = store.runtime.backend
    ranker = backend.keywords  # type: ignore[attr-defined]
    start = datetime.now(timezone.utc)
    compared = 0
    for days in (0, 2, 4, 9):
        for valid_at in ("2026-02-15", "2026-04-15", "2026-06-15", None):
            for scope in ({}, {"user_id": "u1"}, {"agent_id": None}, {"agent_id": "a1"}):
                for types in ({"memory"}, {"memory", "fact"}):
                    pred = Predicate(
                        record_types=types_arg(types),
                        now=start + timedelta(days=days),
                        valid_at=None
                        if valid_at is None
                        else datetime.fromisoformat(valid_at).replace(tzinfo=timezone.utc),
                        **scope,  # type: ignore[arg-type]
                    )
                    words = rng.sample(WORDS, 2)
                    backend.rank_keyword(words, 10, pred)  # the first search at the state
                    warm = backend.rank_keyword(words, 10, pred)
                    ranker.hold_terms = False
                    cold = backend.rank_keyword(words, 10, pred)
                    ranker.hold_terms = True
                    assert warm == cold
                    compared += len(cold)
    assert compared > 500 and ranker.scopes.rows > 0
    store.close()
