"""DDL of the Oracle store, per search strategy (docs/oracle.md#managed-objects-prefix-id_, docs/oracle.md#indexes-and-jobs).

Pure functions from ``Names`` (validated, upper-case, unquoted) to ``Stmt``s. DDL
takes no binds, so only validated names and integers reach the text; PL/SQL blocks
(preference, scheduler job) take their values as binds.

Schema version 4 (version 1 lacked ``THREADS.seq_no``, 2 ``CHUNK_SOURCES``, 3 the
validity windows; ``UPGRADES`` adds them):

* ``MEMORY_STORE_META`` (key/value): schema version, vector dimension, index sync
  mode, hybrid model, retention config (JSON).
* ``THREADS``, with ``seq_no``: the high-water mark of the thread's message
  numbers, so a number freed by a delete is never handed out again (the pipeline's
  watermark relies on it); ``ACTOR_PROFILES``, ``MESSAGES``, ``MEMORIES`` (one row per record,
  JSON metadata, ``TIMESTAMP(6)`` times in UTC, ``content_set``/``event_ts_set``
  flags because Oracle stores ``''`` as NULL, ``valid_from``/``valid_until``
  validity window, NULL for messages and profiles); ``RECORD_CHUNKS`` (search rows:
  text CLOB, optional ``VECTOR(dim, FLOAT32)`` embedding, copied scope, expiry and
  window).
* VECTOR: an HNSW cosine vector index on the embedding (IVF when the vector pool
  cannot hold HNSW). KEYWORD: an Oracle Text ``CONTEXT`` index on ``chunk_text``.
  HYBRID: a vectorizer preference plus ``CREATE HYBRID VECTOR INDEX``.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from oam_core.errors import ConfigurationError, InvalidArgumentError, SchemaError
from oam_core.store.options import SearchIndexSyncMode
from oam_core.store.oracle import windows
from oam_core.store.oracle.names import Names
from oam_core.store.oracle.quoting import legacy_context_rows, sources_table
from oam_core.store.oracle.stmt import Stmt

SCHEMA_VERSION = 4
ID_LEN = 512
"""Longest record, thread and scope id (characters; 2048 bytes in AL32UTF8, so one id
fits an index key even on a STANDARD ``MAX_STRING_SIZE`` database)."""

_ID = f"VARCHAR2({ID_LEN} CHAR)"
_RECORD_COLUMNS = f"""(
  pk NUMBER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id {_ID} NOT NULL,
  record_type VARCHAR2(32) NOT NULL,
  content CLOB,
  content_set NUMBER(1) NOT NULL,
  role VARCHAR2(256 CHAR),
  seq_no NUMBER,
  thread_id {_ID},
  user_id {_ID},
  agent_id {_ID},
  event_ts VARCHAR2(512 CHAR),
  event_ts_set NUMBER(1) NOT NULL,
  metadata JSON,
  created_at TIMESTAMP(6) NOT NULL,
  expires_at TIMESTAMP(6),
  {windows.column_clauses()}"""


def create_tables(n: Names, vector_dim: int | None, flexible: bool = False) -> list[Stmt]:
    """CREATE TABLE statements and their b-tree indexes.

    Args:
        n: Object names.
        vector_dim: Embedding dimension; None creates no embedding column, unless
            ``flexible``.
        flexible: Without a dimension, create ``embedding VECTOR(*, FLOAT32)``.
    """
    stmts = [
        f"CREATE TABLE {n.meta} (\n  meta_key VARCHAR2(64) PRIMARY KEY,\n"
        "  meta_value VARCHAR2(4000)\n)",
        f"""CREATE TABLE {n.threads} (
  pk NUMBER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id {_ID} NOT NULL,
  user_id {_ID},
  agent_id {_ID},
  metadata JSON,
  config JSON,
  state JSON,
  created_at TIMESTAMP(6) NOT NULL,
  seq_no NUMBER,
  CONSTRAINT {n.threads}_UK UNIQUE (id)
)""",
        f"CREATE TABLE {n.profiles} {_RECORD_COLUMNS},\n"
        f"  CONSTRAINT {n.profiles}_UK UNIQUE (record_type, id)\n)",
        f"CREATE TABLE {n.messages} {_RECORD_COLUMNS},\n  CONSTRAINT {n.messages}_UK UNIQUE (id)\n)",
        f"CREATE TABLE {n.memories} {_RECORD_COLUMNS},\n  CONSTRAINT {n.memories}_UK UNIQUE (id)\n)",
        f"""CREATE TABLE {n.chunks} (
  pk NUMBER GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  record_family VARCHAR2(32) NOT NULL,
  record_pk NUMBER NOT NULL,
  record_type VARCHAR2(32) NOT NULL,
  seq NUMBER NOT NULL,
  chunk_text CLOB,
  thread_id {_ID},
  user_id {_ID},
  agent_id {_ID},
  expires_at TIMESTAMP(6),
  {windows.column_clauses()}{embedding_column(vector_dim, flexible)}
)""",
        # One scope column per index: an index key must stay under 6398 bytes (8K blocks).
        f"CREATE INDEX {n.threads}_USER_IX ON {n.threads} (user_id)",
        f"CREATE INDEX {n.threads}_AGENT_IX ON {n.threads} (agent_id)",
        f"CREATE INDEX {n.messages}_THREAD_IX ON {n.messages} (thread_id, seq_no)",
        f"CREATE INDEX {n.messages}_USER_IX ON {n.messages} (user_id)",
        f"CREATE INDEX {n.messages}_AGENT_IX ON {n.messages} (agent_id)",
        f"CREATE INDEX {n.messages}_EXP_IX ON {n.messages} (expires_at)",
        f"CREATE INDEX {n.memories}_THREAD_IX ON {n.memories} (thread_id)",
        f"CREATE INDEX {n.memories}_USER_IX ON {n.memories} (user_id)",
        f"CREATE INDEX {n.memories}_AGENT_IX ON {n.memories} (agent_id)",
        f"CREATE INDEX {n.memories}_TYPE_IX ON {n.memories} (record_type, pk)",
        f"CREATE INDEX {n.memories}_EXP_IX ON {n.memories} (expires_at)",
        f"CREATE INDEX {n.chunks}_RECORD_IX ON {n.chunks} (record_family, record_pk, seq)",
        f"CREATE INDEX {n.chunks}_THREAD_IX ON {n.chunks} (thread_id)",
        f"CREATE INDEX {n.chunks}_USER_IX ON {n.chunks} (user_id)",
        f"CREATE INDEX {n.chunks}_AGENT_IX ON {n.chunks} (agent_id)",
        f"CREATE INDEX {n.chunks}_TYPE_IX ON {n.chunks} (record_type, expires_at)",
    ]
    return [*(Stmt(s) for s in stmts), *sources_table(n)]


def upgrade_steps(n: Names, version: int) -> list[Stmt]:
    """The DDL taking an existing schema from ``version`` to ``SCHEMA_VERSION``
    (tables this plan creates anew already have the current shape).

    1 -> 2: ``THREADS.seq_no``, the message-number high-water mark. Left NULL, the
    next number is still after every stored message (``sql.next_seq``), so no data
    step is needed. 2 -> 3: ``CHUNK_SOURCES`` (created as a missing table) and the
    context rows written before it, which do not say what they quote, deleted.
    3 -> 4: the validity window columns on the record tables and search rows, then
    the memories already marked superseded given ``valid_until`` = their successor's
    ``created_at``, copied to their search rows (``windows.upgrade``).

    Raises:
        ValueError: for a version with no upgrade path.
    """
    steps: list[Stmt] = []
    for step in range(version, SCHEMA_VERSION):
        if step not in UPGRADES:
            raise SchemaError(
                f"no upgrade from oam schema version {step} to {step + 1}; recreate the "
                "schema (SchemaPolicy.RECREATE) or migrate it by hand"
            )
        steps.extend(UPGRADES[step](n))
    return steps


UPGRADES: dict[int, Callable[[Names], list[Stmt]]] = {
    1: lambda n: [Stmt(f"ALTER TABLE {n.threads} ADD (seq_no NUMBER)")],
    2: lambda n: [legacy_context_rows(n)],
    3: windows.upgrade,
}
"""``UPGRADES[v](names)``: the statements taking schema version ``v`` to ``v + 1``."""


def embedding_column(vector_dim: int | None, flexible: bool = False) -> str:
    """The embedding column clause (with a leading comma): ``VECTOR(dim, FLOAT32)``,
    ``VECTOR(*, FLOAT32)`` when ``flexible`` without a dimension, else ``""``."""
    if vector_dim is None:
        return ",\n  embedding VECTOR(*, FLOAT32)" if flexible else ""
    return f",\n  embedding VECTOR({_dim(vector_dim)}, FLOAT32)"


def add_embedding_column(n: Names, vector_dim: int | None) -> Stmt:
    """Upgrade: add the embedding column (flexible ``*`` without a dimension)."""
    dims = "*" if vector_dim is None else str(_dim(vector_dim))
    return Stmt(f"ALTER TABLE {n.chunks} ADD (embedding VECTOR({dims}, FLOAT32))")


def _dim(vector_dim: int) -> int:
    if (
        isinstance(vector_dim, bool)
        or not isinstance(vector_dim, int)
        or not 1 <= vector_dim <= 65535
    ):
        raise InvalidArgumentError(f"vector_dim must be an int in 1..65535, got {vector_dim!r}")
    return vector_dim


def hnsw_index(n: Names) -> Stmt:
    """HNSW cosine vector index on the chunk embeddings (docs/oracle.md#indexes-and-jobs)."""
    return Stmt(
        f"CREATE VECTOR INDEX {n.vector_index} ON {n.chunks} (embedding)\n"
        "  ORGANIZATION INMEMORY NEIGHBOR GRAPH\n  DISTANCE COSINE\n"
        "  WITH TARGET ACCURACY 95\n  PARAMETERS (TYPE HNSW, NEIGHBORS 16, EFCONSTRUCTION 200)"
    )


def ivf_index(n: Names) -> Stmt:
    """IVF fallback when the vector pool cannot hold an HNSW graph (docs/oracle.md#indexes-and-jobs)."""
    return Stmt(
        f"CREATE VECTOR INDEX {n.vector_index} ON {n.chunks} (embedding)\n"
        "  ORGANIZATION NEIGHBOR PARTITIONS\n  DISTANCE COSINE\n"
        "  WITH TARGET ACCURACY 95\n  PARAMETERS (TYPE IVF, NEIGHBOR PARTITIONS 32)"
    )


def text_sync_clause(sync: SearchIndexSyncMode) -> str:
    """Oracle Text SYNC clause for a CONTEXT index (KEYWORD rejects AUTO earlier).

    Raises:
        ValueError: for ``AUTO`` (hybrid indexes only, as in Oracle's SDK).
    """
    if sync is SearchIndexSyncMode.ON_COMMIT:
        return "SYNC (ON COMMIT)"
    if sync is SearchIndexSyncMode.MANUAL:
        return "SYNC (MANUAL)"
    raise ConfigurationError(
        "SearchIndexSyncMode.AUTO is supported only with SearchStrategy.HYBRID"
    )


def text_index(n: Names, sync: SearchIndexSyncMode) -> Stmt:
    """Oracle Text CONTEXT index on the chunk text (docs/oracle.md#indexes-and-jobs)."""
    return Stmt(
        f"CREATE INDEX {n.text_index} ON {n.chunks} (chunk_text)\n"
        f"  INDEXTYPE IS CTXSYS.CONTEXT PARAMETERS ('{text_sync_clause(sync)}')"
    )


def alter_text_sync(n: Names, sync: SearchIndexSyncMode) -> Stmt:
    """Change the SYNC mode of the existing CONTEXT index; ``REBUILD PARAMETERS
    ('REPLACE METADATA ...')`` rewrites only the index metadata, not the index."""
    return Stmt(
        f"ALTER INDEX {n.text_index} REBUILD PARAMETERS ('REPLACE METADATA {text_sync_clause(sync)}')"
    )


def vectorizer_params(model: str) -> str:
    """JSON parameters of the vectorizer preference for ``model`` (docs/oracle.md#indexes-and-jobs)."""
    return json.dumps(
        {
            "vector_idxtype": "hnsw",
            "distance": "cosine",
            "accuracy": 95,
            "model": model,
            "by": "words",
            "max": 100,
            "overlap": 10,
            "split": "recursively",
        }
    )


def create_vectorizer(n: Names, model: str) -> Stmt:
    """Create the DBMS_VECTOR_CHAIN vectorizer preference named after the schema."""
    return Stmt(
        "BEGIN\n  DBMS_VECTOR_CHAIN.CREATE_PREFERENCE(:pref_name, "
        "DBMS_VECTOR_CHAIN.VECTORIZER, JSON(:pref_params));\nEND;",
        {"pref_name": n.vectorizer, "pref_params": vectorizer_params(model)},
    )


def drop_vectorizer(n: Names) -> Stmt:
    """Drop the vectorizer preference."""
    return Stmt(
        "BEGIN\n  DBMS_VECTOR_CHAIN.DROP_PREFERENCE(:pref_name);\nEND;", {"pref_name": n.vectorizer}
    )


def hybrid_maintenance(sync: SearchIndexSyncMode) -> str:
    """Index maintenance preferences of the hybrid index for ``sync``."""
    if sync is SearchIndexSyncMode.AUTO:
        return "MAINTENANCE AUTO"
    if sync is SearchIndexSyncMode.MANUAL:
        return "MAINTENANCE MANUAL SYNC (MANUAL)"
    return "MAINTENANCE MANUAL SYNC (ON COMMIT)"


def hybrid_index(n: Names, sync: SearchIndexSyncMode) -> Stmt:
    """``CREATE HYBRID VECTOR INDEX`` on the chunk text using the vectorizer preference."""
    return Stmt(
        f"CREATE HYBRID VECTOR INDEX {n.hybrid_index} ON {n.chunks} (chunk_text)\n"
        f"  PARAMETERS ('VECTORIZER {n.vectorizer} {hybrid_maintenance(sync)}')"
    )


def drop_index(name: str) -> Stmt:
    """Drop one (domain) index."""
    return Stmt(f"DROP INDEX {name} FORCE")


def drop_table(name: str) -> Stmt:
    """Drop a table with its indexes and constraints, bypassing the recycle bin."""
    return Stmt(f"DROP TABLE {name} CASCADE CONSTRAINTS PURGE")


def purge_action(n: Names) -> str:
    """The PL/SQL the purge job runs: expired search rows, then expired records."""
    now = "SYS_EXTRACT_UTC(SYSTIMESTAMP)"
    return (
        f"BEGIN DELETE FROM {n.chunks} WHERE expires_at <= {now}; "
        f"DELETE FROM {n.messages} WHERE expires_at <= {now}; "
        f"DELETE FROM {n.memories} WHERE expires_at <= {now}; COMMIT; END;"
    )


def create_purge_job(n: Names) -> Stmt:
    """DBMS_SCHEDULER job purging expired rows hourly (docs/oracle.md#indexes-and-jobs)."""
    return Stmt(
        "BEGIN\n  DBMS_SCHEDULER.CREATE_JOB(\n    job_name => :job_name,\n"
        "    job_type => 'PLSQL_BLOCK',\n    job_action => :job_action,\n"
        "    start_date => SYSTIMESTAMP,\n    repeat_interval => 'FREQ=HOURLY',\n"
        "    enabled => TRUE,\n    comments => 'oam: purge expired memory records');\nEND;",
        {"job_name": n.purge_job, "job_action": purge_action(n)},
    )


def drop_purge_job(n: Names) -> Stmt:
    """Drop the purge job."""
    return Stmt(
        "BEGIN\n  DBMS_SCHEDULER.DROP_JOB(job_name => :job_name, force => TRUE);\nEND;",
        {"job_name": n.purge_job},
    )


def sync_index(name: str) -> Stmt:
    """Synchronise a Text or hybrid index now (issues an implicit commit; docs/oracle.md#indexes-and-jobs)."""
    return Stmt("BEGIN\n  CTX_DDL.SYNC_INDEX(:idx_name);\nEND;", {"idx_name": name})
