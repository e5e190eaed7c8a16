"""Write planning: validate a write and turn it into row plans (docs/store.md#what-is-stored-and-what-is-searched, docs/store.md#ttl-and-retention).

Everything here is pure (no I/O): it checks arguments, broadcasts scalars, resolves
content fallbacks, retrieval text, chunks, explicit vectors and TTL, and returns plans
that a back end executes in one transaction. Any ``ValueError`` is raised before a
back end is touched, so a rejected call writes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import numpy as np

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import (
    EXPIRING_TYPES,
    MESSAGE,
    PROFILE_TYPES,
    family_of,
)
from oam_core.apis.thread import check_role
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.checks import Vector as Vector
from oam_core.checks import (
    anchors_on_timestamp,
    broadcast,
    check_dims,
    check_id,
    check_record_type,
    check_scope_id,
    check_text,
    check_texts,
    check_vector_rows,
    lengthen_short_rows,
    scope_ok,
    split_vectors,
)
from oam_core.store.chunking import chunk_text
from oam_core.store.options import MemoryRetentionConfig
from oam_core.store.quotes import take_sources
from oam_core.store.timestamps import normalize_timestamp
from oam_core.store.ttl import expiry, parse_iso_timestamp, resolve_ttl_days


@dataclass(slots=True)
class ChunkPlan:
    """One search row: its text (None for a vector without text) and vector;
    ``sources``: ids of the message records its text quotes (``store/quotes.py``)."""

    text: str | None
    vector: Vector | None = None
    needs_embedding: bool = False
    sources: tuple[str, ...] = ()


@dataclass(slots=True)
class RowPlan:
    """One record to insert, with its search rows."""

    family: str
    id: str
    record_type: str
    content: str | None
    role: str | None
    thread_id: str | None
    user_id: str | None
    agent_id: str | None
    timestamp: str | None
    metadata: str | None
    expires_at: datetime | None
    chunks: list[ChunkPlan] = field(default_factory=list)
    chunk_scope: tuple[str | None, str | None, str | None] = (None, None, None)


@dataclass(frozen=True, slots=True)
class BulkPlan:
    """Records of one ``add`` call in the bulk shape, column by column: every record
    has text and one given vector, a scope and the same expiry, and nothing is read
    row by row (no message, profile, timestamp, retrieval text or per-row TTL). Each
    record gets one search row holding its content (None when blank) and its vector.
    A back end inserts the columns as they are (``Tx.insert_bulk``) instead of an
    object per record (docs/sqlite.md#writes).

    Attributes:
        ids: One record id per record.
        contents: The stored texts, one per record.
        thread_ids, user_ids, agent_ids: The scope columns, None where unset.
        metadata: The serialised metadata (``metadatajson.dump_metadata``) or None,
            per record.
        expires_at: The expiry of every record, or None.
        vectors: float32 array of shape ``(n, dim)``, row ``i`` the vector of record ``i``.
    """

    family: str
    record_type: str
    ids: list[str]
    contents: list[str]
    thread_ids: list[str | None]
    user_ids: list[str | None]
    agent_ids: list[str | None]
    metadata: list[str | None]
    expires_at: datetime | None
    vectors: Vector

    def chunk_texts(self) -> list[str | None]:
        """The text of each record's search row: its content, None when blank."""
        return [c if c and not c.isspace() else None for c in self.contents]

    def row_plans(self) -> list[RowPlan]:
        """The same records as one ``RowPlan`` each (for back ends that insert plans)."""
        return [
            RowPlan(
                self.family,
                rid,
                self.record_type,
                c,
                None,
                t,
                u,
                a,
                None,
                mj,
                self.expires_at,
                [ChunkPlan(text, row)],
                (t, u, a),
            )
            for rid, c, text, t, u, a, mj, row in zip(
                self.ids,
                self.contents,
                self.chunk_texts(),
                self.thread_ids,
                self.user_ids,
                self.agent_ids,
                self.metadata,
                list(self.vectors),
                strict=True,
            )
        ]


@dataclass(frozen=True)
class PlanContext:
    """What planning needs to know about the store."""

    chunk_chars: int
    vector_dim: int | None
    has_embedder: bool
    retention: MemoryRetentionConfig
    now: datetime


def retrieval_chunks(
    index: object, content: str | None, ctx: PlanContext, name: str
) -> tuple[list[str], bool]:
    """Resolve the retrieval text of one record to chunk texts.

    Args:
        index: The ``index_texts`` entry / ``index_text`` value (``NOT_SET`` or None:
            use ``content``), a string (the store chunks it) or a list of strings
            (caller-owned chunks, never re-chunked; empty strings are skipped).
        content: The stored text.

    Returns:
        ``(chunks, caller_owned)``.
    """
    if index is NOT_SET or index is None:
        return (chunk_text(content, ctx.chunk_chars) if content else []), False
    if isinstance(index, str):
        return chunk_text(check_text(index, name), ctx.chunk_chars), False
    if isinstance(index, (list, tuple)):
        for i, item in enumerate(index):
            if not isinstance(item, str):
                raise ValueError(f"{name}[{i}] must be a string chunk, got {item!r}")
            check_text(item, f"{name}[{i}]")
        return [c for c in index if c], True
    raise ValueError(f"{name} must be a string, a list of strings or None, got {index!r}")


def attach_vectors(
    chunks: list[str],
    caller_owned: bool,
    embedding: object,
    whole_text: str | None,
    ctx: PlanContext,
    name: str,
) -> list[ChunkPlan]:
    """Pair chunk texts with explicit vectors, or mark them for the embedder.

    ``embedding`` is ``NOT_SET`` (embed if the store has an embedder), ``None`` (no
    vectors), one vector (one row for the whole retrieval text, never split) or a list
    of chunk vectors (one per caller chunk).

    Raises:
        ValueError: on a count mismatch, or several vectors without caller chunks.
    """
    if embedding is NOT_SET:
        return [ChunkPlan(c, needs_embedding=ctx.has_embedder) for c in chunks]
    if embedding is None:
        return [ChunkPlan(c) for c in chunks]
    vectors = split_vectors(embedding, name)
    if isinstance(vectors, np.ndarray):
        if caller_owned and len(chunks) > 1:
            raise ValueError(
                f"{name}: one vector given for {len(chunks)} caller chunks; give one per chunk"
            )
        text = chunks[0] if caller_owned and chunks else (whole_text if chunks else None)
        return [ChunkPlan(text, vectors)]
    if not vectors:
        if chunks:
            raise ValueError(f"{name}: an empty vector list needs empty retrieval text")
        return []
    if not caller_owned:
        raise ValueError(
            f"{name}: several vectors need caller-owned chunks (a list of strings in index_texts)"
        )
    if len(vectors) != len(chunks):
        raise ValueError(f"{name}: {len(vectors)} vectors for {len(chunks)} chunks")
    return [ChunkPlan(c, v) for c, v in zip(chunks, vectors, strict=True)]


def resolve_ttl(
    record_type: str,
    ttl_days: object,
    ttl_anchor: object,
    timestamp: str | None,
    created: datetime,
    retention: MemoryRetentionConfig,
    name: str,
    *,
    ttl_name: str = "ttl_days",
    anchor_name: str = "ttl_anchor",
    timestamp_name: str = "timestamp",
) -> datetime | None:
    """Compute one row's expiry (docs/store.md#ttl-and-retention).

    Args:
        name: Names the call in errors about the record type (``update``, ``row 3``).
        ttl_name, anchor_name, timestamp_name: Name the row's ``ttl_days``,
            ``ttl_anchor`` and timestamp in errors (``ttl_days[3]``).

    Raises:
        ValueError: TTL options on a non-expiring type, a bad anchor, or a TIMESTAMP
            anchor without an ISO-8601 timestamp.
    """
    if record_type not in EXPIRING_TYPES:
        if ttl_days is not NOT_SET or ttl_anchor is not NOT_SET:
            raise ValueError(
                f"{record_type} records do not expire; ttl_days/ttl_anchor not allowed"
            )
        return None
    anchor = TimeToLiveAnchor.CREATED_AT if ttl_anchor is NOT_SET else ttl_anchor
    if not isinstance(anchor, TimeToLiveAnchor):
        try:
            anchor = TimeToLiveAnchor(anchor)
        except ValueError:
            raise ValueError(
                f"{anchor_name} must be a TimeToLiveAnchor, got {ttl_anchor!r}"
            ) from None
    days = resolve_ttl_days(ttl_days, retention, ttl_name)  # type: ignore[arg-type]
    if anchor is TimeToLiveAnchor.TIMESTAMP:
        base = parse_iso_timestamp(timestamp, what=f"{timestamp_name} (ttl_anchor=TIMESTAMP)")
    else:
        base = created
    return expiry(base, days)


def plan_records(
    contents: object,
    record_type: str,
    *,
    index_texts: object,
    embeddings: object,
    record_ids: object,
    thread_ids: object,
    user_ids: object,
    agent_ids: object,
    roles: object,
    timestamps: object,
    metadata: object,
    ttl_days: object,
    ttl_anchor: object,
    ctx: PlanContext,
    library: bool = False,
) -> list[RowPlan] | BulkPlan:
    """Validate an ``add`` call and return its records: a ``BulkPlan`` when the call
    has the bulk shape (see ``BulkPlan``), else one ``RowPlan`` per record
    (docs/store.md#writing-records).

    ``roles`` are read for messages only (optional there: a message may have no
    role) and ignored for every other type. ``library`` allows the reserved
    ``$agent_memory`` metadata key (see ``metadatajson.dump_metadata``).

    Rules that depend on one column only (ids, scope ids, vectors given as one 2-D
    array, text without NUL or lone surrogates) are checked column by column, once
    per distinct value or with one array operation; the rest row by row. Either way
    every rule is checked before a plan is returned (docs/sqlite.md#writes).

    Raises:
        ValueError: for any rule of docs/store.md#what-is-stored-and-what-is-searched or docs/store.md#ttl-and-retention the call breaks, naming
            the argument (``metadata[3]``) and the value.
    """
    # Imported here, not at the top: metadatajson imports this module's text checks.
    from oam_core.store.metadatajson import dump_metadata_column

    record_type = check_record_type(record_type)
    if isinstance(contents, (str, bytes)) or not isinstance(contents, (list, tuple)):
        raise ValueError(f"contents must be a list of str or None, got {contents!r}")
    n = len(contents)
    ids = _resolve_ids(record_ids, n, record_type)
    b_index = (
        broadcast(index_texts, "index_texts", n) if index_texts is not NOT_SET else [NOT_SET] * n
    )
    matrix = _vector_matrix(embeddings, n, ctx.vector_dim) if index_texts is NOT_SET else None
    if matrix is not None or embeddings is NOT_SET or embeddings is None:
        b_emb: list[Any] = [NOT_SET] * n
    else:
        if not isinstance(embeddings, (list, tuple, np.ndarray)) or len(embeddings) != n:
            got = (
                f"an array of shape {embeddings.shape}"
                if isinstance(embeddings, np.ndarray)
                else f"{len(embeddings)} entries"
                if isinstance(embeddings, (list, tuple))
                else repr(embeddings)
            )
            raise ValueError(f"embeddings must hold one entry per content ({n}), got {got}")
        b_emb = list(embeddings)
    b_thread = _scope_column(thread_ids, n, "thread_ids")
    b_user = _scope_column(user_ids, n, "user_ids")
    b_agent = _scope_column(agent_ids, n, "agent_ids")
    is_message = record_type == MESSAGE
    b_roles = broadcast(None if roles is NOT_SET or not is_message else roles, "roles", n)
    b_ts = broadcast(None if timestamps is NOT_SET else timestamps, "timestamps", n)
    b_meta = broadcast(None if metadata is NOT_SET else metadata, "metadata", n)
    b_ttl = broadcast(ttl_days, "ttl_days", n)
    b_anchor = broadcast(ttl_anchor, "ttl_anchor", n)
    if record_type in PROFILE_TYPES and any(
        v is not None for column in (b_thread, b_user, b_agent) for v in column
    ):
        raise ValueError(f"{record_type} records are unscoped; do not pass scope ids")
    # One TTL for every row when the options are scalars and do not read the timestamp.
    same_ttl = not isinstance(ttl_days, (list, tuple)) and not anchors_on_timestamp(ttl_anchor)
    if same_ttl and n:
        expires_all = resolve_ttl(
            record_type, ttl_days, ttl_anchor, None, ctx.now, ctx.retention, "row 0"
        )
    ts_list = isinstance(timestamps, (list, tuple))
    meta_json_column = dump_metadata_column(b_meta, library=library)
    is_profile = record_type in PROFILE_TYPES
    family = family_of(record_type)
    if (
        matrix is not None
        and same_ttl
        and not is_message
        and not is_profile
        and b_ts.count(None) == n
        and all(type(c) is str for c in contents)
    ):
        texts = cast("list[str]", list(contents))
        check_texts(texts, "contents")
        return BulkPlan(
            family,
            record_type,
            ids,
            texts,
            b_thread,
            b_user,
            b_agent,
            meta_json_column,
            expires_all,
            matrix,
        )
    matrix_rows = None if matrix is None else list(matrix)  # row views, made in one loop
    plans: list[RowPlan] = []
    for i in range(n):
        meta = b_meta[i]
        meta_json = meta_json_column[i]
        content = contents[i]
        if content is None and isinstance(meta, Mapping) and "content" in meta:
            content = meta["content"]
        if content is not None and not isinstance(content, str):
            raise ValueError(f"contents[{i}] must be a str or None, got {content!r}")
        role = b_roles[i]
        if is_message:
            if content is None:
                raise ValueError(f"contents[{i}]: message content must be a str, got None")
            if role is not None:
                check_role(role, f"roles[{i}]")  # a non-blank str
                check_text(role, f"roles[{i}]")
        if is_profile and content is None:
            raise ValueError(f"contents[{i}]: a profile needs its information text")
        ts = b_ts[i]
        if ts is not None:
            ts_name = f"timestamps[{i}]" if ts_list else "timestamps"
            if isinstance(ts, str):
                check_text(ts, ts_name)
            ts = normalize_timestamp(ts, ts_name)
        if same_ttl:
            expires = expires_all
        else:
            expires = resolve_ttl(
                record_type,
                b_ttl[i],
                b_anchor[i],
                ts,
                ctx.now,
                ctx.retention,
                f"row {i}",
                ttl_name=f"ttl_days[{i}]" if isinstance(ttl_days, (list, tuple)) else "ttl_days",
                anchor_name=(
                    f"ttl_anchor[{i}]" if isinstance(ttl_anchor, (list, tuple)) else "ttl_anchor"
                ),
                timestamp_name=f"timestamps[{i}]" if ts_list else "timestamps",
            )
        entry: object = b_index[i]
        if matrix_rows is not None:  # one vector for the whole text (never split)
            has_text = bool(content) and not content.isspace()
            chunk_plans = [ChunkPlan(content if has_text else None, matrix_rows[i])]
        else:
            chunks, owned = retrieval_chunks(entry, content, ctx, f"index_texts[{i}]")
            whole: str | None = entry if isinstance(entry, str) else cast("str | None", content)
            chunk_plans = attach_vectors(chunks, owned, b_emb[i], whole, ctx, f"embeddings[{i}]")
            take_sources(chunk_plans)
        thread, user, agent = b_thread[i], b_user[i], b_agent[i]
        if record_type == "user_profile":
            chunk_scope: tuple[str | None, str | None, str | None] = (None, ids[i], None)
        elif record_type == "agent_profile":
            chunk_scope = (None, None, ids[i])
        else:
            chunk_scope = (thread, user, agent)
        plans.append(
            RowPlan(
                family=family,
                id=ids[i],
                record_type=record_type,
                content=content,
                role=role if is_message else None,
                thread_id=thread,
                user_id=user,
                agent_id=agent,
                timestamp=ts,
                metadata=meta_json,
                expires_at=expires,
                chunks=chunk_plans,
                chunk_scope=chunk_scope,
            )
        )
    check_texts([p.content for p in plans], "contents")
    if matrix is None:
        check_dims(
            [c.vector for p in plans for c in p.chunks if c.vector is not None], ctx.vector_dim
        )
    return plans


def _vector_matrix(embeddings: object, n: int, store_dim: int | None) -> Vector | None:
    """``embeddings`` as one float32 array of shape ``(n, dim)`` when it is a 2-D
    numeric array (one vector per record), checked in one pass; None for any other
    shape (then each entry is read on its own, ``split_vectors``).

    Raises:
        ValueError: for a row count other than ``n``, an empty dimension, NaN or
            infinite values (naming the first such row), or a dimension other than
            the store's.
    """
    if not isinstance(embeddings, np.ndarray) or embeddings.ndim != 2:
        return None
    if embeddings.dtype.kind not in "fiub":
        return None
    if len(embeddings) != n:
        raise ValueError(
            f"embeddings must hold one entry per content ({n}), got an array of shape "
            f"{embeddings.shape}"
        )
    if n == 0:
        return None
    with np.errstate(over="ignore"):  # out of float32's range: refused below
        mat = np.asarray(embeddings, dtype=np.float32)
    if mat.shape[1] == 0:
        raise ValueError(f"embeddings[0] must be a non-empty 1-D vector, got shape {(0,)}")
    check_vector_rows(mat, lambda i: f"embeddings[{i}]")
    check_dims([mat[0]], store_dim)
    return lengthen_short_rows(mat)


def _scope_column(value: object, n: int, name: str) -> list[str | None]:
    """A scope id argument broadcast over ``n`` rows, each distinct value checked
    once (``_scope_id``); errors name the first bad row."""
    if value is NOT_SET or value is None:
        return [None] * n
    column = broadcast(value, name, n)
    try:
        distinct = set(column)
    except TypeError:  # an unhashable entry: find and name it row by row
        distinct = None
    if distinct is None or not all(scope_ok(v) for v in distinct):
        for i, v in enumerate(column):
            check_scope_id(v, f"{name}[{i}]")
    return column


def _resolve_ids(record_ids: object, n: int, record_type: str) -> list[str]:
    if record_ids is NOT_SET or record_ids is None:
        if record_type in PROFILE_TYPES:
            raise ValueError(f"{record_type} records need record_ids (the user or agent id)")
        return [str(uuid.uuid4()) for _ in range(n)]
    if isinstance(record_ids, str):
        if n != 1:
            raise ValueError(f"a single record id {record_ids!r} given for {n} records")
        return [check_id(record_ids, "record_ids")]
    ids = broadcast(record_ids, "record_ids", n)
    nones = ids.count(None)
    if nones == n:
        return _resolve_ids(None, n, record_type)
    if nones:
        raise ValueError("record_ids must be all given or all omitted, got a partial list")
    if set(map(type, ids)) != {str} or "" in ids:
        for k, i in enumerate(ids):
            check_id(i, f"record_ids[{k}]")
    checked = cast("list[str]", ids)
    check_texts(checked, "record_ids")
    if len(set(checked)) != n:
        raise ValueError(f"duplicate record ids in one call: {name_ids(duplicates(checked))}")
    return checked


def duplicates(ids: Sequence[str]) -> list[str]:
    """The ids that occur more than once in ``ids``, sorted."""
    seen: set[str] = set()
    return sorted({i for i in ids if i in seen or seen.add(i)})  # type: ignore[func-returns-value]


NAMED_IDS = 5
"""Most ids an error message lists (``name_ids``)."""


def name_ids(ids: Iterable[str], limit: int = NAMED_IDS) -> str:
    """The ids for an error message: all of them as a sorted list when there are at
    most ``limit``, else the first ``limit`` and the count
    (``['a', 'b', 'c', 'd', 'e', ...] (9000 ids)``), so a clash of thousands of ids
    does not make a message of megabytes."""
    ordered = sorted(set(ids))
    if len(ordered) <= limit:
        return repr(ordered)
    shown = ", ".join(repr(i) for i in ordered[:limit])
    return f"[{shown}, ...] ({len(ordered)} ids)"
