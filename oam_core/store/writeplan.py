"""Planning one ``add`` batch: parse its arguments into typed columns, then plan its
records (docs/store.md#writing-records, docs/sqlite.md#writes).

``parse_batch`` broadcasts every argument over the records and runs the checks that
read one column at a time (ids, scope ids, a 2-D vector array, metadata, a TTL shared
by every record), giving a ``WriteColumns``. ``plan_records`` turns the columns into
a ``BulkPlan`` when the call has the bulk shape (the hot path of bulk loading), else
into one ``RowPlan`` per record, with one planner per row kind (message, profile,
memory-like) that runs the checks of one record. Everything here is pure (no I/O):
any ``InvalidArgumentError`` is raised before a back end is touched, so a rejected
call writes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from oam_core import checks
from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.metadatajson import dump_metadata_column
from oam_core.apis.records import MEMORY_TYPES, MESSAGE, PROFILE_TYPES, family_of
from oam_core.apis.thread import check_role
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.checks import Vector, check_text
from oam_core.errors import InvalidArgumentError
from oam_core.store import planning
from oam_core.store.planning import (
    BulkPlan,
    ChunkPlan,
    PlanContext,
    RowPlan,
    attach_vectors,
    retrieval_chunks,
)
from oam_core.store.quotes import take_sources
from oam_core.store.timestamps import normalize_timestamp, parse_timestamp

__all__ = ["WriteColumns", "parse_batch", "plan_batch", "plan_records"]

VectorLike: TypeAlias = Sequence[float] | npt.NDArray[Any]
IndexEntry: TypeAlias = Maybe[str | Sequence[str] | None]
"""One record's ``index_texts`` entry: None or ``NOT_SET`` (use the content), a
string (chunked by the store) or caller-owned chunks."""
EmbeddingEntry: TypeAlias = Maybe[VectorLike | Sequence[VectorLike] | None]
"""One record's ``embeddings`` entry: ``NOT_SET`` (embed), None (no vector), one
vector or one vector per caller chunk."""
Scope: TypeAlias = tuple[str | None, str | None, str | None]


@dataclass(frozen=True, slots=True)
class WriteColumns:
    """The arguments of one ``add`` batch, one entry per record (scalars broadcast),
    with every check that reads a column as a whole done (``parse_batch``).

    Attributes:
        record_type: A known record type other than ``thread``.
        family: Its id family (``apis.records.family_of``).
        contents: The ``contents`` list as given (each entry checked by its row).
        ids: Checked record ids, unique, generated when omitted.
        index_texts: The ``index_texts`` entries (``NOT_SET`` when omitted).
        matrix: The vectors when ``embeddings`` is one 2-D numeric array (and
            ``index_texts`` is omitted): float32, shape ``(n, dim)``, finite, of the
            store's dimension. None otherwise.
        embeddings: The ``embeddings`` entries; all ``NOT_SET`` when they are in
            ``matrix`` or when ``embeddings`` is omitted or None.
        thread_ids, user_ids, agent_ids: Checked scope ids, None where unset (all
            None for profiles).
        roles: The roles of messages (None for other types).
        timestamps, ttl_days, ttl_anchor: As given, checked by their rows.
        metadata: The metadata dicts as given; ``metadata_json`` their checked JSON.
        expires_at: The expiry of every record when the TTL options are scalars that
            do not read the timestamp (None: never), else ``NOT_SET`` (per row).
        valid_from, valid_until: The window ends as given (``NOT_SET`` when
            omitted), read by their rows; all ``NOT_SET`` or None for messages and
            profiles.
        listed: Which of ``timestamps``, ``ttl_days``, ``ttl_anchor``,
            ``valid_from``, ``valid_until`` were given as lists (their errors name
            the row: ``timestamps[3]``).
    """

    record_type: str
    family: str
    contents: Sequence[str | None]
    ids: list[str]
    index_texts: list[IndexEntry]
    matrix: Vector | None
    embeddings: list[EmbeddingEntry]
    thread_ids: list[str | None]
    user_ids: list[str | None]
    agent_ids: list[str | None]
    roles: list[str | None]
    timestamps: list[str | datetime | None]
    metadata: list[dict[str, Any] | None]
    metadata_json: list[str | None]
    ttl_days: list[Maybe[int | None]]
    ttl_anchor: list[Maybe[TimeToLiveAnchor]]
    expires_at: Maybe[datetime | None]
    listed: frozenset[str]
    valid_from: list[Maybe[str | datetime | None]]
    valid_until: list[Maybe[str | datetime | None]]

    @property
    def n(self) -> int:
        """The number of records."""
        return len(self.ids)

    def row_name(self, name: str, i: int) -> str:
        """``name[i]`` if argument ``name`` was given as a list, else ``name``."""
        return f"{name}[{i}]" if name in self.listed else name


# -- parse --------------------------------------------------------------------------


def parse_batch(
    batch: PendingRecordBatch, ctx: PlanContext, *, library: bool = False
) -> WriteColumns:
    """Check the arguments of one batch column by column and broadcast them.

    Rules that depend on one column only (ids, scope ids, vectors given as one 2-D
    array, metadata, a shared TTL) are checked here, once per distinct value or with
    one array operation; the rules of one record are checked by ``plan_records``.

    Args:
        batch: The arguments of ``add`` (``texts`` is ``contents``).
        ctx: The store's planning facts (vector dimension, retention, clock).
        library: The library's own write, which may set the reserved
            ``$agent_memory`` metadata key (``metadatajson.dump_metadata``).

    Raises:
        InvalidArgumentError: naming the argument (``user_ids[3]``) and the value.
    """
    record_type = checks.check_record_type(batch.record_type)
    contents = _contents(batch.texts)
    n = len(contents)
    ids = _resolve_ids(batch.record_ids, n, record_type)
    index_texts: list[IndexEntry] = (
        checks.broadcast(batch.index_texts, "index_texts", n)
        if batch.index_texts is not NOT_SET
        else [NOT_SET] * n
    )
    matrix = (
        _vector_matrix(batch.embeddings, n, ctx.vector_dim)
        if batch.index_texts is NOT_SET
        else None
    )
    embeddings = _embedding_column(batch.embeddings, n, matrix)
    threads = _scope_column(batch.thread_ids, n, "thread_ids")
    users = _scope_column(batch.user_ids, n, "user_ids")
    agents = _scope_column(batch.agent_ids, n, "agent_ids")
    roles = batch.roles if record_type == MESSAGE and batch.roles is not NOT_SET else None
    b_roles = checks.broadcast(roles, "roles", n)
    ts = batch.timestamps
    timestamps = checks.broadcast(None if ts is NOT_SET else ts, "timestamps", n)
    meta = checks.broadcast(None if batch.metadata is NOT_SET else batch.metadata, "metadata", n)
    ttl_days = checks.broadcast(batch.ttl_days, "ttl_days", n)
    ttl_anchor = checks.broadcast(batch.ttl_anchor, "ttl_anchor", n)
    valid_from, valid_until = _window_columns(batch, record_type, n)
    if record_type in PROFILE_TYPES and any(v is not None for v in (*threads, *users, *agents)):
        raise InvalidArgumentError(f"{record_type} records are unscoped; do not pass scope ids")
    expires_at = _shared_expiry(batch, record_type, n, ctx)
    metadata_json = dump_metadata_column(meta, library=library)
    return WriteColumns(
        record_type=record_type,
        family=family_of(record_type),
        contents=contents,
        ids=ids,
        index_texts=index_texts,
        matrix=matrix,
        embeddings=embeddings,
        thread_ids=threads,
        user_ids=users,
        agent_ids=agents,
        roles=b_roles,
        timestamps=timestamps,
        metadata=meta,
        metadata_json=metadata_json,
        ttl_days=ttl_days,
        ttl_anchor=ttl_anchor,
        expires_at=expires_at,
        listed=_listed(batch),
        valid_from=valid_from,
        valid_until=valid_until,
    )


def _listed(batch: PendingRecordBatch) -> frozenset[str]:
    """Which of the per-row time arguments were given as lists (their errors name
    the row: ``timestamps[3]``)."""
    return frozenset(
        name
        for name, value in (
            ("timestamps", batch.timestamps),
            ("ttl_days", batch.ttl_days),
            ("ttl_anchor", batch.ttl_anchor),
            ("valid_from", batch.valid_from),
            ("valid_until", batch.valid_until),
        )
        if isinstance(value, (list, tuple))
    )


def _window_columns(
    batch: PendingRecordBatch, record_type: str, n: int
) -> tuple[list[Maybe[str | datetime | None]], list[Maybe[str | datetime | None]]]:
    """The ``valid_from`` and ``valid_until`` columns of a batch, broadcast to ``n``
    rows (parsed by each row's plan).

    Raises:
        InvalidArgumentError: for a list of the wrong length, or any window given
            for a message or profile type (naming the row).
    """
    valid_from = checks.broadcast(batch.valid_from, "valid_from", n)
    valid_until = checks.broadcast(batch.valid_until, "valid_until", n)
    if record_type not in MEMORY_TYPES:
        checks.check_windowed(
            record_type,
            [
                *_named("valid_from", batch.valid_from, valid_from),
                *_named("valid_until", batch.valid_until, valid_until),
            ],
            none_given=True,
        )
    return valid_from, valid_until


def _named(name: str, given: object, column: list[Any]) -> list[tuple[str, object]]:
    """``(name[i], value)`` of each entry of a broadcast column (``(name, value)``
    when ``given`` was a scalar), for errors that name the row."""
    if not isinstance(given, (list, tuple)):
        return [(name, given)]
    return [(f"{name}[{i}]", v) for i, v in enumerate(column)]


def _contents(texts: Sequence[str | None]) -> Sequence[str | None]:
    """``texts`` if it is a list or tuple (its entries are checked by their rows)."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, (list, tuple)):
        raise InvalidArgumentError(f"contents must be a list of str or None, got {texts!r}")
    return texts


def _resolve_ids(
    record_ids: Maybe[str | Sequence[str | None] | None], n: int, record_type: str
) -> list[str]:
    """The record ids: checked, or generated (uuid4) when omitted."""
    if record_ids is NOT_SET or record_ids is None:
        if record_type in PROFILE_TYPES:
            raise InvalidArgumentError(
                f"{record_type} records need record_ids (the user or agent id)"
            )
        return [str(uuid.uuid4()) for _ in range(n)]
    if isinstance(record_ids, str):
        if n != 1:
            raise InvalidArgumentError(f"a single record id {record_ids!r} given for {n} records")
        return [checks.check_id(record_ids, "record_ids")]
    ids = checks.broadcast(record_ids, "record_ids", n)
    nones = ids.count(None)
    if nones == n:
        return _resolve_ids(None, n, record_type)
    if nones:
        raise InvalidArgumentError(
            "record_ids must be all given or all omitted, got a partial list"
        )
    if set(map(type, ids)) != {str} or "" in ids:
        for k, i in enumerate(ids):
            checks.check_id(i, f"record_ids[{k}]")
    checked = cast("list[str]", ids)
    checks.check_texts(checked, "record_ids")
    if len(set(checked)) != n:
        raise InvalidArgumentError(
            f"duplicate record ids in one call: {planning.name_ids(planning.duplicates(checked))}"
        )
    return checked


def _vector_matrix(
    embeddings: Maybe[Sequence[Any] | npt.NDArray[Any] | None], n: int, store_dim: int | None
) -> Vector | None:
    """``embeddings`` as one float32 array of shape ``(n, dim)`` when it is a 2-D
    numeric array (one vector per record), checked in one pass; None for any other
    shape (then each entry is read on its own, ``checks.split_vectors``).

    Raises:
        InvalidArgumentError: for a row count other than ``n``, an empty dimension,
            NaN or infinite values (naming the first such row), or a dimension other
            than the store's.
    """
    if not isinstance(embeddings, np.ndarray) or embeddings.ndim != 2:
        return None
    if embeddings.dtype.kind not in "fiub":
        return None
    if len(embeddings) != n:
        raise InvalidArgumentError(
            f"embeddings must hold one entry per content ({n}), got an array of shape "
            f"{embeddings.shape}"
        )
    if n == 0:
        return None
    with np.errstate(over="ignore"):  # out of float32's range: refused below
        mat = np.asarray(embeddings, dtype=np.float32)
    if mat.shape[1] == 0:
        raise InvalidArgumentError(
            f"embeddings[0] must be a non-empty 1-D vector, got shape {(0,)}"
        )
    checks.check_vector_rows(mat, lambda i: f"embeddings[{i}]")
    checks.check_dims([mat[0]], store_dim)
    return checks.lengthen_short_rows(mat)


def _embedding_column(
    embeddings: Maybe[Sequence[Any] | npt.NDArray[Any] | None], n: int, matrix: Vector | None
) -> list[EmbeddingEntry]:
    """One ``embeddings`` entry per record; all ``NOT_SET`` when the vectors are in
    ``matrix`` or none are given."""
    if matrix is not None or embeddings is NOT_SET or embeddings is None:
        return [NOT_SET] * n
    if not isinstance(embeddings, (list, tuple, np.ndarray)) or len(embeddings) != n:
        got = (
            f"an array of shape {embeddings.shape}"
            if isinstance(embeddings, np.ndarray)
            else f"{len(embeddings)} entries"
            if isinstance(embeddings, (list, tuple))
            else repr(embeddings)
        )
        raise InvalidArgumentError(f"embeddings must hold one entry per content ({n}), got {got}")
    return list(embeddings)


def _scope_column(
    value: Maybe[str | Sequence[str | None] | None], n: int, name: str
) -> list[str | None]:
    """A scope id argument broadcast over ``n`` rows, each distinct value checked
    once; errors name the first bad row."""
    if value is NOT_SET or value is None:
        return [None] * n
    column = checks.broadcast(value, name, n)
    try:
        distinct = set(column)
    except TypeError:  # an unhashable entry: find and name it row by row
        distinct = None
    if distinct is None or not all(_scope_ok(v) for v in distinct):
        for i, v in enumerate(column):
            if not _scope_ok(v):
                _refuse_scope_id(v, f"{name}[{i}]")
    return column


def _scope_ok(value: str | None) -> bool:
    return value is None or (isinstance(value, str) and bool(value) and checks.storable(value))


def _refuse_scope_id(value: str | None, name: str) -> None:
    """Raise the error for a scope id ``_scope_ok`` refuses, naming ``name``."""
    if not isinstance(value, str) or not value:
        raise InvalidArgumentError(f"{name} must be a non-empty string or None, got {value!r}")
    check_text(value, name)  # raises: a NUL or a lone surrogate


def _shared_expiry(
    batch: PendingRecordBatch, record_type: str, n: int, ctx: PlanContext
) -> Maybe[datetime | None]:
    """The expiry of every record when the TTL options are scalars that do not read
    the timestamp (computed once), else ``NOT_SET``."""
    if isinstance(batch.ttl_days, (list, tuple)) or _timestamp_anchor(batch.ttl_anchor):
        return NOT_SET
    if not n:
        return None
    return planning.resolve_ttl(
        record_type, batch.ttl_days, batch.ttl_anchor, None, ctx.now, ctx.retention, "row 0"
    )


def _timestamp_anchor(ttl_anchor: Maybe[TimeToLiveAnchor | Sequence[TimeToLiveAnchor]]) -> bool:
    """Whether a TTL anchor argument (scalar or list) may read row timestamps."""
    if isinstance(ttl_anchor, (list, tuple)):
        return True
    return (
        ttl_anchor is TimeToLiveAnchor.TIMESTAMP or ttl_anchor == TimeToLiveAnchor.TIMESTAMP.value
    )


# -- plan -----------------------------------------------------------------------------


def plan_batch(
    batch: PendingRecordBatch, ctx: PlanContext, *, library: bool = False
) -> list[RowPlan] | BulkPlan:
    """Check and plan one batch: ``plan_records(parse_batch(batch, ctx, library=library),
    ctx)`` (docs/store.md#writing-records).

    Raises:
        InvalidArgumentError: as ``parse_batch`` and ``plan_records``; nothing is
            written then.
    """
    return plan_records(parse_batch(batch, ctx, library=library), ctx)


def plan_records(columns: WriteColumns, ctx: PlanContext) -> list[RowPlan] | BulkPlan:
    """Plan the records of one batch: a ``BulkPlan`` when it has the bulk shape (see
    ``BulkPlan``), else one ``RowPlan`` per record (docs/store.md#writing-records).

    Every rule is checked before a plan is returned (docs/sqlite.md#writes).

    Raises:
        InvalidArgumentError: for any rule of
            docs/store.md#what-is-stored-and-what-is-searched or
            docs/store.md#ttl-and-retention a record breaks, naming the argument
            (``contents[3]``) and the value.
    """
    if _bulk_shape(columns):
        return _plan_bulk(columns)
    return _plan_rows(columns, ctx)


def _bulk_shape(c: WriteColumns) -> bool:
    """Whether every record has text and one given vector, a scope and the same
    expiry, and nothing must be read row by row."""
    return (
        c.matrix is not None
        and c.expires_at is not NOT_SET
        and c.record_type != MESSAGE
        and c.record_type not in PROFILE_TYPES
        and c.timestamps.count(None) == c.n
        and all(v is NOT_SET or v is None for v in (*c.valid_from, *c.valid_until))
        and all(type(x) is str for x in c.contents)
    )


def _plan_bulk(c: WriteColumns) -> BulkPlan:
    """The records of a bulk-shaped batch as columns (``BulkPlan``)."""
    texts = cast("list[str]", list(c.contents))
    checks.check_texts(texts, "contents")
    assert c.matrix is not None  # _bulk_shape
    return BulkPlan(
        c.family,
        c.record_type,
        c.ids,
        texts,
        c.thread_ids,
        c.user_ids,
        c.agent_ids,
        c.metadata_json,
        None if c.expires_at is NOT_SET else c.expires_at,
        c.matrix,
    )


RowPlanner: TypeAlias = Callable[[WriteColumns, int, PlanContext, "list[Vector] | None"], RowPlan]
"""Plans record ``i`` of the columns; the last argument is the rows of
``WriteColumns.matrix`` (None when the vectors are not given as one array)."""


def _plan_rows(c: WriteColumns, ctx: PlanContext) -> list[RowPlan]:
    """One ``RowPlan`` per record, by the planner of the record type."""
    plan_row = _ROW_PLANNERS.get(c.record_type, _plan_memory_row)
    rows = None if c.matrix is None else list(c.matrix)  # row views, made in one loop
    plans = [plan_row(c, i, ctx, rows) for i in range(c.n)]
    checks.check_texts([p.content for p in plans], "contents")
    if c.matrix is None:
        checks.check_dims(
            [ch.vector for p in plans for ch in p.chunks if ch.vector is not None], ctx.vector_dim
        )
    return plans


def _plan_memory_row(
    c: WriteColumns, i: int, ctx: PlanContext, rows: list[Vector] | None
) -> RowPlan:
    """A memory-like record (memory, fact, preference, guideline): text optional."""
    content = _row_content(c, i)
    scope = (c.thread_ids[i], c.user_ids[i], c.agent_ids[i])
    return _row_plan(c, i, content, None, scope, ctx, rows)


def _plan_message_row(
    c: WriteColumns, i: int, ctx: PlanContext, rows: list[Vector] | None
) -> RowPlan:
    """A message: text required, role optional (a non-blank string when given)."""
    content = _row_content(c, i)
    if content is None:
        raise InvalidArgumentError(f"contents[{i}]: message content must be a str, got None")
    role = c.roles[i]
    if role is not None:
        check_role(role, f"roles[{i}]")  # a non-blank str
        check_text(role, f"roles[{i}]")
    scope = (c.thread_ids[i], c.user_ids[i], c.agent_ids[i])
    return _row_plan(c, i, content, role, scope, ctx, rows)


def _plan_profile_row(
    c: WriteColumns, i: int, ctx: PlanContext, rows: list[Vector] | None
) -> RowPlan:
    """A user or agent profile: text required; its search rows are scoped by its id."""
    content = _row_content(c, i)
    if content is None:
        raise InvalidArgumentError(f"contents[{i}]: a profile needs its information text")
    rid = c.ids[i]
    scope: Scope = (None, rid, None) if c.record_type == "user_profile" else (None, None, rid)
    return _row_plan(c, i, content, None, scope, ctx, rows)


_ROW_PLANNERS: dict[str, RowPlanner] = {
    MESSAGE: _plan_message_row,
    "user_profile": _plan_profile_row,
    "agent_profile": _plan_profile_row,
}
"""The planner of each row kind; memory-like types use ``_plan_memory_row``."""


def _row_content(c: WriteColumns, i: int) -> str | None:
    """Record ``i``'s text: its ``contents`` entry, or its metadata's ``content``
    when the entry is None."""
    content = c.contents[i]
    meta = c.metadata[i]
    if content is None and isinstance(meta, Mapping) and "content" in meta:
        content = meta["content"]
    if content is not None and not isinstance(content, str):
        raise InvalidArgumentError(f"contents[{i}] must be a str or None, got {content!r}")
    return content


def _row_plan(
    c: WriteColumns,
    i: int,
    content: str | None,
    role: str | None,
    chunk_scope: Scope,
    ctx: PlanContext,
    rows: list[Vector] | None,
) -> RowPlan:
    """Record ``i`` with its checked text, role and search-row scope: its timestamp,
    expiry and search rows are read here."""
    ts = c.timestamps[i]
    if ts is not None:
        ts = _row_timestamp(c, i, ts)
    expires = c.expires_at if c.expires_at is not NOT_SET else _row_expiry(c, i, ts, ctx)
    valid_from, valid_until = _row_window(c, i, ts)
    return RowPlan(
        family=c.family,
        id=c.ids[i],
        record_type=c.record_type,
        content=content,
        role=role,
        thread_id=c.thread_ids[i],
        user_id=c.user_ids[i],
        agent_id=c.agent_ids[i],
        timestamp=ts,
        metadata=c.metadata_json[i],
        expires_at=expires,
        chunks=_row_chunks(c, i, content, ctx, rows),
        chunk_scope=chunk_scope,
        valid_from=valid_from,
        valid_until=valid_until,
    )


def _row_window(c: WriteColumns, i: int, ts: str | None) -> tuple[datetime | None, datetime | None]:
    """Record ``i``'s validity window (docs/store.md#validity-windows): as given, an
    omitted ``valid_from`` of a memory-like record its normalized timestamp ``ts``;
    none for messages and profiles (``parse_batch`` refused one given).

    Raises:
        InvalidArgumentError: for an unparseable end, or ``valid_until <= valid_from``.
    """
    if c.record_type not in MEMORY_TYPES:
        return None, None
    given_from, given_until = c.valid_from[i], c.valid_until[i]
    if given_from is NOT_SET:
        valid_from = None if ts is None else parse_timestamp(ts, c.row_name("timestamps", i))
    else:
        valid_from = checks.window_time(given_from, c.row_name("valid_from", i))
    valid_until = (
        None
        if given_until is NOT_SET
        else checks.window_time(given_until, c.row_name("valid_until", i))
    )
    checks.check_window(valid_from, valid_until, c.row_name("valid_until", i))
    return valid_from, valid_until


def _row_timestamp(c: WriteColumns, i: int, ts: str | datetime) -> str | None:
    """Record ``i``'s timestamp ``ts``, normalized (docs/store.md#timestamps)."""
    name = c.row_name("timestamps", i)
    if isinstance(ts, str):
        check_text(ts, name)
    return normalize_timestamp(ts, name)


def _row_expiry(c: WriteColumns, i: int, ts: str | None, ctx: PlanContext) -> datetime | None:
    """Record ``i``'s expiry from its own TTL options."""
    return planning.resolve_ttl(
        c.record_type,
        c.ttl_days[i],
        c.ttl_anchor[i],
        ts,
        ctx.now,
        ctx.retention,
        f"row {i}",
        ttl_name=c.row_name("ttl_days", i),
        anchor_name=c.row_name("ttl_anchor", i),
        timestamp_name=c.row_name("timestamps", i),
    )


def _row_chunks(
    c: WriteColumns, i: int, content: str | None, ctx: PlanContext, rows: list[Vector] | None
) -> list[ChunkPlan]:
    """Record ``i``'s search rows: its retrieval text as chunks, with the vectors
    given or marked for the embedder."""
    if rows is not None:  # one vector for the whole text (never split)
        has_text = content is not None and content != "" and not content.isspace()
        return [ChunkPlan(content if has_text else None, rows[i])]
    entry = c.index_texts[i]
    chunks, owned = retrieval_chunks(entry, content, ctx, f"index_texts[{i}]")
    whole = entry if isinstance(entry, str) else content
    plans = attach_vectors(chunks, owned, c.embeddings[i], whole, ctx, f"embeddings[{i}]")
    take_sources(plans)
    return plans
