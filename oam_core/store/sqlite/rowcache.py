"""Record rows held for one database state, so that a search's candidate pool is
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

Memory: at most ``MAX_ROWS`` rows and ``MAX_CHARS`` characters of content and
metadata text (with their records, about three times that in bytes); a row that
would pass either bound empties the cache first.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from oam_core.apis.records import Record

__all__ = ["MAX_CHARS", "MAX_ROWS", "RowCache"]

MAX_ROWS = 16_384
"""Record rows a ``RowCache`` holds."""
MAX_CHARS = 8_000_000
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

    def __init__(self, max_rows: int = MAX_ROWS, max_chars: int = MAX_CHARS) -> None:
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
