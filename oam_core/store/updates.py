"""``OracleMemoryStore.update``: check the fields given, plan the new search rows, then
change the record in one transaction (docs/store.md#reading-updating-deleting and
docs/store.md#what-is-stored-and-what-is-searched)."""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import numpy as np

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.records import EXPIRING_TYPES, MESSAGE, PROFILE_TYPES, family_of
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.store import planning
from oam_core.store.backend import StoredRow, Tx
from oam_core.store.metadatajson import RESERVED_KEY, dump_metadata
from oam_core.store.planning import ChunkPlan
from oam_core.store.quotes import take_sources
from oam_core.store.runtime import StoreRuntime
from oam_core.store.timestamps import normalize_timestamp

__all__ = ["keep_reserved", "update_record"]


def update_record(
    store: StoreRuntime,
    record_type: str,
    record_id: str,
    *,
    text: Maybe[str | None],
    index_text: Maybe[str | Sequence[str] | None],
    embedding: Maybe[Any],
    metadata: Maybe[dict[str, Any] | None],
    timestamp: Maybe[str | datetime | None],
    ttl_days: Maybe[int | None],
    ttl_anchor: Maybe[TimeToLiveAnchor],
) -> int:
    """The body of ``OracleMemoryStore.update`` (same arguments, result and errors)."""
    record_type = planning.check_record_type(record_type)
    findable = planning.lookup_id(record_id, "record_id")
    given = {
        k: v
        for k, v in {
            "text": text,
            "index_text": index_text,
            "embedding": embedding,
            "metadata": metadata,
            "timestamp": timestamp,
            "ttl_days": ttl_days,
            "ttl_anchor": ttl_anchor,
        }.items()
        if v is not NOT_SET
    }
    if not given:
        raise ValueError(
            "update needs at least one of text, index_text, embedding, "
            "metadata, timestamp, ttl_days, ttl_anchor"
        )
    if text is None:
        if record_type in PROFILE_TYPES:
            raise ValueError(f"text=None is not allowed on {record_type} records")
        if index_text is not NOT_SET and index_text is not None:
            raise ValueError("text=None cannot be combined with a non-null index_text")
        if embedding is not NOT_SET and embedding is not None:
            raise ValueError("text=None cannot be combined with a non-null embedding")
    if text is not NOT_SET and text is not None:
        if not isinstance(text, str):
            raise ValueError(f"text must be a str or None, got {text!r}")
        planning.check_text(text, "text")
    if record_type == MESSAGE and text is None:
        raise ValueError("text=None is not allowed on messages (content must be a str)")
    if index_text is None and embedding is not NOT_SET and embedding is not None:
        vectors = planning.split_vectors(embedding, "embedding")
        if isinstance(vectors, np.ndarray) or vectors:
            raise ValueError("index_text=None deletes the search rows; no embedding allowed")
    if timestamp is not NOT_SET:
        if isinstance(timestamp, str):
            planning.check_text(timestamp, "timestamp")
        timestamp = normalize_timestamp(timestamp, "timestamp")
    meta_json = dump_metadata(metadata) if metadata is not NOT_SET else None
    if record_type not in EXPIRING_TYPES and (ttl_days is not NOT_SET or ttl_anchor is not NOT_SET):
        raise ValueError(f"{record_type} records do not expire; ttl_days/ttl_anchor not allowed")

    ctx = store.plan_context()
    new_chunks: builtins.list[ChunkPlan] | None = None  # None: keep the search rows
    embedding_only = text is NOT_SET and index_text is NOT_SET
    if text is None or (index_text is None and index_text is not NOT_SET):
        new_chunks = []
    elif not embedding_only:
        source: Any = index_text if index_text is not NOT_SET else text
        chunks, owned = planning.retrieval_chunks(source, None, ctx, "index_text")
        whole = source if isinstance(source, str) else None
        new_chunks = planning.attach_vectors(chunks, owned, embedding, whole, ctx, "embedding")
        take_sources(new_chunks)
    explicit: builtins.list[Any] | None = None
    if embedding_only and embedding is not NOT_SET and embedding is not None:
        split = planning.split_vectors(embedding, "embedding")
        explicit = [split] if isinstance(split, np.ndarray) else split
        planning.check_dims(explicit, store.vector_dim)
    if new_chunks is not None:
        planning.check_dims(
            [c.vector for c in new_chunks if c.vector is not None], store.vector_dim
        )
    if not findable:  # no record can have this id
        return 0
    if new_chunks is not None:
        store.embed_plans(new_chunks)

    with store.writing() as tx:
        row = tx.fetch(family_of(record_type), record_id)
        if row is None or row.record_type != record_type:
            return 0
        _keep_vectors(tx, row, new_chunks, embedding, record_id)
        fields: dict[str, Any] = {}
        if text is not NOT_SET:
            fields["content"] = text
        if metadata is not NOT_SET:
            fields["metadata"] = keep_reserved(meta_json, row.metadata)
        if timestamp is not NOT_SET:
            fields["timestamp"] = timestamp
        if ttl_days is not NOT_SET or ttl_anchor is not NOT_SET:
            event_ts = timestamp if timestamp is not NOT_SET else row.timestamp
            fields["expires_at"] = planning.resolve_ttl(
                record_type,
                ttl_days,
                ttl_anchor,
                event_ts,
                row.created_at,
                store.retention,
                "update",
            )
        if embedding_only and embedding is not NOT_SET:
            new_chunks = _revector(tx, row, explicit)
        if "content" in fields:  # rows quoting the old text go with it
            tx.drop_quoting(row.key)
        if fields:
            tx.update_row(row, fields)
        if "expires_at" in fields:
            tx.clamp_quoting(row.key)
        if new_chunks is not None:
            store.storing_rows(tx, new_chunks)
            tx.replace_chunks(row, new_chunks)
    return 1


