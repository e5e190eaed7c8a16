"""What the searches of one database state share, held between searches
(docs/sqlite.md#term-scores-held-between-searches): record rows (``RowCache``),
each query term's FTS5 scores (``TermScores``) and which search rows a record type
and scope let through (``ChunkScopes``). Each is valid for one database state and
emptied by any committed write, from any connection or process.

``RowCache``: Record rows held for one database state, so that a search's candidate pool is
read without a query (docs/sqlite.md#records-held-between-searches).

A HYBRID search loads the records of its fused head (``fusion.pool``, 50 by default)
to read their signal lists (speaker, dates, times, own words): at LoCoMo's scale that
load was about a tenth of a search's time, the SQL statement and the building of 50
``Record`` objects of which at most ``k`` are returned. A store's candidates recur
from one search to the next, so ``RowCache`` keeps, per record key, the row as
``SELECT`` returned it and, for the ranking only, the ``Record`` built from it:

* ``SQLiteBackend.load_for_ranking`` hands out the held ``Record`` objects, shared
  between searches: store/search.py only reads them (the signal lists, a reranker's
  passages) and never returns them to a caller;
* ``SQLiteBackend.load`` builds a new ``Record`` from the held row each time, so a
  caller changing a result's metadata dictionary changes nothing held.

Valid for one database state, as the filter results (``candidates.FilterCache``):
``PRAGMA data_version`` (bumped by every commit of another connection or process)
and the connection's ``total_changes`` (its own writes), read in the same read
transaction as the rows. Any committed write, from anywhere, empties the cache before
the next load uses it. A load inside an open transaction (a write that may still roll
back, which leaves ``total_changes`` as it is) neither reads nor fills it.

Memory: at most ``ROW_CACHE_MAX_ROWS`` rows and ``ROW_CACHE_MAX_CHARS`` characters of content and
metadata text (with their records, about three times that in bytes); a row that
would pass either bound empties the cache first.

``TermScores``: Each query term's FTS5 BM25 scores, held for one database state, so that a keyword
ranking repeated on an unchanged store is computed in numpy instead of by FTS5
(docs/sqlite.md#term-scores-held-between-searches).

FTS5's ``bm25()`` of a query ``"t0" OR "t1" OR ...`` sums, phrase by phrase in query
order, one contribution per phrase: ``score = 0.0; score += c_i`` for each phrase
``i``, then ``-1.0 * score``, where ``c_i`` depends only on the phrase (its IDF over
the whole table, its count in the row) and on the row (its length, the table's
average length); a phrase absent from the row adds exactly ``0.0``. The one-term
query ``"t_i"`` therefore returns ``-c_i`` for every row holding ``t_i``, computed
by FTS5 itself (tokenizer, stemmer, IDF and lengths included), and summing the
``c_i`` of a row in the same order gives bit for bit the value the many-term query
returns: IEEE additions in the same order give the same result. ``TermScores`` keeps
each term's ``(row keys, -bm25)`` arrays once read, and ``scores`` adds them up.

Valid for one database state, as the filter results (``candidates.FilterCache``):
``PRAGMA data_version`` and the connection's ``total_changes``, read in the search's
read transaction. Any committed write, from anywhere, empties it before the next
search uses it; a search inside an open write transaction neither reads nor fills
it. A term is read the second time a database state is searched (``warm``): a store
written between single searches keeps FTS5's one statement per search.

Memory: at most ``TERM_SCORES_MAX_ENTRIES`` (row key, score) pairs over all terms (16 bytes
each: 16 MB); a term that would pass the bound empties the cache first, and a term
holding more rows than the bound is not kept (its search runs on FTS5).

``ChunkScopes``: Which search rows a keyword search's record types and scope let through, held for
one database state (docs/sqlite.md#term-scores-held-between-searches).

The keyword ranking reads rows in score order and checks each against the search's
predicate (``keyword.Fts5Ranker._ranked``): a statement per batch of rows, about a
tenth of a HYBRID search at LoCoMo's scale. Successive searches of one store check
mostly the same rows with the same record types and scope, so ``ChunkScopes`` keeps,
per ``(record types, thread, user, agent)``, each checked row's record key and the
columns the clock is compared with (``expires_at``, ``valid_from``,
``valid_until``), or None for a row of another type or scope. Expiry and the
validity window are then compared in Python at each search's own time, as
``statements.where`` compares them in SQL: a row passes when ``expires_at`` is NULL
or later than ``now``, and, where the file has window columns and the search a
``valid_at``, ``valid_from`` is NULL or not later and ``valid_until`` NULL or later.
A search with a metadata filter checks its rows in SQL, as before.

Valid for one database state, as the term scores (``TermScores``): any
committed write, from anywhere, empties it before the next search uses it; a search
inside an open write transaction neither reads nor fills it.

Memory: at most ``CHUNK_SCOPES_MAX_ROWS`` rows over all scopes (about 150 bytes each: 150 MB at
the bound, about 0.1 MB for a LoCoMo conversation); a batch that would pass the bound
empties the cache first.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from oam_core.apis.records import Record
from oam_core.store.backend import Predicate
from oam_core.store.sql.dialect import Dialect
from oam_core.store.sql.statements import scope_sql

__all__ = [
    "CHUNK_SCOPES_MAX_ROWS",
    "ROW_CACHE_MAX_CHARS",
    "ROW_CACHE_MAX_ROWS",
    "TERM_SCORES_MAX_ENTRIES",
    "ChunkScopes",
    "RowCache",
    "TermScores",
]


ROW_CACHE_MAX_ROWS = 16_384
"""Record rows a ``RowCache`` holds."""
ROW_CACHE_MAX_CHARS = 8_000_000
"""Characters of content and metadata JSON a ``RowCache`` holds over its rows."""

Version = tuple[int, int]
_CONTENT, _METADATA = 4, 11  # positions in ``statements.RECORD_COLUMNS``


class RowCache:
    """Record rows and their shared ``Record`` objects, by record key, for one
    database state.

    Args:
        max_rows: Most rows held.
        max_chars: Most characters of content and metadata text held.
    """

    def __init__(
        self, max_rows: int = ROW_CACHE_MAX_ROWS, max_chars: int = ROW_CACHE_MAX_CHARS
    ) -> None:
        self.max_rows = max_rows
        self.max_chars = max_chars
        self.version: Version | None = None
        self.rows: dict[Hashable, Sequence[Any]] = {}
        self.records: dict[Hashable, Record] = {}
        self.chars = 0

    def at(self, version: Version) -> None:
        """Serve ``version`` from now on: a new version empties the cache."""
        if version != self.version:
            self.clear()
            self.version = version

    def put(self, key: Hashable, row: Sequence[Any]) -> None:
        """Hold ``row`` (a row of ``statements.RECORD_COLUMNS``) for ``key``, emptying
        the cache first when it would pass a bound."""
        size = _chars(row)
        if len(self.rows) >= self.max_rows or self.chars + size > self.max_chars:
            self.clear()
        if size <= self.max_chars:
            self.rows[key] = row
            self.chars += size

    def clear(self) -> None:
        """Drop every row and record (the version stays)."""
        self.rows.clear()
        self.records.clear()
        self.chars = 0


def _chars(row: Sequence[Any]) -> int:
    """Characters of a row's content and metadata text."""
    content, metadata = row[_CONTENT], row[_METADATA]
    return (len(content) if isinstance(content, str) else 0) + (
        len(metadata) if isinstance(metadata, str) else 0
    )


