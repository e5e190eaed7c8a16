"""``import_mem0``: read the JSON that mem0's ``Memory.get_all()`` returns into a store
(docs/migrating.md#bringing-mem0s-memories-along).

Accepted shapes: the object ``{"results": [...], ...}`` of mem0 1.x (other keys,
such as ``relations``, are ignored) or the bare list of older versions. Each item is
a memory: ``id``, ``memory`` (the text), ``user_id``/``agent_id``/``run_id``
(scope), ``metadata``, ``created_at``, ``updated_at``, and optionally ``hash``,
``actor_id`` and ``role``.

Each becomes a ``memory`` record that keeps the mem0 id, with ``user_id`` and
``agent_id`` as they were and ``run_id`` as its ``thread_id`` (a mem0 run is one
session, an oam thread); ``created_at`` is kept as the record's store time and
``expiration_date`` becomes the record's expiry; the mem0 metadata is kept as it
was, and the rest of the item (hash, updated_at, actor_id, role, categories,
immutable) is kept under the library's reserved key, in
``metadata["$agent_memory"]["mem0"]``. The text is chunked and embedded with the
target store's embedder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

import orjson

from oam_core.apis.metadatajson import RESERVED_KEY, dump_metadata
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import DumpChunk, DumpRow
from oam_core.store.base import OracleMemoryStore
from oam_core.store.dumprows import OnConflict
from oam_core.store.text import chunk_text
from oam_core.store.ttl import iso, parse_iso_timestamp
from oam_core.transfer.io import Target, open_read
from oam_core.transfer.precheck import Where, refuse_stored
from oam_core.transfer.reader import BATCH_ROWS, BatchWriter, check_options, reembed_rows
from oam_core.transfer.summary import TransferError, TransferSummary
from oam_core.transfer.writer import Progress

MEM0_KEY = "mem0"
"""The key under ``metadata["$agent_memory"]`` (the library's reserved key, so never
one of the user's own) holding the mem0 fields that have no oam column."""
_KEPT = ("hash", "updated_at", "actor_id", "role", "categories", "immutable")
_DATE_ONLY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _items(value: Any) -> list[Any]:
    if isinstance(value, Mapping) and isinstance(value.get("results"), list):
        return list(value["results"])
    if isinstance(value, list):
        return value
    raise InvalidArgumentError(
        'source: not mem0 get_all() output (expected {"results": [...]} or a list of '
        f"memories), got {type(value).__name__}"
    )


def _opt(item: Mapping[str, Any], key: str, i: int) -> str | None:
    value = item.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidArgumentError(f"memories[{i}].{key} must be a string, got {value!r}")
    return value


def to_row(item: Any, i: int, chunk_chars: int, now: str) -> DumpRow:
    """The ``DumpRow`` of one mem0 memory (vectors still to embed).

    Raises:
        InvalidArgumentError: naming ``memories[i]`` and the field that is missing or
            wrong (metadata holding the library's reserved key included).
    """
    if not isinstance(item, Mapping):
        raise InvalidArgumentError(f"memories[{i}] must be an object, got {type(item).__name__}")
    rid = _opt(item, "id", i)
    text = item.get("memory")
    if rid is None:
        raise InvalidArgumentError(f"memories[{i}] has no id")
    if not isinstance(text, str):
        raise InvalidArgumentError(f"memories[{i}] ({rid}): memory must be a string, got {text!r}")
    meta = item.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        raise InvalidArgumentError(f"memories[{i}] ({rid}): metadata must be an object or null")
    name = f"memories[{i}].metadata"
    dump_metadata(meta, name)  # the user's own: refuses the reserved key
    merged: dict[str, Any] = dict(meta or {})
    extra = {k: item[k] for k in _KEPT if item.get(k) is not None}
    if extra:
        # beside the managed mark, the one reserved object the user's metadata may hold
        merged[RESERVED_KEY] = {**merged.get(RESERVED_KEY, {}), MEM0_KEY: extra}
    created = _opt(item, "created_at", i)
    created_at = (
        now
        if created is None
        else iso(parse_iso_timestamp(created, what=f"memories[{i}].created_at"))
    )
    return DumpRow(
        family="memory",
        id=rid,
        record_type="memory",
        content=text,
        role=None,
        seq_no=None,
        thread_id=_opt(item, "run_id", i),
        user_id=_opt(item, "user_id", i),
        agent_id=_opt(item, "agent_id", i),
        timestamp=None,
        metadata=dump_metadata(merged or None, name, library=True),
        created_at=created_at,
        expires_at=_expiry(_opt(item, "expiration_date", i), i),
        chunks=tuple(DumpChunk(c, None) for c in chunk_text(text, chunk_chars)),
    )


def _expiry(value: str | None, i: int) -> datetime | None:
    """The absolute expiry of mem0's ``expiration_date``: an ISO-8601 time, or a date
    alone meaning the end of that day (UTC); None for none.

    Raises:
        InvalidArgumentError: naming ``memories[i].expiration_date``.
    """
    if value is None:
        return None
    when = parse_iso_timestamp(value, what=f"memories[{i}].expiration_date")
    return when + timedelta(days=1) if _DATE_ONLY.fullmatch(value.strip()) else when


def import_mem0(
    store: OracleMemoryStore,
    source: Target,
    *,
    on_conflict: OnConflict = "error",
    batch_rows: int = BATCH_ROWS,
    progress: Progress | None = None,
) -> TransferSummary:
    """Import mem0 memories (the JSON of ``Memory.get_all()``) into ``store`` as
    ``memory`` records embedded with ``store``'s embedder (docs/migrating.md#bringing-mem0s-memories-along).

    Args:
        store: A store opened with an embedder.
        source: A path to the JSON file (gzip detected) or a binary file object.
        on_conflict: As ``import_store``: what to do with an id the store holds.
        batch_rows: Memories per transaction.
        progress: Called with ``(rows_done, rows_expected)`` after each batch.

    Returns:
        ``TransferSummary`` (``records["memory"]``: memories written).

    Raises:
        InvalidArgumentError: for a store without embedder, a file that is not JSON
            or not mem0 output (nothing written).
        TransferError: for a memory without id or text: names it; the batches
            before it are committed (``.summary``); for an id the store holds, with
            ``on_conflict="error"``: names it, nothing written (every id is looked
            up first).
    """
    conflict = check_options(on_conflict, False)
    if store.embedder is None:
        raise InvalidArgumentError("importing mem0 memories needs a store with an embedder")
    with open_read(source, "source") as stream:
        raw = stream.read()
    try:
        items = _items(orjson.loads(raw))
    except orjson.JSONDecodeError as exc:
        raise InvalidArgumentError(f"source is not JSON: {exc}") from None
    writer = BatchWriter(store, conflict, False, None, batch_rows, progress, len(items))
    writer.bytes = len(raw)
    if conflict == "error":  # every id looked up before anything is written
        now_at = store.clock_now()
        refuse_stored(store, lambda: _keys(items, now_at))
    now = iso(store.clock_now())
    batch: list[DumpRow] = []
    for i, row in _rows(items, store.chunk_chars, now, writer):
        batch.append(row)
        if len(batch) >= batch_rows:
            _write(store, writer, batch, i)
            batch = []
    _write(store, writer, batch, len(items) - 1)
    writer.cap.warn()
    return writer.summary()


def _keys(items: list[Any], now: datetime) -> Iterator[Where]:
    """The key of each memory with an id that is not expired at ``now`` (those the
    import writes), with its place (``memories[3]``); a memory the import refuses
    is passed over (the writing pass names it)."""
    for i, item in enumerate(items):
        rid = item.get("id") if isinstance(item, Mapping) else None
        if not isinstance(rid, str) or not rid:
            continue
        try:
            expires = _expiry(_opt(item, "expiration_date", i), i)
        except InvalidArgumentError:
            expires = None
        if expires is None or expires > now:
            yield ("memory", rid, "memory"), f"memories[{i}]"


def _rows(
    items: list[Any], chunk_chars: int, now: str, writer: BatchWriter
) -> Iterator[tuple[int, DumpRow]]:
    for i, item in enumerate(items):
        try:
            yield i, to_row(item, i, chunk_chars, now)
        except ValueError as exc:
            raise TransferError(f"source: {exc}", writer.summary()) from None


def _write(store: OracleMemoryStore, writer: BatchWriter, batch: list[DumpRow], last: int) -> None:
    if batch:
        rows, writer.identity = reembed_rows(store, batch)
        writer.pending.extend(rows)
        writer.flush(f"memories up to [{last}]")
