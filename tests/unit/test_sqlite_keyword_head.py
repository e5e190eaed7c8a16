"""The SQLite keyword ranker's two reads (oam_core/store/sqlite/keyword.py;
docs/store.md#keyword-search): an unscoped search, or one scoped to a user holding
few rows (then FTS5 scores only that user's rows), first asks FTS5 for its best rows
with a ``LIMIT`` and, when they do not settle the ranking, reads every row in score
order as other scoped searches do. All must rank as a brute-force reading of the
whole index: each record by its best in-scope chunk, ties by record key.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from oam_core import SQLiteMemoryStore
from oam_core.apis._sentinel import NOT_SET
from oam_core.checks import types_arg
from oam_core.filters import parse_filter
from oam_core.store.backend import Predicate
from oam_core.store.sqlite import keyword
from oam_core.store.sqlite.keyword import _head_rows

WORDS = ["kiwi", "plum", "pear", "fig", "lime", "date", "yam", "okra"]
FILLER = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "theta"]


@pytest.fixture(autouse=True)
def _fts5_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests count FTS5's reads: every search asks FTS5 (the term scores held
    between searches, ``sqlite/heldstate.py``, are tested in test_sqlite_termscores.py)."""
    monkeypatch.setattr(keyword.Fts5Ranker, "hold_terms", False)


def _store(tmp_path: Path) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(tmp_path / "kw.db", search_strategy="KEYWORD", embedder=None)


def _reference(
    path: str | Path,
    words: list[str],
    k: int,
    user: str | None = None,
    types: set[str] | None = None,
    ids: set[str] | None = None,
) -> list[tuple[int, float]]:
    """The ``k`` best ``(record pk, BM25 >= 0)`` pairs: every matching row scored by
    ``bm25``, each record by its best chunk passing the filter (user, types, record
    ids), ties by record pk."""
    conn = sqlite3.connect(path)
    try:
        match = " OR ".join(f'"{w}"' for w in words)
        scores = conn.execute(
            "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)
        ).fetchall()
        owner = {
            pk: (rpk, rid, uid, rtype)
            for pk, rpk, rid, uid, rtype in conn.execute(
                "SELECT c.pk, r.pk, r.id, r.user_id, r.record_type FROM chunks c "
                "JOIN records r ON r.pk = c.record_pk"
            )
        }
    finally:
        conn.close()
    best: dict[int, float] = {}
    for pk, score in scores:
        rpk, rid, uid, rtype = owner[pk]
        if (user is not None and uid != user) or (types is not None and rtype not in types):
            continue
        if ids is not None and rid not in ids:
            continue
        best[rpk] = min(score, best.get(rpk, score))
    ranked = sorted(best.items(), key=lambda kv: (kv[1], kv[0]))[:k]
    return [(rpk, -score) for rpk, score in ranked]


def _rank(
    store: SQLiteMemoryStore,
    words: list[str],
    k: int,
    user: str | None = None,
    types: set[str] | None = None,
    metadata: dict[str, Any] | None = None,
    agent: str | None = None,
) -> list[tuple[Any, float]]:
    """The ranker's answer: ``(record pk, BM25)`` pairs, best first."""
    pred = Predicate(
        record_types=types_arg(types),
        now=datetime.now(timezone.utc),
        user_id=NOT_SET if user is None else user,
        agent_id=NOT_SET if agent is None else agent,
        metadata=NOT_SET if metadata is None else parse_filter(metadata),
    )
    return store.runtime.backend.rank_keyword(words, k, pred)


def _ids(store: SQLiteMemoryStore, ranked: list[tuple[Any, float]]) -> list[str]:
    records = store.runtime.backend.load([rpk for rpk, _ in ranked])
    return [records[rpk].id for rpk, _ in ranked]


def _head_or_all(sql: str) -> str:
    """``"head"`` when the ranking read ends with a ``LIMIT``, else ``"all"``."""
    return "head" if sql.rstrip().rsplit(" ", 2)[-2] == "LIMIT" else "all"


class _Reads:
    """The ranking statements a store's connection runs (``set_trace_callback``)."""

    def __init__(self, store: SQLiteMemoryStore) -> None:
        self.sql: list[str] = []
        store.runtime.backend.conn.set_trace_callback(self.sql.append)  # type: ignore[attr-defined]

    def kinds(self) -> list[str]:
        """``"head"`` for a ``LIMIT``-ed read of the best rows, ``"all"`` for a read of
        every row in score order, ``"check"`` for a check of rows against the filter;
        ``"user-head"`` / ``"user-all"`` for those reads over one user's rows only."""
        out = []
        for s in self.sql:
            if s.startswith("SELECT rowid, bm25("):
                out.append(("user-" if "+rowid IN" in s else "") + _head_or_all(s))
            elif s.startswith("SELECT c.pk, c.record_pk"):
                out.append("check")
        self.sql.clear()
        return out

    def reads(self) -> list[str]:
        """``kinds`` without the checks and counts."""
        return [kind for kind in self.kinds() if kind != "check"]


