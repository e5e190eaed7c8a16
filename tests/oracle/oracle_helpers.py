"""Helpers of the statement-level Oracle tests (imported by the tests)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime, timezone
from typing import Any

import sqlglot
from fakedb import FakeConnection
from sqlglot import exp

from oam_core.store.oracle import ddl
from oam_core.store.oracle.names import Names

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)

# Oracle forms sqlglot's Oracle dialect does not know; each is rewritten to a form it
# does know before parsing, so the rest of the statement is still syntax-checked. The
# rewritten parts are pinned by exact-text assertions in the tests.
_NORMALISE = [
    (re.compile(r"JSON_SERIALIZE\(([\w.]+) RETURNING CLOB\)"), r"JSON_SERIALIZE(\1)"),
    (re.compile(r"VECTOR\((\d+|\*), FLOAT32\)"), r"BLOB"),
]


def parse_oracle(sql: str) -> exp.Expression:
    """Parse ``sql`` with sqlglot's Oracle dialect; fail on syntax errors and on the
    generic ``Command`` fallback (which would check nothing)."""
    text = sql
    for pat, rep in _NORMALISE:
        text = pat.sub(rep, text)
    tree = sqlglot.parse_one(text, read="oracle")
    assert not isinstance(tree, exp.Command), f"sqlglot did not parse: {sql[:80]}"
    return tree


def script_schema(
    conn: FakeConnection,
    names: Names,
    *,
    dim: int | None = 8,
    text_index: bool = False,
    hybrid_index: bool = False,
    vectorizer: bool = False,
    job: bool = True,
    tables: Iterable[str] | None = None,
    meta: dict[str, str] | None = None,
) -> None:
    """Script the data dictionary and metadata of an existing schema."""
    present = list(names.tables if tables is None else tables)
    indexes = []
    if dim is not None:
        indexes.append(names.vector_index)
    if text_index:
        indexes.append(names.text_index)
    if hybrid_index:
        indexes.append(names.hybrid_index)
    rows = {
        "schema_version": str(ddl.SCHEMA_VERSION),
        "search_index_sync": "ON_COMMIT",
        "retention": json.dumps({"default_ttl_days": None, "max_ttl_days": None}, sort_keys=True),
    }
    if dim is not None:
        rows["vector_dim"] = str(dim)
    if hybrid_index:
        rows["hybrid_model"] = "DOC_MODEL"
    rows.update(meta or {})
    conn.script(r"FROM user_tables", [(t,) for t in present])
    conn.script(r"FROM user_indexes", [(i,) for i in indexes])
    conn.script(r"FROM ctx_user_preferences", [(names.vectorizer,)] if vectorizer else [])
    conn.script(r"FROM user_scheduler_jobs", [(names.purge_job,)] if job else [])
    conn.script(r"SELECT meta_key, meta_value FROM", list(rows.items()))


def binds_of(conn: FakeConnection, pattern: str) -> list[Any]:
    """Bind values of every statement whose SQL matches ``pattern``."""
    return [c.binds for c in conn.statements() if re.search(pattern, c.sql)]
