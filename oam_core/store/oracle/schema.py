"""Schema policy for the Oracle store: inspect, then plan DDL (docs/store.md#schema-policies).

``inspect_statements`` reads what exists (tables, indexes, the vectorizer preference,
the purge job, the metadata rows); ``plan_schema`` is a pure function from that state,
the requested configuration and the ``SchemaPolicy`` to the statements to run and the
configuration the store then uses. Every incompatibility is a ``SchemaError`` (a
``ValueError``; docs/errors.md) raised before any DDL runs.

Rules (as Oracle's SDK applies them; docs/store.md#schema-policies):

* ``REQUIRE_EXISTING`` (default) runs no DDL; a missing, incomplete or outdated
  schema, or one lacking what the strategy needs, fails at start. A schema of
  version 3 (the one before validity windows) opens as it is: reads see no windows,
  and a write that would store one is refused (``windows.py``).
* ``CREATE_IF_EMPTY`` creates everything when no managed table exists, else behaves
  as ``REQUIRE_EXISTING``.
* ``CREATE_IF_NECESSARY`` creates missing objects and applies supported upgrades:
  the schema version steps (``ddl.UPGRADES``), missing tables/indexes, the embedding column and vector index, a text index
  (vector -> keyword), the vectorizer preference and hybrid index (-> hybrid), a
  changed text-index sync mode, and an explicit retention config into the metadata.
* ``RECREATE`` drops every managed object and creates the schema anew.
* VECTOR needs the embedding column (``VECTOR(dim, FLOAT32)``, or ``VECTOR(*, FLOAT32)``
  when no dimension is known yet); a missing vector index is created when allowed and
  never fatal (ranking is exact). KEYWORD needs a text or hybrid index (a keyword
  store uses the text branch of an existing hybrid index); HYBRID needs the hybrid
  index built from the same in-database model as the store's ``OracleDBEmbedder``.
* ``MemoryRetentionConfig`` lives in the metadata: omitted = the stored one; explicit
  and different = an update under ``CREATE_IF_NECESSARY``, an error otherwise.
* Reopening with another strategy than the stored one works whenever the schema
  serves it (a metadata write, never DDL, under any policy) and records it as
  ``search_strategy``; one it cannot serve is refused naming the strategy, as above.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from oam_core.errors import ConfigurationError, EmbedderMismatchError, SchemaError
from oam_core.store.options import (
    MemoryRetentionConfig,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)
from oam_core.store.oracle import ddl, windows
from oam_core.store.oracle.names import Names
from oam_core.store.oracle.stmt import Stmt

PURGE_JOB = "PURGE_JOB"
"""Marker step: create the purge job if privileges allow (warn otherwise)."""
VECTOR_INDEX = "VECTOR_INDEX"
"""Marker step: create the HNSW index, falling back to IVF when the pool is too small."""
FIXED = "fixed"
"""Metadata ``embedding_column``: ``VECTOR(dim, FLOAT32)`` with a vector index."""
FLEXIBLE = "flexible"
"""Metadata ``embedding_column``: ``VECTOR(*, FLOAT32)``; the dimension is learned from
the first vector written (recorded in the same transaction) and searches are exact."""


@dataclass(frozen=True)
class SchemaState:
    """What exists in the database for one prefix.

    Attributes:
        tables: Managed table names present.
        indexes: Managed index names present.
        meta: Rows of the metadata table (empty when it is missing).
        has_vectorizer: The vectorizer preference exists.
        has_job: The purge job exists.
    """

    tables: frozenset[str] = frozenset()
    indexes: frozenset[str] = frozenset()
    meta: dict[str, str] = field(default_factory=dict)
    has_vectorizer: bool = False
    has_job: bool = False


@dataclass(frozen=True)
class Wanted:
    """The configuration a store asks for.

    Attributes:
        strategy: Search strategy.
        sync: Index sync mode (AUTO only with HYBRID; checked by the store).
        vector_dim: Local embedding dimension, or None (no local vectors).
        model: In-database model of the ``OracleDBEmbedder`` (HYBRID), else None.
        retention: An explicit retention config, or None when omitted.
    """

    strategy: SearchStrategy
    sync: SearchIndexSyncMode
    vector_dim: int | None
    model: str | None
    retention: MemoryRetentionConfig | None


@dataclass
class Plan:
    """What to run and what the store uses afterwards.

    Attributes:
        steps: ``Stmt``s in order, or the marker strings ``PURGE_JOB`` /
            ``VECTOR_INDEX``.
        meta: Metadata rows to upsert after the DDL (empty: nothing to write).
        vector_dim: The dimension of the local vectors, or None (none, or not yet
            learned for a flexible column).
        recorded_dim: The dimension the metadata records once ``meta`` is written, or
            None: a flexible column's first write with vectors records it
            (``OracleTx.record_dim``), even when the store knows its dimension.
        local_vectors: The chunks table has (or gets) an embedding column.
        retention: The effective retention config.
        keyword_via_hybrid: KEYWORD searches the hybrid index's text branch.
        windows: The tables have (or get) the validity window columns; False for a
            version-3 schema opened without DDL (``Names.windows``).
    """

    steps: list[Stmt | str] = field(default_factory=list)
    meta: dict[str, str] = field(default_factory=dict)
    vector_dim: int | None = None
    recorded_dim: int | None = None
    local_vectors: bool = False
    retention: MemoryRetentionConfig = field(default_factory=MemoryRetentionConfig)
    keyword_via_hybrid: bool = False
    windows: bool = True


def inspect_statements(n: Names) -> dict[str, Stmt]:
    """Queries reading the schema state (data dictionary and metadata table)."""
    tables = ", ".join(f"'{t}'" for t in n.tables)
    return {
        "tables": Stmt(f"SELECT table_name FROM user_tables WHERE table_name IN ({tables})"),
        "indexes": Stmt(
            "SELECT index_name FROM user_indexes WHERE table_name = :table_name",
            {"table_name": n.chunks},
        ),
        "vectorizer": Stmt(
            "SELECT pre_name FROM ctx_user_preferences WHERE pre_name = :pref_name",
            {"pref_name": n.vectorizer},
        ),
        "job": Stmt(
            "SELECT job_name FROM user_scheduler_jobs WHERE job_name = :job_name",
            {"job_name": n.purge_job},
        ),
        "meta": Stmt(f"SELECT meta_key, meta_value FROM {n.meta}"),
    }


def retention_json(config: MemoryRetentionConfig) -> str:
    """Canonical JSON of a retention config (NOT_SET already resolved to None)."""
    return json.dumps(asdict(config), sort_keys=True)


def retention_from_json(text: str) -> MemoryRetentionConfig:
    """Parse a stored retention config.

    Raises:
        SchemaError: (a ValueError) for stored text that is not a retention config.
    """
    try:
        data = json.loads(text)
        return MemoryRetentionConfig(
            default_ttl_days=data.get("default_ttl_days"), max_ttl_days=data.get("max_ttl_days")
        )
    except (ValueError, AttributeError, TypeError) as exc:
        raise SchemaError(f"stored retention config is not valid: {text!r}") from exc


def column_kind(w: Wanted) -> str | None:
    """The embedding column a new schema gets: ``FIXED`` with a known dimension,
    ``FLEXIBLE`` (``VECTOR(*, FLOAT32)``, dimension learned from the first vector) for a
    VECTOR store without one, else None (no local vectors)."""
    if w.vector_dim is not None:
        return FIXED
    return FLEXIBLE if w.strategy is SearchStrategy.VECTOR else None


def _create_all(n: Names, w: Wanted) -> list[Stmt | str]:
    kind = column_kind(w)
    steps: list[Stmt | str] = list(ddl.create_tables(n, w.vector_dim, kind == FLEXIBLE))
    if kind == FIXED:
        steps.append(VECTOR_INDEX)
    steps.extend(_search_index_steps(n, w, has_vectorizer=False))
    steps.append(PURGE_JOB)
    return steps


def _search_index_steps(n: Names, w: Wanted, *, has_vectorizer: bool) -> list[Stmt | str]:
    if w.strategy is SearchStrategy.KEYWORD:
        return [ddl.text_index(n, w.sync)]
    if w.strategy is SearchStrategy.HYBRID:
        assert w.model is not None
        steps: list[Stmt | str] = [] if has_vectorizer else [ddl.create_vectorizer(n, w.model)]
        return [*steps, ddl.hybrid_index(n, w.sync)]
    return []


def drop_all(n: Names, s: SchemaState) -> list[Stmt | str]:
    """Statements dropping every managed object that ``s`` says exists."""
    steps: list[Stmt | str] = []
    if s.has_job:
        steps.append(ddl.drop_purge_job(n))
    if n.hybrid_index in s.indexes:
        steps.append(ddl.drop_index(n.hybrid_index))
    steps.extend(ddl.drop_table(t) for t in reversed(n.tables) if t in s.tables)
    if s.has_vectorizer:
        steps.append(ddl.drop_vectorizer(n))
    return steps


def _fresh_meta(w: Wanted, retention: MemoryRetentionConfig) -> dict[str, str]:
    meta = {
        "schema_version": str(ddl.SCHEMA_VERSION),
        "search_index_sync": w.sync.value,
        "retention": retention_json(retention),
        "created_strategy": w.strategy.value,
        "search_strategy": w.strategy.value,
    }
    kind = column_kind(w)
    if kind is not None:
        meta["embedding_column"] = kind
    if w.vector_dim is not None:
        meta["vector_dim"] = str(w.vector_dim)
    if w.strategy is SearchStrategy.HYBRID and w.model is not None:
        meta["hybrid_model"] = w.model.upper()
    return meta


def _check_wanted(w: Wanted) -> None:
    if w.strategy is SearchStrategy.HYBRID and not w.model:
        raise ConfigurationError(
            "SearchStrategy.HYBRID needs an OracleDBEmbedder (its model names the index)"
        )


def plan_schema(policy: SchemaPolicy, n: Names, s: SchemaState, w: Wanted) -> Plan:
    """Decide the DDL for ``policy`` given state ``s`` and request ``w`` (module rules).

    Returns:
        The plan; its ``steps`` are empty under ``REQUIRE_EXISTING``.

    Raises:
        SchemaError: (a ValueError) for a missing, incomplete or newer schema the
            policy may not create or upgrade, a dimension different from the stored
            one, a strategy the existing schema cannot serve, or a sync mode or
            retention config differing from the stored ones outside
            ``CREATE_IF_NECESSARY``.
        EmbedderMismatchError: (a SchemaError) for a hybrid index built from another
            model than the store's ``OracleDBEmbedder``.
        ConfigurationError: (a ValueError) for HYBRID without an in-database model.
    """
    if policy is SchemaPolicy.RECREATE or not s.tables:
        if not s.tables and policy is SchemaPolicy.REQUIRE_EXISTING:
            raise SchemaError(
                f"no managed schema with prefix {n.prefix or '(none)'!r} exists; open the store "
                "with schema_policy=SchemaPolicy.CREATE_IF_EMPTY or CREATE_IF_NECESSARY to create it"
            )
        _check_wanted(w)
        retention = w.retention or MemoryRetentionConfig()
        steps = drop_all(n, s) if policy is SchemaPolicy.RECREATE else []
        return Plan(
            steps=steps + _create_all(n, w),
            meta=_fresh_meta(w, retention),
            vector_dim=w.vector_dim,
            recorded_dim=w.vector_dim,
            local_vectors=column_kind(w) is not None,
            retention=retention,
        )
    upgrade = policy is SchemaPolicy.CREATE_IF_NECESSARY
    plan = Plan()
    meta = s.meta
    version = meta.get("schema_version")
    if version is not None and version.isdigit() and int(version) > ddl.SCHEMA_VERSION:
        raise SchemaError(
            f"the managed schema has version {version}; this oam reads up to "
            f"{ddl.SCHEMA_VERSION}. Upgrade oam."
        )
    missing = [t for t in n.tables if t not in s.tables]
    if not missing and not upgrade and version == str(windows.WINDOW_VERSION - 1):
        plan.windows = False  # read as before: no statement names the window columns
    elif missing or version != str(ddl.SCHEMA_VERSION):
        if not upgrade:
            what = f"tables {missing} are missing" if missing else f"schema version is {version!r}"
            raise SchemaError(
                f"the managed schema is incomplete or outdated ({what}); open it with "
                "schema_policy=SchemaPolicy.CREATE_IF_NECESSARY to upgrade it"
            )
        kind_now = stored_column(meta) or column_kind(w)
        created = ddl.create_tables(n, meta_dim(meta) or w.vector_dim, kind_now == FLEXIBLE)
        plan.steps.extend(st for st in created if _creates_missing(st, missing))
        if version is not None and version.isdigit() and n.threads not in missing:
            plan.steps.extend(ddl.upgrade_steps(n, int(version)))
        plan.meta["schema_version"] = str(ddl.SCHEMA_VERSION)
    _plan_vectors(plan, n, s, w, upgrade, missing)
    _plan_search_index(plan, n, s, w, upgrade)
    _plan_retention(plan, meta, w, upgrade)
    # The schema serves the strategy (else a ValueError above): record a change (a
    # schema that predates the record gets it when it may be written anyway).
    stored = meta.get("search_strategy", meta.get("created_strategy"))
    if stored != w.strategy.value and (stored is not None or upgrade):
        plan.meta["search_strategy"] = w.strategy.value
    if upgrade and not s.has_job:
        plan.steps.append(PURGE_JOB)
    return plan


def _plan_vectors(
    plan: Plan, n: Names, s: SchemaState, w: Wanted, upgrade: bool, missing: list[str]
) -> None:
    """Local vector storage: check the dimension, add the column or index if allowed."""
    meta = s.meta
    stored_dim = meta_dim(meta)
    kind = stored_column(meta)
    if n.chunks in missing:  # created by this plan
        kind = kind or column_kind(w)
        stored_dim = stored_dim or w.vector_dim
        if kind is not None:
            plan.meta["embedding_column"] = kind
        if stored_dim is not None:
            plan.meta["vector_dim"] = str(stored_dim)
    if w.vector_dim is not None and stored_dim is not None and w.vector_dim != stored_dim:
        raise SchemaError(
            f"the managed schema stores vectors of dimension {stored_dim}, but this store "
            f"was opened with dimension {w.vector_dim}"
        )
    wants_local = w.strategy is SearchStrategy.VECTOR or w.vector_dim is not None
    if kind is None and wants_local:
        if not upgrade:
            raise SchemaError(
                f"the managed schema has no embedding column for {w.strategy.name} local "
                "vectors; open it with schema_policy=SchemaPolicy.CREATE_IF_NECESSARY to add one"
            )
        kind = column_kind(w)
        assert kind is not None
        plan.steps.append(ddl.add_embedding_column(n, w.vector_dim))
        plan.meta["embedding_column"] = kind
        if w.vector_dim is not None:
            plan.meta["vector_dim"] = str(w.vector_dim)
    dim = stored_dim if stored_dim is not None else w.vector_dim
    # A flexible column without a recorded dimension is not given one here, from a
    # state read outside any transaction: another store object may record one first.
    plan.vector_dim = dim if kind is not None else None
    plan.recorded_dim = meta_dim({**meta, **plan.meta}) if kind is not None else None
    plan.local_vectors = kind is not None
    # Exact search needs no index: a missing one is created when allowed, never fatal.
    if kind == FIXED and n.vector_index not in s.indexes and upgrade:
        plan.steps.append(VECTOR_INDEX)


def stored_column(meta: dict[str, str]) -> str | None:
    """The stored embedding column kind (a schema with a dimension but no kind has a
    fixed column), or None when the chunks table has no embedding column."""
    kind = meta.get("embedding_column")
    if kind in (FIXED, FLEXIBLE):
        return kind
    return FIXED if meta_dim(meta) is not None else None


def _creates_missing(st: Stmt, missing: list[str]) -> bool:
    head = st.sql.split("(", 1)[0].split()
    if head[:2] == ["CREATE", "TABLE"]:
        return head[2] in missing
    # CREATE INDEX name ON table (...)
    return len(head) >= 5 and head[4] in missing


def meta_dim(meta: dict[str, str]) -> int | None:
    """The stored vector dimension, or None."""
    return parse_dim(meta.get("vector_dim"))


def parse_dim(value: str | None) -> int | None:
    """A stored ``vector_dim`` value as an int; None for none (or an empty value)."""
    return int(value) if value and value.isdigit() else None


def _plan_search_index(plan: Plan, n: Names, s: SchemaState, w: Wanted, upgrade: bool) -> None:
    has_text = n.text_index in s.indexes
    has_hybrid = n.hybrid_index in s.indexes
    stored_sync = s.meta.get("search_index_sync")
    if w.strategy is SearchStrategy.VECTOR:
        return
    if w.strategy is SearchStrategy.KEYWORD:
        if has_hybrid:
            plan.keyword_via_hybrid = True
            return
        if not has_text:
            if not upgrade:
                raise SchemaError(
                    "SearchStrategy.KEYWORD is incompatible with the existing schema: it has no "
                    "text index; open it with schema_policy=SchemaPolicy.CREATE_IF_NECESSARY to "
                    "add one"
                )
            plan.steps.append(ddl.text_index(n, w.sync))
            plan.meta["search_index_sync"] = w.sync.value
            return
        if stored_sync is not None and stored_sync != w.sync.value:
            if not upgrade:
                raise SchemaError(
                    f"the text index syncs {stored_sync}, not {w.sync.value}; open the store "
                    "with schema_policy=SchemaPolicy.CREATE_IF_NECESSARY to change it"
                )
            plan.steps.append(ddl.alter_text_sync(n, w.sync))
            plan.meta["search_index_sync"] = w.sync.value
        return
    # HYBRID
    assert w.model is not None
    if has_hybrid:
        stored_model = s.meta.get("hybrid_model")
        if stored_model is not None and stored_model != w.model.upper():
            raise EmbedderMismatchError(
                f"the hybrid index was built with model {stored_model}, but the store's "
                f"OracleDBEmbedder uses {w.model.upper()}; use the same model or RECREATE"
            )
        if stored_sync is not None and stored_sync != w.sync.value:
            raise SchemaError(
                f"the hybrid index was created with sync mode {stored_sync}, not "
                f"{w.sync.value}; open it with that mode or RECREATE the schema"
            )
        return
    if not upgrade:
        raise SchemaError(
            "SearchStrategy.HYBRID is incompatible with the existing schema: it has no hybrid "
            "vector index; open it with schema_policy=SchemaPolicy.CREATE_IF_NECESSARY to add one"
        )
    if has_text:  # the hybrid index carries the text branch now
        plan.steps.append(ddl.drop_index(n.text_index))
    plan.steps.extend(_search_index_steps(n, w, has_vectorizer=s.has_vectorizer))
    plan.meta["search_index_sync"] = w.sync.value
    plan.meta["hybrid_model"] = w.model.upper()


def _plan_retention(plan: Plan, meta: dict[str, str], w: Wanted, upgrade: bool) -> None:
    stored = retention_from_json(meta["retention"]) if "retention" in meta else None
    if w.retention is None:
        plan.retention = stored or MemoryRetentionConfig()
        if stored is None and upgrade:
            plan.meta["retention"] = retention_json(plan.retention)
        return
    plan.retention = w.retention
    if stored is not None and stored == w.retention:
        return
    if not upgrade:
        raise SchemaError(
            f"memory_retention_config {w.retention} differs from the stored {stored}; open the "
            "store with schema_policy=SchemaPolicy.CREATE_IF_NECESSARY to update it, or omit it"
        )
    plan.meta["retention"] = retention_json(w.retention)
