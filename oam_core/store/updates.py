"""``OracleMemoryStore.update`` in three steps (docs/store.md#reading-updating-deleting
and docs/store.md#what-is-stored-and-what-is-searched):

1. parse: ``parse_update`` checks the fields given and ``plan_search_rows`` plans the
   new search rows (no I/O but the embedder, which runs after it);
2. plan: ``plan_update`` turns the stored row and the parsed fields into the changes
   to make (pure: no I/O);
3. apply: ``update_record`` reads the row and writes the changes in one transaction.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from oam_core import checks
from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.metadatajson import RESERVED_KEY, dump_metadata
from oam_core.apis.records import EXPIRING_TYPES, MESSAGE, PROFILE_TYPES, family_of
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.checks import Vector
from oam_core.errors import InvalidArgumentError
from oam_core.store import planning
from oam_core.store.backend import StoredRow, Tx
from oam_core.store.ended import ended_by_version
from oam_core.store.options import MemoryRetentionConfig
from oam_core.store.planning import ChunkPlan, PlanContext
from oam_core.store.quotes import take_sources
from oam_core.store.runtime import StoreRuntime
from oam_core.store.timestamps import normalize_timestamp
from oam_core.store.versionlinks import MEMORY, reserved_of
from oam_core.store.writeplan import EmbeddingEntry

__all__ = [
    "RecordChanges",
    "SearchRows",
    "UpdateArgs",
    "keep_reserved",
    "parse_update",
    "plan_search_rows",
    "plan_update",
    "update_record",
]


@dataclass(frozen=True, slots=True)
class UpdateArgs:
    """The checked arguments of one ``update`` (``NOT_SET``: not given).

    Attributes:
        record_type: A known record type other than ``thread``.
        record_id: The id; ``findable`` is False when no record can have it (a NUL
            or a lone surrogate), then nothing is read or written.
        text: The new stored text (None clears it), free of NUL and lone surrogates.
        index_text, embedding: As given (read by ``plan_search_rows``).
        metadata_json: The new metadata as checked JSON text (None clears it).
        timestamp: The new timestamp, normalized (docs/store.md#timestamps).
        ttl_days, ttl_anchor: As given; only on types that expire.
        valid_from, valid_until: The new window ends (aware UTC, None: open); only
            on memory-like types.
    """

    record_type: str
    record_id: str
    findable: bool
    text: Maybe[str | None]
    index_text: Maybe[str | Sequence[str] | None]
    embedding: Maybe[EmbeddingEntry]
    metadata_json: Maybe[str | None]
    timestamp: Maybe[str | None]
    ttl_days: Maybe[int | None]
    ttl_anchor: Maybe[TimeToLiveAnchor]
    valid_from: Maybe[datetime | None] = NOT_SET
    valid_until: Maybe[datetime | None] = NOT_SET


@dataclass(frozen=True, slots=True)
class SearchRows:
    """What an update does to the record's search rows.

    Attributes:
        chunks: New search rows replacing the stored ones (marked for the embedder
            where they need a vector), or None to keep them.
        revector: For an update of the embedding alone: the vectors to give the
            stored search rows, one per row (None: store them without vectors);
            ``NOT_SET`` otherwise.
    """

    chunks: builtins.list[ChunkPlan] | None
    revector: Maybe[builtins.list[Vector] | None]


@dataclass(frozen=True, slots=True)
class RecordChanges:
    """The changes ``plan_update`` finds for one stored record (``NOT_SET``: the
    column is kept).

    Attributes:
        content, metadata, timestamp, expires_at, valid_from, valid_until: New
            column values (``metadata`` as JSON text, with the stored
            ``$agent_memory`` object kept).
        chunks: The search rows replacing the stored ones, or None to keep them.
    """

    content: Maybe[str | None]
    metadata: Maybe[str | None]
    timestamp: Maybe[str | None]
    expires_at: Maybe[datetime | None]
    chunks: builtins.list[ChunkPlan] | None
    valid_from: Maybe[datetime | None] = NOT_SET
    valid_until: Maybe[datetime | None] = NOT_SET

    def fields(self) -> dict[str, Any]:
        """The columns to set, by name (``Tx.update_row``)."""
        given = (
            ("content", self.content),
            ("metadata", self.metadata),
            ("timestamp", self.timestamp),
            ("expires_at", self.expires_at),
            ("valid_from", self.valid_from),
            ("valid_until", self.valid_until),
        )
        return {name: value for name, value in given if value is not NOT_SET}


def update_record(
    runtime: StoreRuntime,
    record_type: str,
    record_id: str,
    *,
    text: Maybe[str | None],
    index_text: Maybe[str | Sequence[str] | None],
    embedding: Maybe[EmbeddingEntry],
    metadata: Maybe[dict[str, Any] | None],
    timestamp: Maybe[str | datetime | None],
    ttl_days: Maybe[int | None],
    ttl_anchor: Maybe[TimeToLiveAnchor],
    valid_from: Maybe[str | datetime | None] = NOT_SET,
    valid_until: Maybe[str | datetime | None] = NOT_SET,
) -> int:
    """The body of ``OracleMemoryStore.update`` (same arguments, result and errors):
    parse, embed, then read the row and apply its planned changes in one transaction."""
    args = parse_update(
        record_type,
        record_id,
        text=text,
        index_text=index_text,
        embedding=embedding,
        metadata=metadata,
        timestamp=timestamp,
        ttl_days=ttl_days,
        ttl_anchor=ttl_anchor,
        valid_from=valid_from,
        valid_until=valid_until,
    )
    ctx = runtime.plan_context()
    rows = plan_search_rows(args, ctx)
    if not args.findable:  # no record can have this id
        return 0
    if rows.chunks is not None:
        runtime.embed_plans(rows.chunks)

    with runtime.writing() as tx:
        row = tx.fetch(family_of(args.record_type), args.record_id)
        if row is None or row.record_type != args.record_type:
            return 0
        _keep_vectors(tx, row, rows.chunks, args.embedding, args.record_id)
        _check_after_predecessors(tx, row, args.valid_from)
        stored = tx.chunk_texts(row.key) if rows.revector is not NOT_SET else []
        changes = plan_update(row, args, rows, runtime.retention, stored)
        _apply(runtime, tx, row, changes)
    return 1


# -- parse ----------------------------------------------------------------------------


def parse_update(
    record_type: str,
    record_id: str,
    *,
    text: Maybe[str | None],
    index_text: Maybe[str | Sequence[str] | None],
    embedding: Maybe[EmbeddingEntry],
    metadata: Maybe[dict[str, Any] | None],
    timestamp: Maybe[str | datetime | None],
    ttl_days: Maybe[int | None],
    ttl_anchor: Maybe[TimeToLiveAnchor],
    valid_from: Maybe[str | datetime | None] = NOT_SET,
    valid_until: Maybe[str | datetime | None] = NOT_SET,
) -> UpdateArgs:
    """Check the arguments of ``update`` (no I/O).

    Raises:
        InvalidArgumentError: no field given, a rejected combination of
            docs/store.md#what-is-stored-and-what-is-searched, a bad text, timestamp or
            metadata, TTL options on a type that does not expire, an unparseable
            window end, a window on a message or profile, or both ends given with
            ``valid_until <= valid_from``.
    """
    record_type = checks.check_record_type(record_type, method="update")
    findable = checks.lookup_id(record_id, "record_id")
    given = (text, index_text, embedding, metadata, timestamp, ttl_days, ttl_anchor)
    if all(v is NOT_SET for v in (*given, valid_from, valid_until)):
        raise InvalidArgumentError(
            "update needs at least one of text, index_text, embedding, "
            "metadata, timestamp, ttl_days, ttl_anchor, valid_from, valid_until"
        )
    checks.check_windowed(
        record_type, [("valid_from", valid_from), ("valid_until", valid_until)], none_given=True
    )
    new_from = NOT_SET if valid_from is NOT_SET else checks.window_time(valid_from, "valid_from")
    new_until = (
        NOT_SET if valid_until is NOT_SET else checks.window_time(valid_until, "valid_until")
    )
    if new_from is not NOT_SET and new_until is not NOT_SET:
        checks.check_window(new_from, new_until)
    _check_text(record_type, text, index_text, embedding)
    if timestamp is not NOT_SET:
        if isinstance(timestamp, str):
            checks.check_text(timestamp, "timestamp")
        timestamp = normalize_timestamp(timestamp, "timestamp")
    meta_json = dump_metadata(metadata) if metadata is not NOT_SET else NOT_SET
    if record_type not in EXPIRING_TYPES and (ttl_days is not NOT_SET or ttl_anchor is not NOT_SET):
        raise InvalidArgumentError(
            f"{record_type} records do not expire; ttl_days/ttl_anchor not allowed"
        )
    return UpdateArgs(
        record_type,
        record_id,
        findable,
        text,
        index_text,
        embedding,
        meta_json,
        timestamp,
        ttl_days,
        ttl_anchor,
        new_from,
        new_until,
    )


def _check_text(
    record_type: str,
    text: Maybe[str | None],
    index_text: Maybe[str | Sequence[str] | None],
    embedding: Maybe[EmbeddingEntry],
) -> None:
    """The rules on ``text`` and what may go with it."""
    if text is None:
        if record_type in PROFILE_TYPES:
            raise InvalidArgumentError(f"text=None is not allowed on {record_type} records")
        if index_text is not NOT_SET and index_text is not None:
            raise InvalidArgumentError("text=None cannot be combined with a non-null index_text")
        if embedding is not NOT_SET and embedding is not None:
            raise InvalidArgumentError("text=None cannot be combined with a non-null embedding")
    if text is not NOT_SET and text is not None:
        if not isinstance(text, str):
            raise InvalidArgumentError(f"text must be a str or None, got {text!r}")
        checks.check_text(text, "text")
    if record_type == MESSAGE and text is None:
        raise InvalidArgumentError("text=None is not allowed on messages (content must be a str)")
    if index_text is None and embedding is not NOT_SET and embedding is not None:
        vectors = checks.split_vectors(embedding, "embedding")
        if isinstance(vectors, np.ndarray) or vectors:
            raise InvalidArgumentError(
                "index_text=None deletes the search rows; no embedding allowed"
            )


def plan_search_rows(args: UpdateArgs, ctx: PlanContext) -> SearchRows:
    """Plan the new search rows of an update (no I/O; the embedder runs later).

    Raises:
        InvalidArgumentError: for bad retrieval text or vectors, or vectors of another
            dimension than the store's.
    """
    text, index_text, embedding = args.text, args.index_text, args.embedding
    embedding_only = text is NOT_SET and index_text is NOT_SET
    if embedding_only:
        if embedding is NOT_SET:
            return SearchRows(None, NOT_SET)
        if embedding is None:
            return SearchRows(None, None)
        split = checks.split_vectors(embedding, "embedding")
        explicit = [split] if isinstance(split, np.ndarray) else split
        checks.check_dims(explicit, ctx.vector_dim)
        return SearchRows(None, explicit)
    if text is None or index_text is None:
        return SearchRows([], NOT_SET)
    source = index_text if index_text is not NOT_SET else text
    chunks, owned = planning.retrieval_chunks(source, None, ctx, "index_text")
    whole = source if isinstance(source, str) else None
    new_chunks = planning.attach_vectors(chunks, owned, embedding, whole, ctx, "embedding")
    take_sources(new_chunks)
    checks.check_dims([c.vector for c in new_chunks if c.vector is not None], ctx.vector_dim)
    return SearchRows(new_chunks, NOT_SET)


# -- plan -----------------------------------------------------------------------------


def plan_update(
    row: StoredRow,
    args: UpdateArgs,
    rows: SearchRows,
    retention: MemoryRetentionConfig,
    stored_texts: Sequence[str | None],
) -> RecordChanges:
    """The changes an update makes to the stored ``row`` (pure: no I/O).

    Args:
        row: The record as stored.
        args: The checked arguments (``parse_update``).
        rows: The planned search rows (``plan_search_rows``), embedded.
        retention: The store's retention, for a new expiry without ``ttl_days``.
        stored_texts: The texts of the record's search rows, in order (read only
            when ``rows.revector`` is set).

    Raises:
        InvalidArgumentError: a TIMESTAMP anchor without a timestamp to count from,
            a count of vectors other than the record's search rows, or a window
            end that puts ``valid_until`` at or before ``valid_from`` (the other end
            as stored when not given).
    """
    metadata: Maybe[str | None] = NOT_SET
    if args.metadata_json is not NOT_SET:
        metadata = keep_reserved(args.metadata_json, row.metadata)
    expires_at: Maybe[datetime | None] = NOT_SET
    if args.ttl_days is not NOT_SET or args.ttl_anchor is not NOT_SET:
        event_ts = args.timestamp if args.timestamp is not NOT_SET else row.timestamp
        expires_at = planning.resolve_ttl(
            args.record_type,
            args.ttl_days,
            args.ttl_anchor,
            event_ts,
            row.created_at,
            retention,
            "update",
        )
    chunks = rows.chunks
    if rows.revector is not NOT_SET:
        chunks = _revector(stored_texts, rows.revector)
    if args.valid_from is not NOT_SET:
        _check_not_ended_by_version(row, "valid_from", args.valid_from, row.valid_from)
    if args.valid_until is not NOT_SET:
        _check_not_ended_by_version(row, "valid_until", args.valid_until, row.valid_until)
    if args.valid_from is not NOT_SET or args.valid_until is not NOT_SET:
        checks.check_window(
            row.valid_from if args.valid_from is NOT_SET else args.valid_from,
            row.valid_until if args.valid_until is NOT_SET else args.valid_until,
            "valid_until" if args.valid_until is not NOT_SET else "valid_from",
        )
    return RecordChanges(
        args.text,
        metadata,
        args.timestamp,
        expires_at,
        chunks,
        args.valid_from,
        args.valid_until,
    )


def _check_not_ended_by_version(
    row: StoredRow, name: str, value: datetime | None, stored: datetime | None
) -> None:
    """Refuse a new ``valid_from`` or ``valid_until`` (``name``) for a version a newer
    one replaced or that was invalidated (``ended.ended_by_version``): either end
    moved could make it hold again beside the other versions (docs/versions.md)."""
    why = ended_by_version(row.metadata)
    if why is None or value == stored:
        return
    shown = "None" if value is None else value.isoformat()
    raise InvalidArgumentError(
        f"{name}={shown}: memory {row.id!r} {why}; its window cannot be "
        "moved (correct the current version with update_memory instead)"
    )


def _check_after_predecessors(tx: Tx, row: StoredRow, value: Maybe[datetime | None]) -> None:
    """Refuse a new ``valid_from`` for ``row`` that starts it before a version it
    replaced ends (a version listed in its ``supersedes`` that names it back): both
    would hold then, two current versions of one memory (docs/versions.md). ``None``
    (no start) is such a start; a later one leaves a gap, which is allowed."""
    if value is NOT_SET or value == row.valid_from:
        return
    listed = reserved_of(row).get("supersedes")
    for pid in listed if isinstance(listed, builtins.list) else []:
        older = tx.fetch(MEMORY, pid) if isinstance(pid, str) else None
        if older is None or reserved_of(older).get("superseded_by") != row.id:
            continue
        end = older.valid_until
        if end is not None and (value is None or value < end):
            shown = "None" if value is None else value.isoformat()
            raise InvalidArgumentError(
                f"valid_from={shown}: memory {row.id!r} replaced {older.id!r}, which holds "
                f"until {end.isoformat()}; a start before that would make both hold "
                "(start it at or after that time)"
            )


def _revector(
    texts: Sequence[str | None], vectors: builtins.list[Vector] | None
) -> builtins.list[ChunkPlan]:
    """The record's search rows again, with ``vectors`` (None: without vectors)."""
    if vectors is None:
        return [ChunkPlan(t) for t in texts]
    if len(vectors) == 1 and not texts:
        return [ChunkPlan(None, vectors[0])]
    if len(vectors) != len(texts):
        raise InvalidArgumentError(
            f"embedding has {len(vectors)} vectors but the record has {len(texts)} search rows"
        )
    return [ChunkPlan(t, v) for t, v in zip(texts, vectors, strict=True)]