# -- term scores ------------------------------------------------------------

TERM_SCORES_MAX_ENTRIES = 1_000_000
"""(row key, score) pairs a ``TermScores`` holds over all its terms."""

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class TermScores:
    """Per-term FTS5 BM25 contributions of one FTS5 table, for one database state.

    Args:
        fts: The FTS5 table's name.
        max_entries: Most (row key, score) pairs held.
    """

    def __init__(self, fts: str, max_entries: int = TERM_SCORES_MAX_ENTRIES) -> None:
        self.fts = fts
        self.max_entries = max_entries
        self.version: Version | None = None
        self.searches = 0
        self.terms: dict[str, tuple[IntArray, FloatArray]] = {}
        self.entries = 0
        self.last: tuple[tuple[str, ...], IntArray, FloatArray] | None = None

    def warm(self, version: Version) -> bool:
        """Count a search at ``version`` (a new version empties the cache); whether
        it is the second or a later one there."""
        if version != self.version:
            self.clear()
            self.version = version
        self.searches += 1
        return self.searches > 1

    def scores(
        self, conn: sqlite3.Connection, terms: Sequence[str]
    ) -> tuple[IntArray, FloatArray] | None:
        """``(row keys, scores)`` of the rows matching any of ``terms`` (plain word
        tokens, in the order the FTS5 query names them), best first (the lowest
        score), ties by row key; each score is the one ``bm25()`` of the query
        ``"t0" OR "t1" ...`` gives the row. None when a term holds more rows than
        the cache may keep. ``conn``: in the read transaction ``warm`` was given
        the version of."""
        summed = self.sums(conn, terms)
        if summed is None:
            return None
        keys, score = summed
        order = np.lexsort((keys, score))
        return keys[order], score[order]

    def sums(
        self, conn: sqlite3.Connection, terms: Sequence[str], *, remember: bool = True
    ) -> tuple[IntArray, FloatArray] | None:
        """As ``scores``, the same ``(row keys, scores)`` pairs, in row-key order
        (unsorted by score), for a caller that sorts what it keeps itself. When the
        last terms summed begin these (a HYBRID search's feedback list: the query's
        terms, then words of its best results), their sums are the start: each
        row's additions are then the same, in the same order. ``remember``: keep
        these sums as the last ones (False for the rows of common terms)."""
        got: list[tuple[IntArray, FloatArray]] = []
        for term in terms:
            found = self.terms.get(term)
            if found is None:
                found = self._read(conn, term)
                if found is None:
                    return None
            got.append(found)
        last = self.last
        n = 0 if last is None else len(last[0])
        if last is not None and 0 < n < len(terms) and tuple(terms[:n]) == last[0]:
            # 0.0 + a held total is that total: the rest adds on as before.
            got = [(last[1], last[2]), *got[n:]]
        keys, score = _summed(got)
        if remember:
            self.last = (tuple(terms), keys, -score)
        return keys, score

    def term(self, conn: sqlite3.Connection, term: str) -> tuple[IntArray, FloatArray] | None:
        """One term's ``(row keys, contributions)``, held or read now (None when it
        holds more rows than the cache may keep). ``conn``: as for ``scores``."""
        found = self.terms.get(term)
        return found if found is not None else self._read(conn, term)

    def _read(self, conn: sqlite3.Connection, term: str) -> tuple[IntArray, FloatArray] | None:
        """One term's rows and contributions (``-bm25()`` of the one-term query),
        held when the bound allows."""
        fts = self.fts
        rows = conn.execute(
            f"SELECT rowid, bm25({fts}) FROM {fts} WHERE {fts} MATCH ? ORDER BY rowid",
            ('"' + term.replace('"', '""') + '"',),
        ).fetchall()
        if len(rows) > self.max_entries:
            return None
        keys = np.fromiter((r for r, _ in rows), np.int64, len(rows))
        contribution = -np.fromiter((s for _, s in rows), np.float64, len(rows))
        if self.entries + len(rows) > self.max_entries:
            self.terms.clear()
            self.entries = 0
        self.terms[term] = (keys, contribution)
        self.entries += len(rows)
        return keys, contribution

    def clear(self) -> None:
        """Drop every term and the search count."""
        self.terms.clear()
        self.entries = 0
        self.last = None
        self.searches = 0


