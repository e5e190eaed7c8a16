"""``copy_store``: stream one store's rows into another (docs/transfer.md#copy)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from oam_core.errors import InvalidArgumentError
from oam_core.store.base import OracleMemoryStore
from oam_core.store.dumprows import OnConflict, user_list
from oam_core.transfer.precheck import refuse_stored, store_keys
from oam_core.transfer.reader import BATCH_ROWS, BatchWriter, check_embedder, check_options
from oam_core.transfer.summary import TransferSummary
from oam_core.transfer.writer import Progress, store_identity


def copy_store(
    source_store: OracleMemoryStore,
    target_store: OracleMemoryStore,
    *,
    user_ids: str | Sequence[str] | None = None,
    on_conflict: OnConflict = "error",
    reembed: bool = False,
    batch_rows: int = BATCH_ROWS,
    progress: Progress | None = None,
) -> TransferSummary:
    """Copy the rows of ``source_store`` into ``target_store`` without a file: the
    same as ``export_store`` then ``import_store``, streamed (docs/transfer.md#copy).

    Args:
        source_store, target_store: Any two ``OracleMemoryStore`` objects (not the
            same one).
        user_ids: Only those users' threads, messages, memories and profiles (a
            list of ids, or one id as a string); None: everything.
        on_conflict, reembed, batch_rows, progress: As ``import_store``.

    Returns:
        ``TransferSummary`` of what the target received (``bytes`` is 0).

    Raises:
        InvalidArgumentError: for a bad option, or the same store twice (two
            store objects on the same SQLite file, through any path or link, or
            the same PostgreSQL tables through any URL; a ``memory_store_id``
            that differs only in case names the same tables).
        EmbedderMismatchError: as ``import_store`` (nothing written).
        TransferError: as ``import_store``; with ``on_conflict="error"`` an id the
            target holds is found before anything is written (the error names it).
    """
    started = time.perf_counter()
    conflict = check_options(on_conflict, reembed)
    if source_store is target_store:
        raise InvalidArgumentError("copy_store needs two different stores")
    key = source_store.runtime.backend.database_key()
    if key is not None and key == target_store.runtime.backend.database_key():
        # (Copied onto itself, "replace" would write every row again behind the
        # reading position, and never reach the end.)
        raise InvalidArgumentError(
            "copy_store needs two different stores: source_store and target_store "
            "are the same tables of the same database"
        )
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise InvalidArgumentError(f"batch_rows must be a positive int, got {batch_rows!r}")
    users = user_list(user_ids)
    pages = source_store.dump_rows(user_ids=users, page_size=batch_rows)
    identity = store_identity(source_store)
    dim = source_store.vector_dim
    check_embedder(target_store, identity, dim, reembed, "the source store")
    if conflict == "error":  # every id looked up before anything is written
        refuse_stored(target_store, lambda: store_keys(source_store, users))
    total = sum(source_store.dump_counts(user_ids=users).values())
    writer = BatchWriter(target_store, conflict, reembed, identity, batch_rows, progress, total)
    writer.started = started  # (the first pass counts in ``seconds``)
    done = start = 0
    for page in pages:
        for row in page:
            done += 1
            if not writer.pending:
                start = done
            writer.add(row, f"source rows {start}-{done}")
    writer.flush(f"source rows {start}-{done}")
    writer.cap.warn()
    return writer.summary()
