"""Write planning: validate a write and turn it into row plans (docs/store.md#what-is-stored-and-what-is-searched, docs/store.md#ttl-and-retention).

Everything here is pure (no I/O): it checks arguments, broadcasts scalars, resolves
content fallbacks, retrieval text, chunks, explicit vectors and TTL, and returns plans
that a back end executes in one transaction. Any ``ValueError`` is raised before a
back end is touched, so a rejected call writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import (
    EXPIRING_TYPES,
)
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.checks import Vector, check_text, split_vectors
from oam_core.errors import InvalidArgumentError
from oam_core.store.options import MemoryRetentionConfig
from oam_core.store.text import chunk_text
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
    """One record to insert, with its search rows; ``valid_from``/``valid_until``:
    its validity window (aware datetimes, None = open; always None for messages and
    profiles), copied to the search rows."""

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
    valid_from: datetime | None = None
    valid_until: datetime | None = None


@dataclass(frozen=True, slots=True)
class BulkPlan:
    """Records of one ``add`` call in the bulk shape, column by column: every record
    has text and one given vector, a scope and the same expiry, and nothing is read
    row by row (no message, profile, timestamp, validity window, retrieval text or
    per-row TTL). Each
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


_F32_MAX = float(np.finfo(np.float32).max)


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
                raise InvalidArgumentError(f"{name}[{i}] must be a string chunk, got {item!r}")
            check_text(item, f"{name}[{i}]")
        return [c for c in index if c], True
    raise InvalidArgumentError(f"{name} must be a string, a list of strings or None, got {index!r}")


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
            raise InvalidArgumentError(
                f"{name}: one vector given for {len(chunks)} caller chunks; give one per chunk"
            )
        text = chunks[0] if caller_owned and chunks else (whole_text if chunks else None)
        return [ChunkPlan(text, vectors)]
    if not vectors:
        if chunks:
            raise InvalidArgumentError(f"{name}: an empty vector list needs empty retrieval text")
        return []
    if not caller_owned:
        raise InvalidArgumentError(
            f"{name}: several vectors need caller-owned chunks (a list of strings in index_texts)"
        )
    if len(vectors) != len(chunks):
        raise InvalidArgumentError(f"{name}: {len(vectors)} vectors for {len(chunks)} chunks")
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
            raise InvalidArgumentError(
                f"{record_type} records do not expire; ttl_days/ttl_anchor not allowed"
            )
        return None
    anchor = TimeToLiveAnchor.CREATED_AT if ttl_anchor is NOT_SET else ttl_anchor
    if not isinstance(anchor, TimeToLiveAnchor):
        try:
            anchor = TimeToLiveAnchor(anchor)
        except ValueError:
            raise InvalidArgumentError(
                f"{anchor_name} must be a TimeToLiveAnchor, got {ttl_anchor!r}"
            ) from None
    days = resolve_ttl_days(ttl_days, retention, ttl_name)  # type: ignore[arg-type]
    if anchor is TimeToLiveAnchor.TIMESTAMP:
        base = parse_iso_timestamp(timestamp, what=f"{timestamp_name} (ttl_anchor=TIMESTAMP)")
    else:
        base = created
    return expiry(base, days)


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
