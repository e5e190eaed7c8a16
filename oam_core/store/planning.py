"""Write planning: validate a write and turn it into row plans (docs/store.md#what-is-stored-and-what-is-searched, docs/store.md#ttl-and-retention).

Everything here is pure (no I/O): it checks arguments, broadcasts scalars, resolves
content fallbacks, retrieval text, chunks, explicit vectors and TTL, and returns plans
that a back end executes in one transaction. Any ``ValueError`` is raised before a
back end is touched, so a rejected call writes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.records import (
    EXPIRING_TYPES,
    RECORD_TYPES,
    THREAD,
)
from oam_core.apis.storable import check_json_text as check_json_text
from oam_core.apis.storable import check_text as check_text
from oam_core.apis.storable import storable as storable
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.store.chunking import chunk_text
from oam_core.store.options import MemoryRetentionConfig
from oam_core.store.ttl import expiry, parse_iso_timestamp, resolve_ttl_days

Vector = npt.NDArray[np.float32]
MAX_ROWS = 2**31 - 1
"""Bound that counts and positions (``k``, ``limit``, ``start``/``end``) are clamped
to: far above any result a store can return, small enough that sums of a few of them
stay within every database's 64-bit integers (docs/store.md, "Limits")."""


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


def check_record_type(record_type: object, *, allow_thread: bool = False) -> str:
    """Return ``record_type`` if known, else raise ValueError naming it."""
    if not isinstance(record_type, str) or record_type not in RECORD_TYPES:
        raise ValueError(f"record_type must be one of {sorted(RECORD_TYPES)}, got {record_type!r}")
    if record_type == THREAD and not allow_thread:
        raise ValueError("record_type 'thread' cannot be written with add(); create a thread")
    return record_type


def check_id(value: object, name: str) -> str:
    """Return ``value`` if it is a non-empty string a store can hold.

    Raises:
        ValueError: naming ``name``, for a non-string, an empty string, or one with
            a NUL character or a lone surrogate.
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return check_text(value, name)


def lookup_id(value: object, name: str) -> bool:
    """Check an id used to look records up (get, delete, list and search scopes).

    Returns:
        Whether a record could have this id; False for a string with a NUL or lone
        surrogate, which no store holds, so the lookup finds nothing.

    Raises:
        ValueError: naming ``name``, for a non-string or an empty string.
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return storable(value)


def clamp_count(value: int) -> int:
    """``value`` bounded to ``[-MAX_ROWS, MAX_ROWS]`` (huge ``k``/``limit``/positions
    behave as "everything")."""
    return max(-MAX_ROWS, min(MAX_ROWS, value))


def broadcast(name: str, value: Any, n: int) -> list[Any]:
    """Broadcast a scalar over ``n`` rows, or check a list has ``n`` entries.

    ``NOT_SET`` broadcasts as ``NOT_SET``. A 1-D numpy array (a column of a data
    frame, say) is a list of its values as Python objects.

    Raises:
        ValueError: if a list's length is not ``n``.
    """
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} has {len(value)} entries but contents has {n}")
        return list(value)
    return [value] * n


def to_vector(value: object, name: str) -> Vector:
    """Convert one vector to a finite, non-empty float32 array of shape ``(dim,)``.

    Raises:
        ValueError: for an empty, non-numeric, non-1-D or non-finite vector.
    """
    try:
        given = value if isinstance(value, np.ndarray) else np.asarray(value)
        if given.dtype.kind not in "fiub":  # text, complex or objects: not read as numbers
            raise TypeError(given.dtype)
        with np.errstate(over="ignore"):  # out of float32's range: refused below
            arr = np.asarray(given, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a list of floats, got {value!r}") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D vector, got shape {arr.shape}")
    check_vector_rows(arr[None, :], lambda _: name)
    row: Vector = lengthen_short_rows(arr[None, :])[0]
    return row


_F32_MAX = float(np.finfo(np.float32).max)


def check_vector_rows(rows: Vector, name: Callable[[int], str]) -> None:
    """Refuse vectors a cosine distance cannot be computed for: NaN or infinite
    values (as float32), or a squared length past float32's range.

    Args:
        rows: float32 array of shape ``(n, dim)``, one vector per row.
        name: ``name(i)`` names row ``i`` in errors (``embeddings[3]``).

    Raises:
        ValueError: naming the first such row.
    """
    bound = math.sqrt(_F32_MAX / rows.shape[1])
    if -bound < rows.min() and rows.max() < bound:  # NaN fails both comparisons
        return
    finite = np.isfinite(rows).all(axis=1)
    if not bool(finite.all()):
        bad = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"{name(bad)} contains NaN or infinite values (as float32)")
    squared = np.einsum("ij,ij->i", rows, rows, dtype=np.float64)
    over = np.flatnonzero(squared > _F32_MAX)
    if over.size:
        bad = int(over[0])
        raise ValueError(
            f"{name(bad)}: its squared length {squared[bad]:.3g} is past float32's range "
            f"({_F32_MAX:.3g}); scale it down (cosine distance does not depend on length)"
        )


