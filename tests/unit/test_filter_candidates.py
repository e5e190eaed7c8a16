"""The metadata-filter candidates of the SQLite store's VECTOR search
(``oam_core/store/sqlite/candidates.py``, docs/filters.md#how-it-runs): a commit by
another connection landing inside a search (injected, not slept for) is not seen by
that search's snapshot and is seen by the next one; the cache stays within its
bounds; the statement keeps types apart and leaves the clock out."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.filters import parse_filter
from oam_core.store.backend import Predicate
from oam_core.store.sqlite import backend as sqlite_backend
from oam_core.store.sqlite import candidates
from oam_core.store.sqlite.candidates import FilterCache

DIM = 8


def _vec(i: int) -> Any:
    v = np.zeros(DIM, np.float32)
    v[i % DIM] = 1.0
    v[(i + 1) % DIM] = 0.5
    return v


def _ids(store: SQLiteMemoryStore, flt: Any) -> set[str]:
    q = np.ones(DIM, np.float32)
    return {r.id for r, _ in store.search(query_vector=q, k=20, metadata_filter=flt)}


@pytest.fixture
def store(tmp_path: Path) -> Any:
    s = SQLiteMemoryStore(tmp_path / "c.db", vector_dim=DIM, search_strategy="VECTOR")
    s.add(
        ["a", "b", "c"],
        "memory",
        record_ids=["a", "b", "c"],
        metadata=[{"k": "x"}, {"k": "y"}, {"k": "x"}],
        embeddings=[_vec(i) for i in range(3)],
    )
    yield s
    s.close()


def test_a_commit_inside_a_search_is_seen_by_the_next_one(
    store: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = sqlite3.connect(tmp_path / "c.db", isolation_level=None)
    assert _ids(store, {"k": "x"}) == {"a", "c"}  # cached at this state
    real = candidates.filtered_chunks
    commits: list[int] = []

    def commit_first(*args: Any, **kwargs: Any) -> Any:
        # After the index caught up, before the filter's candidates are read:
        # another connection commits a metadata change.
        if not commits:
            other.execute("UPDATE records SET metadata = '{\"k\": \"x\"}' WHERE id = 'b'")
            commits.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(sqlite_backend, "filtered_chunks", commit_first)
    assert _ids(store, {"k": "x"}) == {"a", "c"}  # its snapshot predates the commit
    assert commits == [1]
    assert _ids(store, {"k": "x"}) == {"a", "b", "c"}  # the next search sees it
    other.close()


def test_a_write_by_another_connection_empties_the_cache(store: Any, tmp_path: Path) -> None:
    assert _ids(store, {"k": "y"}) == {"b"}
    cache = store._impl.filters
    assert len(cache.entries) == 1
    other = sqlite3.connect(tmp_path / "c.db", isolation_level=None)
    other.execute("DELETE FROM records WHERE id = 'b'")
    other.close()
    assert _ids(store, {"k": "y"}) == set()
    assert _ids(store, {"k": "x"}) == {"a", "c"}
    assert len(cache.entries) == 2


def test_cache_bounds_and_versions() -> None:
    cache = FilterCache(max_entries=2, max_items=5)
    v = (1, 0)
    assert cache.get(v, ("q1", ())) is None
    cache.put(v, ("q1", ()), np.arange(2))
    cache.put(v, ("q2", ()), np.arange(2))
    assert cache.get(v, ("q1", ())) is not None  # q1 now the most recent
    cache.put(v, ("q3", ()), np.arange(1))  # over max_entries: q2 dropped
    assert set(cache.entries) == {("q1", ()), ("q3", ())} and cache.items == 3
    cache.put(v, ("q4", ()), np.arange(4))  # 7 keys, over max_items: q1 dropped
    assert set(cache.entries) == {("q3", ()), ("q4", ())} and cache.items == 5
    cache.put(v, ("big", ()), np.arange(6))  # larger than the whole cache: not kept
    assert ("big", ()) not in cache.entries and cache.items == 5
    cache.put((2, 0), ("q5", ()), np.arange(1))  # a stale version is not stored
    assert ("q5", ()) not in cache.entries
    assert cache.get((1, 1), ("q4", ())) is None and not cache.entries and cache.items == 0


def _pred(flt: Any, **scope: Any) -> Predicate:
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return Predicate(frozenset({"memory"}), now, metadata=parse_filter(flt), **scope)


def test_statement_leaves_out_the_clock_and_keeps_true_apart_from_one() -> None:
    sql_true, params_true = candidates.statement("", _pred({"n": True}))
    sql_one, params_one = candidates.statement("", _pred({"n": 1}))
    assert sql_true != sql_one or params_true != params_one
    assert "expires_at" not in sql_true
    scoped, params = candidates.statement("", _pred({"n": 1}, user_id="u1"))
    assert "r.user_id = ?" in scoped and "u1" in params and "expires_at" not in scoped
    assert candidates.statement("", _pred({"n": 1}, thread_id=None))[0].count("IS NULL") == 1