def _summed(got: Sequence[tuple[IntArray, FloatArray]]) -> tuple[IntArray, FloatArray]:
    """``(row keys, scores)`` in row-key order: each row's contributions of the
    terms ``got`` holds it in, added in their order from 0.0 (FTS5's sum), negated."""
    if len(got) == 1:
        keys, contribution = got[0]
        total = 0.0 + contribution  # FTS5's ``score = 0.0; score += c``
        return keys, -total
    size = sum(len(rows) for rows, _ in got)
    top = max((int(rows[-1]) for rows, _ in got if len(rows)), default=-1)
    if 0 <= top < max(_DENSE_KEYS, 4 * size) and min(int(r[0]) for r, _ in got if len(r)) >= 0:
        # Row keys are small: add into one slot per key (no sort of the keys).
        dense = np.zeros(top + 1, np.float64)
        held = np.zeros(top + 1, np.bool_)
        for rows, contribution in got:  # in the query's order: the same sums
            dense[rows] += contribution
            held[rows] = True
        keys = np.flatnonzero(held)
        return keys, -dense[keys]
    keys = np.unique(np.concatenate([rows for rows, _ in got]))
    total = np.zeros(len(keys), np.float64)
    for rows, contribution in got:  # in the query's order: the same sums
        total[np.searchsorted(keys, rows)] += contribution
    return keys, -total  # FTS5's ``-1.0 * score``


