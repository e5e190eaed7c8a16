"""Validity windows in the Oracle store (docs/oracle.md#validity-windows).

Schema version 4 gives the three record tables and ``RECORD_CHUNKS`` the columns
``valid_from`` and ``valid_until``: ``TIMESTAMP(6)`` in naive UTC, like
``expires_at``; NULL = open. Search rows copy their record's window (like scope and
expiry), so every ranking statement filters on ``c`` without a join. Messages and
profiles keep both NULL; threads have no columns.

A row is valid at ``t`` when ``(valid_from IS NULL OR valid_from <= :valid_at) AND
(valid_until IS NULL OR valid_until > :valid_at)``. ``Names.windows`` is False for a
version-3 schema opened without DDL (``REQUIRE_EXISTING``, ``CREATE_IF_EMPTY``):
then no statement names the columns, reads select NULL in their place and ignore
``Predicate.valid_at`` (no row has a window), and a write that would store a window
is refused (``SchemaError``) before any statement runs.

Pure builders and conversions (no I/O).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Protocol

from oam_core.apis.metadatajson import RESERVED_KEY
from oam_core.apis.timestamps import normalize_timestamp
from oam_core.errors import SchemaError
from oam_core.store.oracle.names import Names
from oam_core.store.oracle.stmt import BindType, Stmt

WINDOW_VERSION = 4
"""The first schema version whose record tables and search rows have the window columns."""
COLUMNS = ("valid_from", "valid_until")
TYPES: dict[str, BindType] = {"valid_from": "TIMESTAMP", "valid_until": "TIMESTAMP"}
"""Declared bind types of the window columns (a plain datetime bind would be a DATE)."""
_ADD = "valid_from TIMESTAMP(6),\n  valid_until TIMESTAMP(6)"
"""The column clauses of ``CREATE TABLE``."""
_ALTER_DUPLICATE = 1430
"""ORA-01430 column being added already exists in table."""

# JSON_VALUE of the reserved metadata; the path is a literal (no binds in a path).
_STATUS = f"""JSON_VALUE(r.metadata, '$."{RESERVED_KEY}"."status"' RETURNING VARCHAR2(64) NULL ON ERROR)"""
_SUCCESSOR = (
    f"""JSON_VALUE(r.metadata, '$."{RESERVED_KEY}"."superseded_by"' """
    "RETURNING VARCHAR2(4000) NULL ON ERROR)"
)


def column_clauses() -> str:
    """``valid_from``/``valid_until`` column clauses for ``CREATE TABLE`` (no commas around)."""
    return _ADD


def select_columns(n: Names, alias: str = "r") -> str:
    """The window columns of a record query: the columns, or ``NULL`` in their place
    on a schema without them (``Names.windows``)."""
    if not n.windows:
        return "NULL AS valid_from, NULL AS valid_until"
    return f"{alias}.valid_from, {alias}.valid_until"


def valid_at_condition(alias: str) -> str:
    """The condition "row ``alias`` is valid at ``:valid_at``" (docs/versions.md)."""
    return (
        f"({alias}.valid_from IS NULL OR {alias}.valid_from <= :valid_at) "
        f"AND ({alias}.valid_until IS NULL OR {alias}.valid_until > :valid_at)"
    )


def add_filter(
    n: Names,
    valid_at: datetime | None,
    alias: str,
    parts: list[str],
    binds: dict[str, Any],
    types: dict[str, BindType] | None,
) -> None:
    """Append the validity condition on ``alias`` to ``parts`` (its bind ``valid_at``,
    naive UTC ``TIMESTAMP``, to ``binds``/``types``) when ``valid_at`` is given and the
    schema has windows; nothing otherwise (no row of an older schema has a window)."""
    if valid_at is None or not n.windows:
        return
    parts.append(valid_at_condition(alias))
    binds["valid_at"] = naive(valid_at)
    if types is not None:
        types["valid_at"] = "TIMESTAMP"


def naive(value: datetime | None) -> datetime | None:
    """A window end as bound: aware -> naive UTC; a naive value is UTC already."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value
    return value.astimezone(timezone.utc).replace(tzinfo=None)


def aware(value: datetime | None) -> datetime | None:
    """A fetched naive UTC ``TIMESTAMP`` as an aware datetime (None stays None)."""
    return None if value is None else value.replace(tzinfo=timezone.utc)


def iso(value: datetime | None) -> str | None:
    """A fetched window end as ``Record.valid_from``/``valid_until``: ISO-8601 UTC by
    ``normalize_timestamp`` rules (seconds; microseconds only when non-zero)."""
    return None if value is None else normalize_timestamp(aware(value))


def binds(n: Names, valid_from: datetime | None, valid_until: datetime | None) -> dict[str, Any]:
    """The window binds of a record or search row insert: both columns on a schema
    with windows, none on an older one.

    Raises:
        SchemaError: for a window on a schema without the columns (open the store with
            ``CREATE_IF_NECESSARY`` to upgrade it).
    """
    if not n.windows:
        refuse_without_columns(n, valid_from, valid_until)
        return {}
    return {"valid_from": naive(valid_from), "valid_until": naive(valid_until)}


def refuse_without_columns(n: Names, *values: object) -> None:
    """Raise ``SchemaError`` when a schema without window columns is asked to store a
    window (any of ``values`` not None)."""
    if not n.windows and any(v is not None for v in values):
        raise SchemaError(
            f"the Oracle store (prefix {n.prefix!r}) has schema version {WINDOW_VERSION - 1}, "
            "which predates validity windows (valid_from/valid_until); open it with "
            "schema_policy=SchemaPolicy.CREATE_IF_NECESSARY to upgrade it in place"
        )


# -- writes --------------------------------------------------------------------------


def record_window(n: Names, family: str, pk: int) -> Stmt:
    """A record's ``(valid_from, valid_until)`` (copied to the search rows it gets)."""
    return Stmt(
        f"SELECT valid_from, valid_until FROM {n.record_table(family)} WHERE pk = :pk", {"pk": pk}
    )


def update_chunk_windows(n: Names, family: str, pk: int, values: dict[str, Any]) -> Stmt:
    """Copy a record's new window ends (``values``: some of ``COLUMNS``, naive UTC)
    to its search rows."""
    cols = [c for c in COLUMNS if c in values]
    sets = ", ".join(f"{c} = :{c}" for c in cols)
    return Stmt(
        f"UPDATE {n.chunks} SET {sets} WHERE record_family = :family AND record_pk = :pk",
        {**{c: values[c] for c in cols}, "family": family, "pk": pk},
        {c: TYPES[c] for c in cols},
    )


# -- schema upgrade (version 3 -> 4) -------------------------------------------------------


def add_columns(n: Names) -> list[Stmt]:
    """``ALTER TABLE ... ADD`` of both columns to the record tables, then the search rows."""
    return [
        Stmt(f"ALTER TABLE {table} ADD (valid_from TIMESTAMP(6), valid_until TIMESTAMP(6))")
        for table in (n.profiles, n.messages, n.memories, n.chunks)
    ]


def backfill_superseded(n: Names) -> Stmt:
    """End the window of each memory already marked superseded (reserved
    ``status: "invalid"``) at its successor's ``created_at`` (the memory named by
    ``superseded_by``); one whose successor is missing stays open."""
    return Stmt(
        f"UPDATE {n.memories} r SET r.valid_until = (\n"
        f"  SELECT s.created_at FROM {n.memories} s WHERE s.id = {_SUCCESSOR})\n"
        f"WHERE r.valid_until IS NULL AND {_STATUS} = 'invalid'"
    )


def copy_to_chunks(n: Names) -> Stmt:
    """Copy the ``valid_until`` just set on memories to their search rows."""
    return Stmt(
        f"UPDATE {n.chunks} c SET c.valid_until = (\n"
        f"  SELECT r.valid_until FROM {n.memories} r WHERE r.pk = c.record_pk)\n"
        "WHERE c.record_family = 'memory' AND c.record_pk IN (\n"
        f"  SELECT r.pk FROM {n.memories} r WHERE r.valid_until IS NOT NULL)"
    )


def upgrade(n: Names) -> list[Stmt]:
    """``UPGRADES[3]``: the columns (DDL, each committing), then the backfill and its
    copy to the search rows (DML; the store commits after its upgrade steps)."""
    return [*add_columns(n), backfill_superseded(n), copy_to_chunks(n)]


def is_duplicate_column(stmt: Stmt, code: int | None) -> bool:
    """Whether ``code`` (an ORA- number) says an ``ADD`` of ``add_columns`` found its
    columns there already: an upgrade interrupted after that DDL is run again."""
    return (
        code == _ALTER_DUPLICATE and stmt.sql.startswith("ALTER TABLE") and "valid_from" in stmt.sql
    )


def has_windows(version: str | None) -> bool:
    """Whether a stored ``schema_version`` has the window columns."""
    return version is not None and version.isdigit() and int(version) >= WINDOW_VERSION


Window = tuple[datetime | None, datetime | None]
"""``(valid_from, valid_until)``: aware (as planned) or naive UTC (as fetched); None = open."""


class _HasWindow(Protocol):
    @property
    def valid_from(self) -> datetime | None: ...

    @property
    def valid_until(self) -> datetime | None: ...


def of(row: _HasWindow) -> Window:
    """The window a ``RowPlan``, ``StoredRow`` or ``DumpRow`` carries (None = open)."""
    return row.valid_from, row.valid_until
