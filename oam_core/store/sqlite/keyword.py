"""KEYWORD ranking of the SQLite store: FTS5 BM25 over the chunk index
(docs/store.md#keyword-search, docs/sqlite.md).

Query terms are cut and folded as the index cut and folded the text
(``store/text.keyword_terms``), a term whose stem an earlier term has is dropped
(``sqlite/stems.py``: each stem counts once, as on PostgreSQL), terms
found in more than half of the rows are set aside as common (BM25 gives them an IDF
of about 0), and the FTS5 ranking is read in rank order until ``k`` records pass the
predicate, so a filter never hides a match.
"""

from __future__ import annotations

import dataclasses
import sqlite3
from bisect import bisect_right
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from oam_core.apis._sentinel import NOT_SET
from oam_core.store.backend import Predicate
from oam_core.store.sql import statements as st
from oam_core.store.sql.dialect import Dialect
from oam_core.store.sqlite.heldstate import ChunkScopes, TermScores
from oam_core.store.sqlite.schema import FOLDED_VERSION
from oam_core.store.sqlite.scoped import NO_RECORD, record_scope
from oam_core.store.sqlite.stems import distinct_stems
from oam_core.store.text import WORD, keyword_terms


class Fts5Ranker:
    """Keyword ranking over the FTS5 index ``{prefix}chunks_fts``.

    Args:
        dialect: The SQLite dialect.
        prefix: The object-name prefix.
        schema_version: The file's schema version (a version-1 file, read where it
            cannot be upgraded, indexed plain words; versions 2 to 5 unfolded text).
    """

    hold_terms = True
    """Whether warm searches rank from the term scores held for the database state
    (``sqlite/heldstate.py``); False: every search asks FTS5."""

    hold_arrays = True
    """Whether a warm search without a metadata filter checks and folds its held
    term scores in numpy (``_held_best``); False: row by row, as FTS5's rows."""

    hold_rankings = True
    """Whether a ranking computed from held state is kept for the database state and
    clock interval (``ChunkScopes.rankings``): the same terms searched again with the
    same types and scope are answered from it; False: computed each time."""

    def __init__(self, dialect: Dialect, prefix: str, schema_version: int) -> None:
        self.d = dialect
        self.p = prefix
        self.schema_version = schema_version
        # Statistics kept until the file changes, keyed by (data_version,
        # total_changes): each term's capped row count ("" -> all rows), each user
        # scope's capped chunk-row count.
        self._version = (-1, -1)
        self._term_rows: dict[str, int] = {}
        self._user_rows: dict[tuple[str | None, int], int] = {}  # (user, cap) -> count
        self.term_scores = TermScores(f"{prefix}chunks_fts")
        self.scopes = ChunkScopes(dialect, prefix)

    def rank(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str],
        k: int,
        pred: Predicate,
        *,
        cacheable: bool = False,
    ) -> list[tuple[Hashable, float]]:
        """Up to ``k`` ``(record pk, BM25 score >= 0)`` pairs, best first, for records
        with a chunk passing ``pred`` whose text holds any of ``terms``
        (``store/text.query_terms``); ``conn`` is the store's, under its lock.
        ``cacheable``: ``conn`` is in a read transaction this search began (not a
        write's), so the term scores held for its database state may be read and
        filled (``sqlite/heldstate.py``)."""
        terms = _index_terms(terms, self.schema_version)
        if not terms:
            return []
        informative, common, warm = self._split_terms(conn, terms, cacheable=cacheable)
        if not informative:
            return []
        held = informative if warm else None
        version = self._version if cacheable and self.hold_terms else None
        out = self._ranked(conn, _or(informative), k, pred, held, version)
        if common and len(out) < k:
            # Rows matching only very common terms: BM25 scores them ~0, so they
            # follow the ranked ones unranked, in insertion order.
            seen = {rpk for rpk, _ in out}
            rest = None
            if held is not None and version is not None:
                rest = self._held_unranked(conn, common, k + len(seen), pred, version)
            if rest is None:
                rest = self._unranked(conn, _or(common), k + len(seen), pred)
            out += [(int(r), 0.0) for r in rest if r not in seen][: k - len(out)]
        return out

    def _unranked(
        self, conn: sqlite3.Connection, match: str, limit: int, pred: Predicate
    ) -> list[int]:
        """The first ``limit`` record pks, in pk order, with a chunk passing ``pred`` that
        matches ``match`` (terms in more than half of the rows). Unscoped, chunks are
        walked in record order and each is looked up in the index, so the walk stops
        after about ``2 * limit`` chunks; scoped to a user, agent or thread, the chunks
        of the scope's records (``sqlite/scoped.py``) are intersected with the index's
        match list instead."""
        fts = f"{self.p}chunks_fts"
        if _scoped(pred):
            # The scope's records from their indexes (schema 5 keeps no scope index
            # on the chunks), their rows through chunks_record; expiry on the row.
            scope_sql, scope_params = record_scope(pred)
            if scope_sql == NO_RECORD:
                return []
            where, params = st.where(self.d, _unscoped(pred), "c", records=False)
            sql = (
                f"SELECT DISTINCT r.pk FROM {self.p}records r "
                f"JOIN {self.p}chunks c ON c.record_pk = r.pk WHERE {scope_sql} "
                f"AND c.pk IN (SELECT rowid FROM {fts} WHERE {fts} MATCH ?) AND {where} "
                "ORDER BY r.pk LIMIT ?"
            )
            params = [*scope_params, match, *params, limit]
        else:
            join, where, params = st.candidates(self.d, self.p, pred)
            sql = (
                f"SELECT DISTINCT c.record_pk FROM {self.p}chunks c {join} "
                f"WHERE EXISTS (SELECT 1 FROM {fts} f WHERE {fts} MATCH ? AND f.rowid = c.pk) "
                f"AND {where} ORDER BY c.record_pk LIMIT ?"
            )
            params = [match, *params, limit]
        return [int(r) for (r,) in conn.execute(sql, params).fetchall()]

    def _ranked(
        self,
        conn: sqlite3.Connection,
        match: str,
        k: int,
        pred: Predicate,
        held: Sequence[str] | None = None,
        version: tuple[int, int] | None = None,
    ) -> list[tuple[Hashable, float]]:
        """Up to ``k`` ``(record pk, BM25 of its best chunk)`` pairs for the FTS5 query
        ``match`` among chunks passing ``pred``, best first, ties by record pk.

        FTS5 scores every matching row; the rows are read best first and only those
        read are checked against ``pred``, until ``k`` records are found and the next
        row scores worse than the k-th (rows past that are not checked). Unscoped,
        most rows pass, so the first ``_head_rows(k)`` rows are asked for with a
        ``LIMIT`` (SQLite keeps only them while sorting) and the first
        ``k + _HEAD_SPARE`` of them checked, the rest only when those do not hold
        ``k`` records. Scoped to a user holding few rows (``_user_filter``), FTS5
        scores only that user's rows (a ``rowid IN`` list read from the records and
        chunk indexes) and the same head is read; for other scopes every row is read
        in score order. When the head does not settle the ranking (too few records passed, or
        its last row ties the k-th record's score) the rows are streamed: every row,
        in score order, in growing batches. The score is ``bm25()`` in the ORDER BY,
        the same value FTS5's ``rank`` column holds, without its extra sorting pass
        (bench/README.md, ``keyword_scale.py``).

        ``held``: the terms of ``match`` (None: FTS5 only); unless the user filter
        applies, every matching row comes scored from the term scores held for the
        database state and, with ``version`` and no metadata filter, is checked
        against the rows held for the search's types and scope (``sqlite/heldstate.py``):
        in numpy (``_held_best``) when those cover the rows, else as streamed rows.
        The result is the same: the ``k`` best records by (best passing chunk's
        score, record pk) do not depend on the order of tied rows.
        """
        only, only_params = self._user_filter(conn, pred)
        scored = None
        if not only and held is not None:
            out = self._held_best(conn, held, k, pred, version)
            if out is not None:
                return out
            scored = self.term_scores.scores(conn, held)
        fts = f"{self.p}chunks_fts"
        join, where, params = st.candidates(self.d, self.p, pred)
        scope_sql = (
            f"SELECT c.pk, c.record_pk FROM {self.p}chunks c {join} "
            f"WHERE c.pk IN ({{}}) AND {where}"
        )
        ranked_sql = (
            f"SELECT rowid, bm25({fts}) AS score FROM {fts} WHERE {fts} MATCH ?{only} "
            "ORDER BY score"
        )

        def check(rows: Sequence[tuple[int, float]]) -> dict[int, int]:
            """Chunk pk -> record pk for the ``rows`` passing ``pred``."""
            pks = [pk for pk, _ in rows]
            if version is not None and pred.metadata is NOT_SET:
                return self.scopes.passing(conn, version, pred, pks)
            sql = scope_sql.format(", ".join("?" * len(rows)))
            return dict(conn.execute(sql, [*pks, *params]).fetchall())

        if scored is not None:
            best, _ = _fold(_array_batches(*scored, k + _HEAD_SPARE), check, k)
            return _best_first(best, k)
        if only or not _scoped(pred):
            limit = _head_rows(k)
            head = conn.execute(f"{ranked_sql} LIMIT ?", (match, *only_params, limit)).fetchall()
            # Most rows pass: check about k of them first, the rest only if needed.
            first = k + _HEAD_SPARE
            best, bound = _fold((head[:first], head[first:]), check, k)
            if len(head) < limit or (bound is not None and head[-1][1] > bound):
                return _best_first(best, k)
        cursor = conn.execute(ranked_sql, (match, *only_params))
        try:
            best, bound = _fold(_batches(cursor, min(4096, max(64, _head_rows(k)))), check, k)
        finally:
            cursor.close()
        return _best_first(best, k)

    def _held_best(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str],
        k: int,
        pred: Predicate,
        version: tuple[int, int] | None,
    ) -> list[tuple[Hashable, float]] | None:
        """``_ranked``'s result from held state alone, in numpy: every row matching
        ``terms`` (held term scores), checked against the rows held for ``pred``'s
        types and scope, each record at its best passing row's score, the ``k``
        best by (score, record pk). None without ``version`` (what is held may not
        be used), for a metadata filter, when the term scores are not held, or more
        than ``_HELD_UNKNOWN`` of the rows are not checked yet (``_ranked`` then
        checks them in batches, as far as it needs)."""
        if version is None or pred.metadata is not NOT_SET or not self.hold_arrays:
            return None
        key = ("best", tuple(terms), k)
        kept = self.scopes.rankings(version, pred) if self.hold_rankings else None
        if kept is not None and key in kept:
            return list(kept[key])
        summed = self.term_scores.sums(conn, terms)
        if summed is None:
            return None
        rows, scores = summed
        records = self.scopes.passing_array(conn, version, pred, rows, _HELD_UNKNOWN)
        if records is None:
            return None
        out = _held_top(records, scores, k)
        kept = self.scopes.rankings(version, pred) if self.hold_rankings else None
        if kept is not None:  # after the fill above: valid for the clock interval now held
            kept[key] = tuple(out)
        return out

    def _held_unranked(
        self,
        conn: sqlite3.Connection,
        terms: Sequence[str],
        limit: int,
        pred: Predicate,
        version: tuple[int, int],
    ) -> list[int] | None:
        """``_unranked``'s result from held state (the rows of ``terms`` held with
        their scores, checked against the rows held for ``pred``'s types and
        scope), or None where ``_held_best`` would give None, or ``pred`` has a
        metadata filter."""
        if pred.metadata is not NOT_SET or not self.hold_arrays:
            return None
        key = ("rest", tuple(terms), limit)
        kept = self.scopes.rankings(version, pred) if self.hold_rankings else None
        if kept is not None and key in kept:
            return list(kept[key])
        summed = self.term_scores.sums(conn, terms, remember=False)
        if summed is None:
            return None
        records = self.scopes.passing_array(conn, version, pred, summed[0], _HELD_UNKNOWN)
        if records is None:
            return None
        found: list[int] = np.unique(records[records >= 0])[:limit].tolist()
        kept = self.scopes.rankings(version, pred) if self.hold_rankings else None
        if kept is not None:
            kept[key] = tuple(found)
        return found

    def _user_filter(self, conn: sqlite3.Connection, pred: Predicate) -> tuple[str, list[Any]]:
        """``(sql, params)``: an ``AND +rowid IN (...)`` condition keeping the chunk
        rows of ``pred``'s user (the rows of the user's records, and of the user's
        profile when ``pred`` searches profiles), or ``("", [])``. The list holds
        every row passing ``pred`` and may hold more (other record types, expired
        rows, other scopes, the metadata filter): ``_ranked`` checks every row it
        reads.

        It is used when ``pred`` names a user holding at most ``_user_filter_max``
        chunk rows: the list is then read from two indexes, without reading a record
        or a chunk row (``records_user`` gives the user's record keys,
        ``chunks_record`` each record's row keys), and FTS5 computes BM25 only for
        the user's matching rows, which costs less than reading and checking the
        ranking of every user's rows (the ``+`` keeps SQLite from turning the list
        into one FTS5 lookup per row). Testing the record type or expiry in the list
        would read each record (about 2.5 us a row, five times the list). A larger
        user's list would cost more than it saves (85 ms for 100,000 rows; a user
        holding most rows is found near the top of the ranking anyway), so a larger
        user is read in score order. The count is capped and kept until the file
        changes (``_split_terms`` refreshes it).
        """
        if pred.user_id is NOT_SET:
            return "", []
        cap = _user_filter_max(self._term_rows.get("", 0))
        user = "r.user_id IS NULL" if pred.user_id is None else "r.user_id = ?"
        params: list[Any] = [] if pred.user_id is None else [pred.user_id]
        rows_of = f"SELECT c.pk FROM {self.p}records r JOIN {self.p}chunks c ON c.record_pk = r.pk"
        rows = self._user_rows.get((pred.user_id, cap))
        if rows is None:
            rows = self._user_rows[(pred.user_id, cap)] = conn.execute(
                f"SELECT count(*) FROM ({rows_of} WHERE {user} LIMIT ?)", [*params, cap + 1]
            ).fetchone()[0]
        if rows > cap:
            return "", []
        rows_sql = f"{rows_of} WHERE {user}"
        if pred.user_id is not None and "user_profile" in pred.record_types:
            # A user profile's rows hold its id as the user (docs/store.md#scopes).
            rows_sql += f" UNION ALL {rows_of} WHERE r.family = 'user_profile' AND r.id = ?"
            params.append(pred.user_id)
        return f" AND +rowid IN ({rows_sql})", params

    def _split_terms(
        self, conn: sqlite3.Connection, terms: Sequence[str], *, cacheable: bool = False
    ) -> tuple[list[str], list[str], bool]:
        """Split terms into ``(informative, common)``: a common term is found in more
        than half of the search rows (a speaker's name in every turn, say). FTS5's BM25
        gives it an IDF of about 0, so it changes no score, but ranking it would make
        nearly every row a candidate. Terms found nowhere are dropped. If no found term
        is informative, the common ones are ranked (their BM25 still orders by term
        frequency and row length).

        Costs: the row count comes from the index's own size table, each term's
        count stops at half the rows (in a warm search, ``cacheable``, it is the
        length of the term's scores, read for the ranking anyway; the third value
        returned says whether the search is warm), and the counts are kept until the file changes
        (``PRAGMA data_version`` for other connections, ``total_changes`` for this
        one), so no query scans the chunk table.
        """
        fts = f"{self.p}chunks_fts"
        version = (
            int(conn.execute("PRAGMA data_version").fetchone()[0]),
            conn.total_changes,
        )
        if self._version != version or len(self._term_rows) > 4096 or len(self._user_rows) > 4096:
            total = conn.execute(f"SELECT count(*) FROM {fts}_docsize").fetchone()[0]
            self._version = version
            self._term_rows = {"": int(total)}  # "" is never a term
            self._user_rows = {}
        warm = cacheable and self.hold_terms and self.term_scores.warm(version)
        counts = self._term_rows
        half = counts[""] // 2
        informative: list[str] = []
        common: list[str] = []
        for t in terms:
            df = counts.get(t)
            if df is None:
                # A warm search reads the term's scores anyway: its rows count it.
                rows = self.term_scores.term(conn, t) if warm else None
                df = counts[t] = (
                    min(len(rows[0]), half + 1)
                    if rows is not None
                    else conn.execute(
                        f"SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ? LIMIT ?)",
                        (_or([t]), half + 1),
                    ).fetchone()[0]
                )
            if df:
                (common if df > half else informative).append(t)
        return (informative, common, warm) if informative else (common, [], warm)