def test_random_corpus_ranks_as_the_whole_index_scoped_and_not(tmp_path: Path) -> None:
    rng = random.Random(11)
    store = _store(tmp_path)
    texts, users, chunks = [], [], []
    for i in range(400):
        words = rng.choices(WORDS, k=rng.randint(1, 3)) + rng.choices(FILLER, k=rng.randint(0, 9))
        texts.append(" ".join(words))
        users.append(f"u{i % 8}")
        # a third of the records have a second search row
        second = " ".join(rng.choices(WORDS + FILLER, k=rng.randint(1, 6)))
        chunks.append([texts[-1], second] if i % 3 == 0 else texts[-1])
    store.add(
        texts,
        "memory",
        index_texts=chunks,
        record_ids=[f"m{i}" for i in range(400)],
        user_ids=users,
        agent_ids=[f"a{i % 3}" for i in range(400)],
    )
    agent_ids = {f"m{i}" for i in range(400) if i % 3 == 1}
    reads = _Reads(store)
    cases = 0
    for k in (1, 3, 10, 25, 60):
        for n in (1, 2, 3):
            for _ in range(4):
                words = rng.sample(WORDS, n)
                assert _rank(store, words, k) == _reference(store.path, words, k)
                assert reads.reads() in (["head"], ["head", "all"])
                scoped = _rank(store, words, k, user="u2")
                assert scoped == _reference(store.path, words, k, user="u2")
                # a user of 50 records of 400: FTS5 scores that user's rows only
                assert reads.reads() in (["user-head"], ["user-head", "user-all"])
                agent = _rank(store, words, k, agent="a1")
                assert agent == _reference(store.path, words, k, ids=agent_ids)
                assert reads.reads() == ["all"]  # other scopes read in score order
                cases += 1
    assert cases == 60
    store.close()


def test_head_that_a_filter_empties_falls_back_to_reading_every_row(tmp_path: Path) -> None:
    """The best rows are all of another record type: the head holds no record to
    return, so the ranker reads on, and finds the ``memory`` records below them."""
    store = _store(tmp_path)
    n_notes = _head_rows(10) + 20
    store.add(["kiwi"] * n_notes, "fact", record_ids=[f"n{i}" for i in range(n_notes)])
    long = [f"kiwi {' '.join(FILLER * (1 + i % 3))}" for i in range(15)]
    store.add(long, "memory", record_ids=[f"m{i}" for i in range(15)])
    reads = _Reads(store)
    got = _rank(store, ["kiwi"], 10, types={"memory"})
    assert got == _reference(store.path, ["kiwi"], 10, types={"memory"})
    assert len(got) == 10 and all(rid.startswith("m") for rid in _ids(store, got))
    # the head's first k + spare rows, then the rest of it, then every row
    assert reads.kinds()[:4] == ["head", "check", "check", "all"]
    store.close()


