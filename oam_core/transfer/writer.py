"""``export_store``: write a store's rows as an oam dump (docs/transfer.md#export)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from oam_core.errors import InvalidArgumentError
from oam_core.store.base import OracleMemoryStore
from oam_core.store.dumprows import user_list
from oam_core.store.identity import EmbedderIdentity
from oam_core.transfer import format as fmt
from oam_core.transfer.io import Target, open_write
from oam_core.transfer.summary import TransferSummary

Progress = Callable[[int, int], None]
"""``progress(rows_done, rows_expected)``, called after each page or batch."""

PAGE_ROWS = 512
"""Rows read per page: memory use is about one page of rows with their vectors."""


def store_identity(store: OracleMemoryStore) -> EmbedderIdentity | None:
    """The embedder of a store's vectors: the recorded identity, else its embedder's
    id and dimension, else None."""
    if store.embedder_identity is not None:
        return store.embedder_identity
    if store.embedder is not None:
        return EmbedderIdentity(store.embedder.embedder_id, store.embedder.embedding_dimension)
    return None


def export_store(
    store: OracleMemoryStore,
    destination: Target,
    *,
    user_ids: str | Sequence[str] | None = None,
    progress: Progress | None = None,
) -> TransferSummary:
    """Write every row of ``store`` to ``destination`` as an oam dump, streaming: memory
    use does not grow with the store (docs/transfer.md#export).

    Args:
        store: Any ``OracleMemoryStore`` (SQLite, PostgreSQL, Oracle).
        destination: A path (``.jsonl``, or ``.jsonl.gz`` compressed) or a binary file
            object (left open).
        user_ids: Only those users' threads, messages, memories and profiles
            (a list of ids, or one id as a string); None: everything.
        progress: Called with ``(rows_done, rows_expected)`` after each page.

    Returns:
        ``TransferSummary``: rows and search rows exported per type, rows left out
        as expired, uncompressed bytes written, seconds.

    Raises:
        InvalidArgumentError: for a bad ``destination`` (a missing directory, a
            directory, the exported SQLite store's own database file) or ``user_ids``.
        StoreError: when the store cannot be read.

    A path is replaced only once the whole dump is written (a temporary file beside
    it until then), so a failed export leaves an existing file as it was.
    """
    started = time.perf_counter()
    _refuse_own_file(store, destination)
    users = user_list(user_ids)
    rows_iter = store.dump_rows(user_ids=users, page_size=PAGE_ROWS)
    now = store.clock_now()
    expected = store.dump_counts(user_ids=users)
    total = sum(expected.values())
    counts: dict[str, int] = {}
    chunks = expired = written = 0
    with open_write(destination, "destination") as out:
        head = fmt.header(store_identity(store), store.vector_dim, expected, now, users)
        out.write(head)
        written += len(head)
        for page in rows_iter:
            lines = []
            for row in page:
                if row.expires_at is not None and row.expires_at <= now:
                    expired += 1
                    continue
                lines.append(fmt.encode(row))
                counts[row.record_type] = counts.get(row.record_type, 0) + 1
                chunks += len(row.chunks)
            data = b"".join(lines)
            out.write(data)
            written += len(data)
            if progress is not None:
                progress(sum(counts.values()), total)
        tail = fmt.end(counts, chunks)
        out.write(tail)
        written += len(tail)
    return TransferSummary(
        records=counts,
        search_rows=chunks,
        skipped_expired=expired,
        bytes=written,
        seconds=time.perf_counter() - started,
    )


def _refuse_own_file(store: OracleMemoryStore, destination: Target) -> None:
    """Refuse to write a dump over the database file of ``store`` itself (or its
    ``-wal``/``-shm``), which would destroy the store being exported.

    Raises:
        InvalidArgumentError: naming ``destination``.
    """
    from oam_core.store.sqlite import SQLiteMemoryStore

    if not isinstance(destination, (str, os.PathLike)) or not isinstance(store, SQLiteMemoryStore):
        return
    if store.path == ":memory:" or str(store.path).startswith("file:"):
        return
    own = Path(store.path).resolve()
    dest = Path(os.fspath(destination)).resolve()
    if dest in {own, own.with_name(own.name + "-wal"), own.with_name(own.name + "-shm")}:
        raise InvalidArgumentError(
            f"destination: {os.fspath(destination)!r} is the exported store's own database file"
        )
