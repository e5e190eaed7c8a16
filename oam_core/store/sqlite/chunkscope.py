"""Which search rows a keyword search's record types and scope let through, held for
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

Valid for one database state, as the term scores (``sqlite/termscores.py``): any
committed write, from anywhere, empties it before the next search uses it; a search
inside an open write transaction neither reads nor fills it.

Memory: at most ``MAX_ROWS`` rows over all scopes (about 150 bytes each: 150 MB at
the bound, about 0.1 MB for a LoCoMo conversation); a batch that would pass the bound
empties the cache first.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Hashable, Sequence
from typing import Any

from oam_core.apis._sentinel import NOT_SET
from oam_core.store.backend import Predicate
from oam_core.store.sql.dialect import Dialect

__all__ = ["MAX_ROWS", "ChunkScopes"]

MAX_ROWS = 1_000_000
"""Rows a ``ChunkScopes`` holds over all its scopes."""

Version = tuple[int, int]
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

    def __init__(self, dialect: Dialect, prefix: str, max_rows: int = MAX_ROWS) -> None:
        self.d = dialect
        self.p = prefix
        self.max_rows = max_rows
        self.version: Version | None = None
        self.scopes: dict[Hashable, dict[int, Held]] = {}
        self.rows = 0

    def passing(
        self, conn: sqlite3.Connection, version: Version, pred: Predicate, rows: Sequence[int]
    ) -> dict[int, int]:
        """Row key -> record key for the ``rows`` (chunk keys) that pass ``pred``
        (which has no metadata filter), reading the rows not held yet. ``conn``: in
        the search's read transaction, at ``version``."""
        if version != self.version:
            self.clear()
            self.version = version
        scope = (tuple(sorted(pred.record_types)), pred.thread_id, pred.user_id, pred.agent_id)
        known = self.scopes.get(scope)
        unknown = list(rows) if known is None else [pk for pk in rows if pk not in known]
        if unknown:
            if self.rows + len(unknown) > self.max_rows:
                self.clear()
            known = self.scopes.setdefault(scope, {})
            read = self._read(conn, pred, unknown)
            for pk in unknown:
                known[pk] = read.get(pk)
            self.rows += len(unknown)
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

    def _read(
        self, conn: sqlite3.Connection, pred: Predicate, rows: Sequence[int]
    ) -> dict[int, Held]:
        """The held columns of those of ``rows`` whose record type and scope are
        ``pred``'s."""
        types = sorted(pred.record_types)
        type_sql, params = self.d.any_of("c.record_type", types)
        parts = [type_sql]
        for column, value in (
            ("thread_id", pred.thread_id),
            ("user_id", pred.user_id),
            ("agent_id", pred.agent_id),
        ):
            if value is NOT_SET:
                continue
            if value is None:
                parts.append(f"c.{column} IS NULL")
            else:
                parts.append(f"c.{column} = ?")
                params.append(value)
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
        self.rows = 0