def test_ties_past_the_head_are_broken_by_record_key(tmp_path: Path) -> None:
    """Many rows score the same as the k-th record, more than the head holds; their
    row order (re-written records have the newest rows) differs from record order,
    so only a read past the head finds the records with the smallest keys."""
    store = _store(tmp_path)
    n = _head_rows(5) * 3
    store.add(["plum tart"] * n, "memory", record_ids=[f"r{i:03d}" for i in range(n)])
    for i in range(0, n // 2):  # the first half get new search rows, after all others
        store.update("memory", f"r{i:03d}", text="tart plum")
    reads = _Reads(store)
    got = _rank(store, ["plum"], 5)
    assert _ids(store, got) == ["r000", "r001", "r002", "r003", "r004"]
    assert got == _reference(store.path, ["plum"], 5)
    assert reads.reads() == ["head", "all"]
    store.close()


@pytest.mark.parametrize("k", [1, 10])
def test_head_that_settles_the_ranking_is_the_only_read(tmp_path: Path, k: int) -> None:
    """Scores that differ (rows of growing length): the head's last row scores worse
    than the k-th record, so no second read runs."""
    store = _store(tmp_path)
    texts = [f"fig {'alpha ' * i}" for i in range(200)]  # each row a length of its own
    store.add(texts, "memory", record_ids=[f"f{i}" for i in range(200)])
    reads = _Reads(store)
    got = _rank(store, ["fig"], k)
    assert got == _reference(store.path, ["fig"], k)
    assert reads.kinds() == ["head", "check"]  # k + spare rows checked: k records
    store.close()


def test_fewer_matches_than_the_head_are_read_once(tmp_path: Path) -> None:
    store = _store(tmp_path)
    store.add(["lime soda", "lime", "water"], "memory", record_ids=["a", "b", "c"])
    reads = _Reads(store)
    assert _ids(store, _rank(store, ["lime"], 10)) == ["b", "a"]
    assert reads.kinds() == ["head", "check"]
    store.close()


def _user_corpus(store: SQLiteMemoryStore, n: int, start: int = 0, user: str = "u1") -> None:
    rng = random.Random(start)
    texts = [
        " ".join(rng.choices(WORDS, k=rng.randint(1, 3)) + rng.choices(FILLER, k=rng.randint(0, 6)))
        for _ in range(n)
    ]
    store.add(
        texts,
        "memory",
        record_ids=[f"{user}-{i}" for i in range(start, start + n)],
        user_ids=[user] * n,
        metadata=[{"even": i % 2 == 0} for i in range(start, start + n)],
    )


def test_user_holding_many_rows_is_read_in_score_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user above the user-only threshold (30 rows here), or holding more than a
    quarter of the rows, is ranked from the whole index; a write that takes a user
    past it is seen by the next search (the count is re-read)."""
    monkeypatch.setattr(keyword, "USER_FILTER_ROWS", 30)
    store = _store(tmp_path)
    _user_corpus(store, 300, user="big")
    _user_corpus(store, 20, user="small")
    reads = _Reads(store)
    for user in ("big", "small"):
        assert _rank(store, ["kiwi", "fig"], 5, user=user) == _reference(
            store.path, ["kiwi", "fig"], 5, user=user
        )
    assert reads.reads() == ["all", "user-head"]
    _user_corpus(store, 20, start=20, user="small")  # 40 rows: above 30
    assert _rank(store, ["kiwi", "fig"], 5, user="small") == _reference(
        store.path, ["kiwi", "fig"], 5, user="small"
    )
    assert reads.reads() == ["all"]
    monkeypatch.setattr(keyword, "USER_FILTER_ROWS", 4096)
    for user, kinds in (("big", ["all"]), ("small", ["user-head"])):  # 300 and 40 of 340
        assert _rank(store, ["kiwi"], 5, user=user) == _reference(
            store.path, ["kiwi"], 5, user=user
        )
        assert reads.reads() == kinds
    store.close()


def test_user_only_read_applies_the_metadata_filter_in_its_checks(tmp_path: Path) -> None:
    """The user's row list leaves out the metadata filter; the checks apply it, so
    the head of a user-only read may hold records the filter drops."""
    store = _store(tmp_path)
    _user_corpus(store, 100, user="u1")
    _user_corpus(store, 300, start=100, user="u2")
    even = {f"u1-{i}" for i in range(0, 100, 2)}
    reads = _Reads(store)
    for k in (1, 10, 60):
        got = _rank(store, ["plum", "lime"], k, user="u1", metadata={"even": True})
        assert got == _reference(store.path, ["plum", "lime"], k, user="u1", ids=even)
        assert reads.reads()[0] == "user-head"
    store.close()


def test_rows_tying_the_kth_record_after_the_first_check_are_checked(tmp_path: Path) -> None:
    """Every row ties; the head's second part holds the records with the smallest
    keys (their search rows were re-written last). The rows that tie the k-th
    record's score are still checked, so the ties go to the smallest keys, without
    a read past the head (there are fewer rows than it holds)."""
    store = _store(tmp_path)
    n = _head_rows(5) - 6
    store.add(["plum tart"] * n, "memory", record_ids=[f"r{i:03d}" for i in range(n)])
    for i in range(n - (5 + keyword._HEAD_SPARE)):
        store.update("memory", f"r{i:03d}", text="tart plum")
    reads = _Reads(store)
    got = _rank(store, ["plum"], 5)
    assert _ids(store, got) == ["r000", "r001", "r002", "r003", "r004"]
    assert reads.kinds() == ["head", "check", "check"]
    store.close()


def test_a_streamed_read_checks_room_for_k_records_at_once(tmp_path: Path) -> None:
    """A read in score order (a scope without the user-only list) checks its first
    ``_head_rows(k)`` rows at once: 50 records of two rows each need one check of
    the predicate, not one per 64 rows, and rank as the whole index does."""
    rng = random.Random(5)
    store = _store(tmp_path)
    n = 90
    texts = [f"kiwi {' '.join(rng.choices(FILLER, k=rng.randint(0, 8)))}" for i in range(n)]
    second = [f"plum kiwi {' '.join(rng.choices(FILLER, k=rng.randint(0, 8)))}" for i in range(n)]
    store.add(
        texts,
        "memory",
        index_texts=[[a, b] for a, b in zip(texts, second, strict=True)],
        record_ids=[f"m{i:02d}" for i in range(n)],
        agent_ids="a1",
    )
    others = [" ".join(rng.choices(FILLER, k=6)) for _ in range(4 * n)]  # kiwi stays rare
    store.add(others, "memory", record_ids=[f"o{i}" for i in range(4 * n)], agent_ids="a2")
    ids = {f"m{i:02d}" for i in range(n)}
    reads = _Reads(store)
    for words, k in ((["kiwi"], 50), (["kiwi", "plum"], 50), (["kiwi"], 10), (["plum"], 89)):
        got = _rank(store, words, k, agent="a1")
        assert got == _reference(store.path, words, k, ids=ids)
        kinds = reads.kinds()
        assert kinds[0] == "all"
        if k == 50:
            assert kinds == ["all", "check"]  # 116 rows hold the 50 records
    store.close()