def _keep_vectors(
    tx: Tx,
    row: StoredRow,
    new_chunks: builtins.list[ChunkPlan] | None,
    embedding: Maybe[Any],
    record_id: str,
) -> None:
    """Refuse a text update that would silently drop the record's vectors: on a store
    without an embedder, new search rows get no vector unless ``embedding`` is given
    (docs/store.md#what-is-stored-and-what-is-searched).

    Raises:
        ValueError: ``embedding`` omitted, the new search rows lack vectors and the
            record's current search rows hold some.
    """
    if embedding is not NOT_SET or not new_chunks:
        return
    if all(c.vector is not None or c.needs_embedding or not c.text for c in new_chunks):
        return
    if tx.has_vectors(row.key):
        raise ValueError(
            f"update of {row.record_type} {record_id!r}: a text update on a store without "
            "an embedder needs embedding=... (the record's search rows hold vectors that "
            "would be lost); pass embedding=<vector>, or embedding=None to store the new "
            "search rows without vectors"
        )


def _revector(
    tx: Tx, row: StoredRow, vectors: builtins.list[Any] | None
) -> builtins.list[ChunkPlan]:
    """The record's search rows again, with ``vectors`` (None: without vectors)."""
    texts = tx.chunk_texts(row.key)
    if vectors is None:
        return [ChunkPlan(t) for t in texts]
    if len(vectors) == 1 and not texts:
        return [ChunkPlan(None, vectors[0])]
    if len(vectors) != len(texts):
        raise ValueError(
            f"embedding has {len(vectors)} vectors but the record has {len(texts)} search rows"
        )
    return [ChunkPlan(t, v) for t, v in zip(texts, vectors, strict=True)]


def keep_reserved(meta_json: str | None, old: dict[str, Any] | None) -> str | None:
    """The new metadata JSON with the stored ``$agent_memory`` object kept
    (docs/store.md#metadata); the new metadata cannot hold that key
    (``metadatajson.dump_metadata``)."""
    new = json.loads(meta_json) if meta_json is not None else None
    if old and isinstance(old.get(RESERVED_KEY), dict):
        new = dict(new or {})
        new[RESERVED_KEY] = old[RESERVED_KEY]
    return None if new is None else json.dumps(new, ensure_ascii=False, allow_nan=False)
