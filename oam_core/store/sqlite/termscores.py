"""Each query term's FTS5 BM25 scores, held for one database state, so that a keyword
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

Memory: at most ``MAX_ENTRIES`` (row key, score) pairs over all terms (16 bytes
each: 16 MB); a term that would pass the bound empties the cache first, and a term
holding more rows than the bound is not kept (its search runs on FTS5).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

__all__ = ["MAX_ENTRIES", "TermScores"]

MAX_ENTRIES = 1_000_000
"""(row key, score) pairs a ``TermScores`` holds over all its terms."""

Version = tuple[int, int]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


class TermScores:
    """Per-term FTS5 BM25 contributions of one FTS5 table, for one database state.

    Args:
        fts: The FTS5 table's name.
        max_entries: Most (row key, score) pairs held.
    """

    def __init__(self, fts: str, max_entries: int = MAX_ENTRIES) -> None:
        self.fts = fts
        self.max_entries = max_entries
        self.version: Version | None = None
        self.searches = 0
        self.terms: dict[str, tuple[IntArray, FloatArray]] = {}
        self.entries = 0

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
        got: list[tuple[IntArray, FloatArray]] = []
        for term in terms:
            found = self.terms.get(term)
            if found is None:
                found = self._read(conn, term)
                if found is None:
                    return None
            got.append(found)
        keys = np.unique(np.concatenate([rows for rows, _ in got]))
        total = np.zeros(len(keys), np.float64)
        for rows, contribution in got:  # in the query's order: the same sums
            total[np.searchsorted(keys, rows)] += contribution
        score = -total  # FTS5's ``-1.0 * score``
        order = np.lexsort((keys, score))
        return keys[order], score[order]

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
        self.searches = 0