def _index_terms(terms: Sequence[str], schema_version: int) -> list[str]:
    """The index tokens of ``terms`` a file of ``schema_version`` is searched with
    (``text.keyword_terms``; a read-only version-1 file indexed plain words and a
    read-only version 2-5 file unfolded text, ``schema.FOLDED_VERSION``), plain word
    tokens only, each stem once (``stems.distinct_stems``: FTS5 would score a stem
    once per word holding it, PostgreSQL scores it once); kept for up to ``TERMS_MEMO_SIZE`` lists of at most
    ``TERMS_MEMO_LIST`` terms (a pure function of the terms)."""
    if len(terms) <= TERMS_MEMO_LIST:
        return list(_kept_index_terms(tuple(terms), schema_version))
    return _index_terms_of(terms, schema_version)


TERMS_MEMO_SIZE = 8192
"""How many term lists ``_index_terms`` keeps."""

TERMS_MEMO_LIST = 64
"""Longer term lists are converted each time (not kept)."""


@lru_cache(maxsize=TERMS_MEMO_SIZE)
def _kept_index_terms(terms: tuple[str, ...], schema_version: int) -> tuple[str, ...]:
    return tuple(_index_terms_of(terms, schema_version))


def _index_terms_of(terms: Sequence[str], schema_version: int) -> list[str]:
    if schema_version >= 2:
        terms = keyword_terms(terms, folded=schema_version >= FOLDED_VERSION)
    else:  # a word holding a mark, cut as the query was cut for these files
        terms = [w for t in terms for w in WORD.findall(t)]
    return distinct_stems([t for t in terms if WORD.fullmatch(t)])