def keep_reserved(meta_json: str | None, old: dict[str, Any] | None) -> str | None:
    """The new metadata JSON with the stored ``$agent_memory`` object kept
    (docs/store.md#metadata); the new metadata can hold that key only with the
    caller's ``MANAGED_MARK`` (``metadatajson.dump_metadata``), which is added to it."""
    new = json.loads(meta_json) if meta_json is not None else None
    if old and isinstance(old.get(RESERVED_KEY), dict):
        new = dict(new or {})
        new[RESERVED_KEY] = {**old[RESERVED_KEY], **(new.get(RESERVED_KEY) or {})}
    return None if new is None else json.dumps(new, ensure_ascii=False, allow_nan=False)


# -- apply ----------------------------------------------------------------------------


def _keep_vectors(
    tx: Tx,
    row: StoredRow,
    new_chunks: builtins.list[ChunkPlan] | None,
    embedding: Maybe[EmbeddingEntry],
    record_id: str,
) -> None:
    """Refuse a text update that would silently drop the record's vectors: on a store
    without an embedder, new search rows get no vector unless ``embedding`` is given
    (docs/store.md#what-is-stored-and-what-is-searched).

    Raises:
        InvalidArgumentError: ``embedding`` omitted, the new search rows lack vectors
            and the record's current search rows hold some.
    """
    if embedding is not NOT_SET or not new_chunks:
        return
    if all(c.vector is not None or c.needs_embedding or not c.text for c in new_chunks):
        return
    if tx.has_vectors(row.key):
        raise InvalidArgumentError(
            f"update of {row.record_type} {record_id!r}: a text update on a store without "
            "an embedder needs embedding=... (the record's search rows hold vectors that "
            "would be lost); pass embedding=<vector>, or embedding=None to store the new "
            "search rows without vectors"
        )


def _apply(runtime: StoreRuntime, tx: Tx, row: StoredRow, changes: RecordChanges) -> None:
    """Write ``changes`` to ``row`` in ``tx``: the rows quoting an old text go with it,
    a new expiry reaches the rows quoting the record."""
    fields = changes.fields()
    if "content" in fields:
        tx.drop_quoting(row.key)
    if fields:
        tx.update_row(row, fields)
    if "expires_at" in fields:
        tx.clamp_quoting(row.key)
    if changes.chunks is not None:
        runtime.storing_rows(tx, changes.chunks)
        tx.replace_chunks(row, changes.chunks)
