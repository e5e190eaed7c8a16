"""The warm keyword ranking checked and folded in numpy (``Fts5Ranker._held_best``,
``ChunkScopes.passing_array`` in ``oam_core/store/sqlite/heldstate.py``) gives the
same ``(record key, score)`` pairs, bit for bit and in the same order, as the same
held rows checked one by one (``hold_arrays`` off) and as FTS5 checked in SQL
(``hold_terms`` off): over record types, scopes, expiry, validity windows, ties,
common terms (their rows follow unranked, read from held state too)
and every ``k``; and falls back to the row by row check when too many rows are
not held yet, or the scope bound empties what is held."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.apis._sentinel import NOT_SET
from oam_core.checks import filter_arg, types_arg
from oam_core.store.backend import Predicate
from oam_core.store.sqlite import heldstate, keyword
from oam_core.store.sqlite.heldstate import ChunkScopes

WORDS = ["kiwi", "plum", "pear", "fig", "lime"]
FILLER = ["alpha", "beta", "gamma", "delta"]


def _store(path: Path, seed: int) -> SQLiteMemoryStore:
    """Records of two types and three users, some expiring, with windows, and many
    exact duplicates (rows tied on score, records tied on their best score)."""
    rng = random.Random(seed)
    store = SQLiteMemoryStore(path, search_strategy="KEYWORD", embedder=None)
    n = 150
    base = [" ".join(rng.choices(WORDS, k=2) + rng.choices(FILLER, k=3)) for _ in range(20)]
    texts = [base[i % 20] if i % 2 else base[rng.randrange(20)] + " kiwi" for i in range(n)]
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
    store.add(texts[:50], "fact", record_ids=[f"f{i}" for i in range(50)], user_ids="u1")
    return store


def _three_ways(store: SQLiteMemoryStore, words: list[str], k: int, pred: Predicate) -> Any:
    """``(numpy, row by row, FTS5)`` rankings, each after a first (cold) search."""
    backend = store.runtime.backend
    ranker = backend.keywords  # type: ignore[attr-defined]
    backend.rank_keyword(words, k, pred)
    arrays = backend.rank_keyword(words, k, pred)
    ranker.hold_arrays = False
    rows = backend.rank_keyword(words, k, pred)
    ranker.hold_arrays = True
    ranker.hold_terms = False
    fts5 = backend.rank_keyword(words, k, pred)
    ranker.hold_terms = True
    return arrays, rows, fts5


def test_numpy_ranking_equals_row_checks_and_fts5(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path / "a.db", 5)
    used: list[int] = []
    real = keyword.Fts5Ranker._held_best

    def counted(self: keyword.Fts5Ranker, *args: Any) -> Any:
        out = real(self, *args)
        used.append(out is not None)
        return out

    monkeypatch.setattr(keyword.Fts5Ranker, "_held_best", counted)
    unranked = keyword.Fts5Ranker._held_unranked
    common: list[int] = []

    def counted_common(self: keyword.Fts5Ranker, *args: Any) -> Any:
        out = unranked(self, *args)
        common.append(out is not None)
        return out

    monkeypatch.setattr(keyword.Fts5Ranker, "_held_unranked", counted_common)
    rng = random.Random(1)
    start = datetime.now(timezone.utc)
    compared = ties = 0
    for days in (0, 3, 9):
        for valid_at in ("2026-02-15", "2026-04-15", None):
            for scope in ({}, {"user_id": "u1"}, {"agent_id": None}, {"thread_id": None}):
                for types in ({"memory"}, {"memory", "fact"}):
                    pred = Predicate(
                        record_types=types_arg(types),
                        now=start + timedelta(days=days),
                        valid_at=None
                        if valid_at is None
                        else datetime.fromisoformat(valid_at).replace(tzinfo=timezone.utc),
                        **scope,  # type: ignore[arg-type]
                    )
                    words = rng.sample(WORDS, rng.randint(1, 3))
                    words += rng.sample(FILLER, rng.randint(0, 2))  # common terms
                    for k in (1, 4, 25, 400):
                        arrays, rows, fts5 = _three_ways(store, words, k, pred)
                        assert repr(arrays) == repr(rows) == repr(fts5)
                        compared += len(fts5)
                        scores = [s for _, s in fts5]
                        ties += len(scores) - len(set(scores))
    assert compared > 2000 and ties > 500  # real rankings, many tied scores
    assert sum(used) > 100  # the numpy path ranked most warm searches
    assert sum(common) > 50  # and read the rows of common terms
    store.close()


def test_metadata_filter_and_too_many_unknown_rows_use_row_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path / "b.db", 6)
    ranker = store.runtime.backend.keywords  # type: ignore[attr-defined]
    now = datetime.now(timezone.utc)
    monkeypatch.setattr(keyword, "_HELD_UNKNOWN", 3)
    pred = Predicate(record_types=types_arg(None), now=now, user_id=NOT_SET)
    arrays, rows, fts5 = _three_ways(store, ["kiwi", "plum"], 10, pred)
    assert arrays == rows == fts5 and len(fts5) == 10
    held = ranker.scopes.scopes
    assert held and all(len(rows) < 150 for rows in held.values())  # only the rows checked
    filtered = Predicate(record_types=types_arg(None), now=now, metadata=filter_arg({"x": 1}))
    assert _three_ways(store, ["kiwi"], 10, filtered) == ([], [], [])
    store.close()


def test_passing_array_matches_passing_when_the_bound_empties_the_rows(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path / "c.db", 7)
    backend = store.runtime.backend
    conn = backend.conn  # type: ignore[attr-defined]
    ranker = backend.keywords  # type: ignore[attr-defined]
    small = ChunkScopes(ranker.d, ranker.p, max_rows=40)
    pks = [int(pk) for (pk,) in conn.execute("SELECT pk FROM chunks ORDER BY pk")]
    assert len(pks) > 150
    now = datetime.now(timezone.utc)
    for i, days in enumerate((0, 2, 6)):
        pred = Predicate(
            record_types=types_arg({"memory"}), now=now + timedelta(days=days), user_id="u2"
        )
        for at in range(0, len(pks), 30):
            part = pks[at : at + 30]
            got = small.passing_array(conn, (1, i), pred, np.array(part, np.int64), 1000)
            assert got is not None and small.rows <= 40
            want = ChunkScopes(ranker.d, ranker.p).passing(conn, (1, i), pred, part)
            assert {pk: r for pk, r in zip(part, got.tolist(), strict=True) if r >= 0} == want
        assert small.passing_array(conn, (1, i), pred, np.array(pks, np.int64), 5) is None
    store.close()


@pytest.mark.parametrize("spread", [3, 10_000_000])  # small keys (dense sums), large keys
def test_summed_adds_each_rows_terms_in_query_order(spread: int) -> None:
    """``_summed`` equals, bit for bit, ``0.0 + c_0 + c_1 ...`` per row in term order."""
    rng = np.random.default_rng(spread)
    for _ in range(50):
        got = []
        for _ in range(int(rng.integers(1, 7))):
            rows = np.unique(rng.integers(0, 40 * spread, int(rng.integers(1, 60))))
            got.append((rows.astype(np.int64), rng.random(len(rows)) * 10.0 ** rng.integers(-3, 4)))
        want: dict[int, float] = {}
        for rows, contribution in got:
            for r, c in zip(rows.tolist(), contribution.tolist(), strict=True):
                want[r] = want.get(r, 0.0) + c
        keys, scores = heldstate._summed(got)
        assert keys.tolist() == sorted(want)
        assert scores.tobytes() == np.array([-want[r] for r in sorted(want)]).tobytes()


def test_sums_continued_from_the_last_terms_equal_fresh_sums(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A feedback list's terms begin with the query's: summed from the query's sums
    on, every score has the same bytes as summed from nothing."""
    store = _store(tmp_path / "d.db", 8)
    parts: list[int] = []
    real = heldstate._summed

    def counted(got: Any) -> Any:
        parts.append(len(got))
        return real(got)

    monkeypatch.setattr(heldstate, "_summed", counted)
    conn = store.runtime.backend.conn  # type: ignore[attr-defined]
    rng = random.Random(2)
    held = heldstate.TermScores("chunks_fts")
    continued = 0
    for _ in range(60):
        first = rng.sample(WORDS + FILLER, rng.randint(1, 3))
        more = first + rng.sample([w for w in WORDS + FILLER if w not in first], 2)
        held.sums(conn, first)
        got = held.sums(conn, more)
        continued += parts[-1] == 3  # the first terms' sums, then the two more
        fresh = heldstate.TermScores("chunks_fts").sums(conn, more)
        assert got is not None and fresh is not None and held.last is not None
        assert got[0].tolist() == fresh[0].tolist() and got[1].tobytes() == fresh[1].tobytes()
        got_sorted = held.scores(conn, more)
        fresh_sorted = heldstate.TermScores("chunks_fts").scores(conn, more)
        assert got_sorted is not None and fresh_sorted is not None
        assert got_sorted[1].tobytes() == fresh_sorted[1].tobytes()
    assert continued == 60
    store.close()