_DENSE_KEYS = 65_536
"""Below this largest row key (or four times the rows summed) ``_summed`` adds into
an array indexed by row key."""


# -- chunk scopes ----------------------------------------------------------

CHUNK_SCOPES_MAX_ROWS = 1_000_000
"""Rows a ``ChunkScopes`` holds over all its scopes."""

Held = tuple[int, Any, Any, Any] | None
"""A row's ``(record key, expires_at, valid_from, valid_until)``, or None when its
record type or scope is not the search's."""


class ChunkScopes:
    """Checked rows per record types and scope, for one database state.

    Args:
        dialect: The SQLite dialect (``windows``: whether the file has window columns).
        prefix: The object-name prefix.
        max_rows: Most rows held.
    """

    def __init__(
        self, dialect: Dialect, prefix: str, max_rows: int = CHUNK_SCOPES_MAX_ROWS
    ) -> None:
        self.d = dialect
        self.p = prefix
        self.max_rows = max_rows
        self.version: Version | None = None
        self.scopes: dict[Hashable, dict[int, Held]] = {}
        self.views: dict[Hashable, View] = {}
        self.clocked: dict[Hashable, _Clocked | None] = {}
        self.rows = 0

    def passing(
        self, conn: sqlite3.Connection, version: Version, pred: Predicate, rows: Sequence[int]
    ) -> dict[int, int]:
        """Row key -> record key for the ``rows`` (chunk keys) that pass ``pred``
        (which has no metadata filter), reading the rows not held yet. ``conn``: in
        the search's read transaction, at ``version``."""
        scope = self._scope(version, pred)
        known = self.scopes.get(scope)
        unknown = list(rows) if known is None else [pk for pk in rows if pk not in known]
        if unknown:
            known = self._fill(conn, pred, scope, rows, unknown)
        assert known is not None
        now = pred.now.timestamp()
        at = pred.valid_at.timestamp() if pred.valid_at is not None and self.d.windows else None
        out: dict[int, int] = {}
        for pk in rows:
            held = known[pk]
            if held is None:
                continue
            rpk, expires, start, end = held
            if expires is not None and not expires > now:
                continue
            if at is not None and (
                (start is not None and not start <= at) or (end is not None and not end > at)
            ):
                continue
            out[pk] = rpk
        return out

    def passing_array(
        self,
        conn: sqlite3.Connection,
        version: Version,
        pred: Predicate,
        rows: IntArray,
        max_unknown: int,
    ) -> IntArray | None:
        """As ``passing``, for an array of row keys (chunk keys): each row's record
        key, or -1 where the row does not pass ``pred`` (which has no metadata
        filter); None, reading nothing, when more than ``max_unknown`` of ``rows``
        are not held yet. The clock is compared as ``passing`` compares it (NULL
        expiry and window ends pass)."""
        scope = self._scope(version, pred)
        now, valid = _clock(pred, self.d.windows)
        if len(rows):
            found = self._clocked(scope, now, valid)
            if found is not None and int(rows.min()) >= 0 and int(rows.max()) < len(found):
                got = found[rows]
                if not len(got) or int(got.min()) >= -1:  # every row held
                    return got
        view = self._view(scope)
        known = None if view is None else _held_at(view[0], rows)
        if known is None or not known[1].all():
            unknown = rows if known is None else rows[~known[1]]
            if len(unknown) > max_unknown:
                return None
            self._fill(conn, pred, scope, rows.tolist(), unknown.tolist())
            view = self._view(scope)
            assert view is not None
            known = _held_at(view[0], rows)
        assert view is not None
        at, _ = known
        _, rpk, inside, expires, start, end = view
        ok = inside[at] & (expires[at] > now)
        if valid is not None:
            ok &= (start[at] <= valid) & (end[at] > valid)
        return np.where(ok, rpk[at], -1)

    def rankings(self, version: Version, pred: Predicate) -> dict[Hashable, Any] | None:
        """Rankings computed from what is held for ``pred``'s types and scope at its
        clock (``keyword.Fts5Ranker._held_best``), by the caller's key: kept with the
        passing rows of the clock interval (``_Clocked``), so emptied with them by
        any committed write, a fill, or a clock outside the interval; at most
        ``RANKINGS_MAX`` (then emptied). None when no array of passing rows is held
        for that clock (nothing may be kept)."""
        scope = self._scope(version, pred)
        held = self.clocked.get(scope)
        if held is None or not held.covers(*_clock(pred, self.d.windows)):
            return None
        if len(held.rankings) >= RANKINGS_MAX:
            held.rankings.clear()
        return held.rankings

    def _clocked(self, scope: Hashable, now: float, valid: float | None) -> IntArray | None:
        """The rows held for ``scope`` that pass at clock ``now`` and validity time
        ``valid`` (None: no window compared), as an array by row key: the record
        key, -1 for a row that does not pass, -2 for a row not held; kept while
        the clock stays in the interval where no held row expires or enters or
        leaves its window (``_Clocked``), rebuilt outside it. None when nothing is
        held or the row keys are too large for an array by key."""
        if scope in self.clocked:
            held = self.clocked[scope]
            if held is None:  # row keys too large: the same at any clock
                return None
            if held.covers(now, valid):
                return held.rows
        view = self._view(scope)
        if view is None:
            return None
        held = self.clocked[scope] = _Clocked.of(view, now, valid)
        return None if held is None else held.rows

    def _scope(self, version: Version, pred: Predicate) -> Hashable:
        """The held rows' key for ``pred``'s types and scope, serving ``version``
        from now on (a new version empties what is held)."""
        if version != self.version:
            self.clear()
            self.version = version
        return (tuple(sorted(pred.record_types)), pred.thread_id, pred.user_id, pred.agent_id)

    def _fill(
        self,
        conn: sqlite3.Connection,
        pred: Predicate,
        scope: Hashable,
        rows: Sequence[int],
        unknown: Sequence[int],
    ) -> dict[int, Held]:
        """Read and hold the ``unknown`` ones of ``rows`` (those not held yet) for
        ``scope``, or every one of ``rows`` when the bound empties what is held
        first; the rows held for ``scope``."""
        if self.rows + len(unknown) > self.max_rows:
            self.clear()
            unknown = list(dict.fromkeys(rows))
        known = self.scopes.setdefault(scope, {})
        self.views.pop(scope, None)
        self.clocked.pop(scope, None)
        for at in range(0, len(unknown), _READ_ROWS):
            part = unknown[at : at + _READ_ROWS]
            read = self._read(conn, pred, part)
            for pk in part:
                known[pk] = read.get(pk)
        self.rows += len(unknown)
        return known

    def _view(self, scope: Hashable) -> View | None:
        """The rows held for ``scope`` as arrays (built once per change), or None."""
        view = self.views.get(scope)
        if view is None:
            known = self.scopes.get(scope)
            if known is None:
                return None
            view = self.views[scope] = _as_arrays(known)
        return view

    def _read(
        self, conn: sqlite3.Connection, pred: Predicate, rows: Sequence[int]
    ) -> dict[int, Held]:
        """The held columns of those of ``rows`` whose record type and scope are
        ``pred``'s."""
        types = sorted(pred.record_types)
        type_sql, params = self.d.any_of("c.record_type", types)
        parts = [type_sql, *scope_sql(self.d, pred, "c", params)]
        window = "c.valid_from, c.valid_until" if self.d.windows else "NULL, NULL"
        sql = (
            f"SELECT c.pk, c.record_pk, c.expires_at, {window} FROM {self.p}chunks c "
            f"WHERE c.pk IN ({', '.join('?' * len(rows))}) AND {' AND '.join(parts)}"
        )
        return {
            int(pk): (int(rpk), exp, start, end)
            for pk, rpk, exp, start, end in conn.execute(sql, [*rows, *params])
        }

    def clear(self) -> None:
        """Drop every held row."""
        self.scopes.clear()
        self.views.clear()
        self.clocked.clear()
        self.rows = 0