SHORT_COMPONENT = 2.0**-50
"""A vector whose largest component is below this in absolute value (about 8.9e-16)
is scaled to unit length before it is stored or searched (``lengthen_short_rows``)."""


def lengthen_short_rows(rows: Vector) -> Vector:
    """``rows`` with every non-zero row whose components are all below
    ``SHORT_COMPONENT`` in absolute value scaled to unit length, in float64.

    The squares of components below about 1e-19 underflow float32, so such a vector
    would otherwise have length 0 when a back end (the embedded vector index,
    pgvector, Oracle) computes its cosine distance in float32, and rank as a zero
    vector. The cosine distance does not depend on length, so the direction is all
    that is kept. ``rows`` itself (possibly the caller's array) is never modified: a
    copy is returned when a row changes (docs/store.md#what-is-stored-and-what-is-searched).

    Args:
        rows: float32 array of shape ``(n, dim)``, finite (``check_vector_rows``).
    """
    if rows.size == 0:
        return rows
    # One cheap float32 pass finds the candidates; the float64 work is theirs only.
    peak = np.maximum(rows.max(axis=1), -rows.min(axis=1))
    short = np.flatnonzero((peak < SHORT_COMPONENT) & (peak > 0))
    if short.size == 0:
        return rows
    out = np.array(rows, dtype=np.float32, copy=True)
    wide = rows[short].astype(np.float64)
    # Scale by the peak first: the squares of the scaled rows cannot underflow.
    wide /= peak[short, None].astype(np.float64)
    wide /= np.linalg.norm(wide, axis=1, keepdims=True)
    out[short] = wide.astype(np.float32)
    return out


def split_vectors(value: object, name: str) -> list[Vector] | Vector:
    """Read an embedding entry: one vector, or a list of chunk vectors.

    Returns:
        A single float32 vector, or a list (possibly empty) of them.
    """
    if isinstance(value, np.ndarray):
        if value.ndim == 2:
            return [to_vector(row, f"{name}[{i}]") for i, row in enumerate(value)]
        if value.ndim == 1 and value.size == 0:
            return []
        return to_vector(value, name)
    if isinstance(value, (list, tuple)):
        if not value:
            return []
        if all(isinstance(v, (list, tuple, np.ndarray)) for v in value):
            return [to_vector(v, f"{name}[{i}]") for i, v in enumerate(value)]
        return to_vector(value, name)
    raise ValueError(f"{name} must be a vector or a list of vectors, got {value!r}")


def check_dims(vectors: Sequence[Vector], store_dim: int | None) -> int | None:
    """Check all vectors share one dimension equal to the store's; return it.

    Raises:
        ValueError: naming both dimensions on a mismatch.
    """
    dims = {int(v.shape[0]) for v in vectors}
    if len(dims) > 1:
        raise ValueError(f"all vectors of one call must share a dimension, got {sorted(dims)}")
    if not dims:
        return store_dim
    dim = dims.pop()
    if store_dim is not None and dim != store_dim:
        raise ValueError(f"vector dimension {dim} does not match the store's dimension {store_dim}")
    return dim


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


def check_texts(values: Sequence[str | None], name: str) -> None:
    """``check_text`` on every string of ``values`` (None is skipped), naming
    ``name[i]``: one pass over all of them, row by row only to name a bad one.

    Raises:
        ValueError: as ``check_text``, for the first bad entry.
    """
    try:
        joined = "".join(values)  # type: ignore[arg-type]
    except TypeError:  # a None among them
        joined = "".join([v for v in values if v is not None])
    if "\x00" not in joined:
        if joined.isascii():
            return
        try:
            joined.encode("utf-8")  # refuses lone surrogates; ~6x faster than the regex
            return
        except UnicodeEncodeError:
            pass
    for i, v in enumerate(values):
        if v is not None:
            check_text(v, f"{name}[{i}]")


def _scope_id(value: object, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name} must be a non-empty string or None, got {value!r}")
    return check_text(value, name)


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