def _or(terms: Sequence[str]) -> str:
    """An FTS5 query matching any of ``terms`` (plain word tokens, quoted)."""
    return " OR ".join(f'"{t}"' for t in terms)


def _unscoped(pred: Predicate) -> Predicate:
    """``pred`` without its thread, user and agent scope."""
    return dataclasses.replace(pred, thread_id=NOT_SET, user_id=NOT_SET, agent_id=NOT_SET)


def _scoped(pred: Predicate) -> bool:
    """Whether ``pred`` keeps one user's, agent's or thread's rows only."""
    return any(v is not NOT_SET for v in (pred.user_id, pred.agent_id, pred.thread_id))


_HEAD_SPARE = 8
"""Rows beyond ``k`` an unscoped search checks against the predicate first."""


def _head_rows(k: int) -> int:
    """How many best rows an unscoped keyword search asks for first: room for ``k``
    records of two matching chunks each (a message's own row and its context row)
    and a few filtered out (expired, another record type)."""
    return 2 * k + 2 * _HEAD_SPARE


USER_FILTER_ROWS = 4096
"""A user holding at most this many chunk rows, and at most a quarter of all rows, is
searched by keywords over that user's rows only (``Fts5Ranker._user_filter``)."""


def _user_filter_max(total: int) -> int:
    """The most chunk rows a user may hold for the user-only keyword read, of
    ``total`` rows in the index. A user's list costs ~0.4 us a row to read, so it
    pays where it leaves out most rows (a quarter or less kept), and it is kept
    short, which also bounds the count (at most ``USER_FILTER_ROWS + 1`` index
    entries, ~0.4 ms, once per change of the file)."""
    return min(USER_FILTER_ROWS, total // 4)


def _score(row: tuple[int, float]) -> float:
    return row[1]


def _batches(cursor: sqlite3.Cursor, first: int = 64) -> Iterator[list[tuple[int, float]]]:
    """A cursor's rows in growing batches (``first``, four times as many, ... 4096
    rows): a search for ``k`` records asks for room for them in its first batch
    (``_head_rows(k)``, 64 to 4096 rows), so a HYBRID search's 50 candidates
    usually need one check of the predicate, not two."""
    size = first
    while rows := cursor.fetchmany(size):
        yield rows
        size = min(4 * size, 4096)


def _fold(
    batches: Iterable[Sequence[tuple[int, float]]],
    check: Callable[[Sequence[tuple[int, float]]], dict[int, int]],
    k: int,
) -> tuple[dict[int, float], float | None]:
    """Check batches of ``(chunk pk, score)`` rows, in score order, with ``check``
    (chunk pk -> record pk of the rows passing the predicate) until the ranking is
    settled: ``(best, bound)`` as ``_collect`` keeps them."""
    best: dict[int, float] = {}
    bound: float | None = None
    for rows in batches:
        last = False
        if bound is not None:  # rows scoring worse than the k-th cannot count
            cut = bisect_right(rows, bound, key=_score)
            last = cut < len(rows)
            rows = rows[:cut]
        if not rows:
            break
        best, bound = _collect(rows, check(rows), k, best, bound)
        if last or (bound is not None and rows[-1][1] > bound):
            break
    return best, bound


def _array_batches(keys: Any, scores: Any, first: int) -> Iterator[list[tuple[int, float]]]:
    """``(row key, score)`` rows of two arrays in score order, in growing batches
    (``first``, four times as many, ... 4096 rows), as ``_batches`` reads a cursor."""
    size, at = first, 0
    while at < len(keys):
        yield list(zip(keys[at : at + size].tolist(), scores[at : at + size].tolist(), strict=True))
        at += size
        size = min(4 * size, 4096)


def _collect(
    rows: Sequence[tuple[int, float]],
    in_scope: dict[int, int],
    k: int,
    best: dict[int, float],
    bound: float | None,
) -> tuple[dict[int, float], float | None]:
    """Fold a batch of ``(chunk pk, score)`` rows, in score order (lower is better),
    into ``best`` (record pk -> its best chunk's score) and ``bound`` (the k-th
    record's score, once ``k`` are found; rows scoring worse than it end the read).
    ``in_scope`` maps the batch's chunk pks passing the predicate to their record
    pks. Returns the updated ``(best, bound)``."""
    for pk, score in rows:
        if bound is not None and score > bound:
            break
        rpk = in_scope.get(pk)
        if rpk is not None and rpk not in best:
            best[rpk] = score
            if len(best) == k:
                bound = score
    return best, bound


_HELD_UNKNOWN = 4096
"""Rows not checked yet that ``Fts5Ranker._held_best`` reads at once, at most."""


def _held_top(records: Any, scores: Any, k: int) -> list[tuple[Hashable, float]]:
    """The ``k`` best ``(record pk, BM25 >= 0)`` pairs of rows with record keys
    ``records`` (int64 array, -1: the row does not pass) and FTS5 scores ``scores``
    (float64 array, lower is better): each record at its best row's score, ties by
    record pk, as ``_best_first`` ranks what ``_fold`` collects."""
    ok = records >= 0
    rpk, score = records[ok], scores[ok]
    if not len(rpk):
        return []
    order = np.lexsort((score, rpk))  # by record, its best row first
    rpk, score = rpk[order], score[order]
    first = np.empty(len(rpk), np.bool_)
    first[0] = True
    np.not_equal(rpk[1:], rpk[:-1], out=first[1:])
    rpk, score = rpk[first], score[first]
    top = np.lexsort((rpk, score))[:k]
    return [(r, -s) for r, s in zip(rpk[top].tolist(), score[top].tolist(), strict=True)]


def _best_first(best: dict[int, float], k: int) -> list[tuple[Hashable, float]]:
    """The ``k`` best ``(record pk, BM25 >= 0)`` pairs of ``best`` (record pk -> FTS5
    score, lower is better), ties by record pk."""
    ranked = sorted(best.items(), key=lambda kv: (kv[1], kv[0]))[:k]
    return [(int(rpk), float(-s)) for rpk, s in ranked]