_READ_ROWS = 4096
"""Row keys one statement of ``ChunkScopes._read`` names at most."""

BoolArray = npt.NDArray[np.bool_]
View = tuple[IntArray, IntArray, BoolArray, FloatArray, FloatArray, FloatArray]
"""One scope's held rows as arrays, by row key: ``(row keys, record keys, whether
the row is of the scope, expires_at, valid_from, valid_until)``, NULL clock columns
as the infinity that passes (``+inf``, ``-inf``, ``+inf``)."""


def _as_arrays(known: dict[int, Held]) -> View:
    """``known`` (row key -> held columns) as a ``View``."""
    pks = np.fromiter(known, np.int64, len(known))
    order = np.argsort(pks)
    held = [known[pk] for pk in pks[order].tolist()]

    def column(i: int, null: float) -> FloatArray:
        return np.fromiter(
            (null if h is None or h[i] is None else h[i] for h in held), np.float64, len(held)
        )

    rpk = np.fromiter((-1 if h is None else h[0] for h in held), np.int64, len(held))
    inside = np.fromiter((h is not None for h in held), np.bool_, len(held))
    return pks[order], rpk, inside, column(1, np.inf), column(2, -np.inf), column(3, np.inf)


def _held_at(pks: IntArray, rows: IntArray) -> tuple[IntArray, BoolArray]:
    """Positions of ``rows`` in the sorted ``pks`` and whether each is there."""
    at = np.minimum(np.searchsorted(pks, rows), max(len(pks) - 1, 0))
    found = pks[at] == rows if len(pks) else np.zeros(len(rows), np.bool_)
    return at, found


