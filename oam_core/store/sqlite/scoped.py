"""A search's record types and scope as a condition on the records table of the
embedded store (docs/sqlite.md#schema-version-5).

A chunk row copies its record's type and scope, except a profile's: the rows of a
user profile hold its id as the user and no thread or agent, those of an agent
profile its id as the agent, while the profile record itself has no scope
(``writeplan._plan_profile_row``, docs/store.md#scopes). ``record_scope`` writes a
predicate's types and scope over records ``r`` so that it holds for a record exactly
when it holds for the record's chunk rows. A scoped search (schema version 5 keeps no
scope index on the chunks) then starts from the records' indexes (``records_user``,
``records_agent``, ``records_thread``, the unique ``(family, id)``) and reaches the
chunk rows through ``chunks_record``.
"""

from __future__ import annotations

from typing import Any

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import family_of
from oam_core.store.backend import Predicate
from oam_core.store.sqlite.dialect import SQLITE

PROFILE_COLUMN = {"user_profile": "user_id", "agent_profile": "agent_id"}
"""The scope column a profile's chunk rows hold its id in (the others are NULL)."""
NO_RECORD = "0"
"""The condition ``record_scope`` gives when no record can be in the scope."""


def scope_terms(pred: Predicate) -> list[tuple[str, str | None]]:
    """``(column, value)`` of each scope ``pred`` sets (value None: the column is NULL)."""
    return [
        (column, value)
        for column, value in (
            ("thread_id", pred.thread_id),
            ("user_id", pred.user_id),
            ("agent_id", pred.agent_id),
        )
        if value is not NOT_SET
    ]


def record_scope(pred: Predicate) -> tuple[str, list[Any]]:
    """``(sql, params)``: true for the records ``r`` of ``pred``'s record types whose
    chunk rows are in ``pred``'s thread, user and agent scope (no expiry, no
    metadata). Without a scope, the types alone; else one term per kind of record:
    the types other than profiles by their scope columns, each profile type by its
    id (``r.family``, ``r.id``: the unique index) when the scope names its user or
    agent; a profile is left out when the scope asks for a thread or for a profile
    without its id. ``NO_RECORD`` when no record can pass."""
    scope = scope_terms(pred)
    types = sorted(pred.record_types)
    if not scope:
        return SQLITE.any_of("r.record_type", types)
    terms: list[str] = []
    params: list[Any] = []
    plain = [t for t in types if t not in PROFILE_COLUMN]
    if plain:
        # A scope index narrows more than the type index (one type: all its records):
        # the unary + keeps SQLite off records_type when a scope index applies.
        indexed = any(_indexed(column, value) for column, value in scope)
        type_sql, type_params = SQLITE.any_of(
            "+r.record_type" if indexed else "r.record_type", plain
        )
        parts = [type_sql]
        params += type_params
        for column, value in scope:
            if value is None:
                parts.append(f"r.{column} IS NULL")
            else:
                parts.append(f"r.{column} = ?")
                params.append(value)
        terms.append(" AND ".join(parts))
    for record_type in types:
        own = PROFILE_COLUMN.get(record_type)
        if own is None:
            continue
        parts = [f"r.family = '{family_of(record_type)}'"]
        values: list[Any] = []
        for column, value in scope:
            if column == own and value is not None:
                parts.append("r.id = ?")
                values.append(value)
            elif value is not None or column == own:
                break  # the profile's rows hold NULL there, or its (never NULL) id
        else:
            terms.append(" AND ".join(parts))
            params += values
    if not terms:
        return NO_RECORD, []
    if len(terms) == 1:
        return terms[0], params
    return "(" + " OR ".join(f"({t})" for t in terms) + ")", params


def _indexed(column: str, value: str | None) -> bool:
    """Whether a records index finds ``column = value`` (``records_user`` holds every
    record, ``records_agent`` and ``records_thread`` only rows with the column set)."""
    return column == "user_id" or value is not None