class _Clocked:
    """One scope's held rows that pass, by row key, for an interval of the clock:
    ``rows[pk]`` is the record key of row ``pk`` when it passes, -1 when it does
    not, -2 when it is not held. A row passes when ``expires_at > now`` (and,
    with a validity time, ``valid_from <= valid < valid_until``), NULL ends being
    infinities (``View``); the outcome of each comparison stays the same while
    ``now`` is at least the largest expiry at or before it and below the
    smallest after it, and the same for ``valid`` and the window ends, so the
    array serves every search whose clock falls in those intervals
    (``ChunkScopes.passing_array``)."""

    def __init__(self, rows: IntArray, now: Bounds, valid: Bounds | None) -> None:
        self.rows = rows
        self.now = now
        self.valid = valid
        self.rankings: dict[Hashable, Any] = {}  # ``ChunkScopes.rankings``

    def covers(self, now: float, valid: float | None) -> bool:
        """Whether the array holds for clock ``now`` and validity time ``valid``."""
        if not self.now[0] <= now < self.now[1]:
            return False
        if valid is None or self.valid is None:
            return valid is None and self.valid is None
        return self.valid[0] <= valid < self.valid[1]

    @staticmethod
    def of(view: View, now: float, valid: float | None) -> _Clocked | None:
        """The passing rows of ``view`` at ``now`` and ``valid``, or None when its
        largest row key is at least ``_DENSE_KEYS`` and four times its rows."""
        pks, rpk, inside, expires, start, end = view
        if not len(pks) or pks[0] < 0 or int(pks[-1]) >= max(_DENSE_KEYS, 4 * len(pks)):
            return None
        ok = inside & (expires > now)
        when = _around(expires[inside], now)
        span = None
        if valid is not None:
            ok &= (start <= valid) & (end > valid)
            low, high = _around(start[inside], valid)
            low2, high2 = _around(end[inside], valid)
            span = (max(low, low2), min(high, high2))
        rows = np.full(int(pks[-1]) + 1, -2, np.int64)
        rows[pks] = np.where(ok, rpk, -1)
        return _Clocked(rows, when, span)


RANKINGS_MAX = 4096
"""Rankings ``ChunkScopes.rankings`` keeps per scope and clock interval."""


def _clock(pred: Predicate, windows: bool) -> tuple[float, float | None]:
    """``pred``'s clock and validity time (None: no window compared) as POSIX
    seconds."""
    valid = pred.valid_at.timestamp() if pred.valid_at is not None and windows else None
    return pred.now.timestamp(), valid


Bounds = tuple[float, float]
"""``[low, high)``: an interval of the clock, as POSIX seconds."""


def _around(edges: FloatArray, at: float) -> Bounds:
    """The largest of ``edges`` at or below ``at`` (``-inf`` for none) and the
    smallest above it (``+inf`` for none): where a comparison ``edge <= t`` or
    ``edge > t`` has the same outcome for every edge as at ``at``."""
    below = edges[edges <= at]
    above = edges[edges > at]
    return (
        float(below.max()) if len(below) else -np.inf,
        float(above.min()) if len(above) else np.inf,
    )
