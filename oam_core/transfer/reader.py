"""``import_store``: read an oam dump into a store, batch by batch
(docs/transfer.md#import)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

import numpy as np

from oam_core.errors import EmbedderMismatchError, InvalidArgumentError
from oam_core.store.backend import DumpRow
from oam_core.store.base import OracleMemoryStore
from oam_core.store.dumpcolumns import DumpColumns
from oam_core.store.dumprows import ON_CONFLICT, OnConflict, RestoreCounts
from oam_core.store.identity import EmbedderIdentity, identity_of, pick_probe
from oam_core.transfer import format as fmt
from oam_core.transfer.batches import Parsed, dump_batches
from oam_core.transfer.decoder import BadLine, numbered
from oam_core.transfer.io import Target, open_read
from oam_core.transfer.precheck import check_dump, replayable
from oam_core.transfer.retention import RetentionCap
from oam_core.transfer.summary import TransferError, TransferSummary
from oam_core.transfer.writer import Progress, store_identity

BATCH_ROWS = 8192
"""Rows per import transaction (and per executemany). Each commit writes the pages of
the id index the batch touched again (random ids touch most of them), so larger
batches write less: 5,000 cost ~20% less CPU than 1,000, and 8,192 (one ``json_each``
statement on SQLite, ``jsonrows.ROWS_PER_STATEMENT``) ~10-15% less than 5,000 at
1,000,000 records, for ~17 MB more memory (peak RSS 187-191 MB there;
bench/README.md#transferpy)."""


def check_options(on_conflict: object, reembed: object) -> OnConflict:
    """``on_conflict`` if valid.

    Raises:
        InvalidArgumentError: naming the argument and the value.
    """
    if on_conflict not in ON_CONFLICT:
        raise InvalidArgumentError(
            f"on_conflict must be one of {list(ON_CONFLICT)}, got {on_conflict!r}"
        )
    if not isinstance(reembed, bool):
        raise InvalidArgumentError(f"reembed must be a bool, got {reembed!r}")
    return on_conflict  # type: ignore[return-value]


def check_embedder(
    store: OracleMemoryStore,
    identity: EmbedderIdentity | None,
    dimension: int | None,
    reembed: bool,
    what: str,
) -> None:
    """Check, before anything is written, that rows whose vectors come from
    ``identity`` (or are of ``dimension``) fit ``store``.

    Raises:
        EmbedderMismatchError: naming both embedders when they differ and
            ``reembed`` is False, or when the vectors' embedder is unknown
            (``identity`` None: caller vectors of a store without an embedder) and
            the store has one (recorded, or opened with it); with ``reembed``
            True, when the store's embedder
            embeds the store's recorded probe text otherwise than its recorded
            fingerprint (the rows would join vectors of another model,
            docs/store.md#embedder-identity).
        InvalidArgumentError: for ``reembed=True`` without an embedder on ``store``.
    """
    if reembed:
        if store.embedder is None:
            raise InvalidArgumentError("reembed=True needs a target store opened with an embedder")
        store.runtime.verify_embedder()
        return
    if dimension is None:
        return
    target = store_identity(store)
    target_dim = store.vector_dim
    if target_dim is not None and target_dim != dimension:
        raise EmbedderMismatchError(
            f"{what} holds vectors of {dimension} dimensions from "
            f"{identity.describe() if identity else 'an unknown embedder'}, the target "
            f"store's are {target.describe() if target else f'of {target_dim} dimensions'}; "
            "pass reembed=True to embed the text again with the target's embedder"
        )
    if identity is None and target is not None:
        raise EmbedderMismatchError(
            f"{what} holds vectors of {dimension} dimensions from an unknown embedder "
            f"(no embedder id recorded with them), the target store's embedder is "
            f"{target.describe()}: nothing shows they are one vector space; pass "
            "reembed=True to embed the text again with the target's embedder"
        )
    if identity is not None and target is not None and identity.embedder_id != target.embedder_id:
        raise EmbedderMismatchError(
            f"{what} holds vectors from {identity.describe()}, the target store's "
            f"embedder is {target.describe()}; pass reembed=True to embed the text again "
            "with the target's embedder"
        )


def reembed_rows(
    store: OracleMemoryStore, rows: list[DumpRow]
) -> tuple[list[DumpRow], EmbedderIdentity]:
    """``rows`` with every search row's vector made again from its text by the
    store's embedder (a row without text keeps no vector), and the identity to record
    with them: the store's recorded one, else its embedder's with the fingerprint of
    one of the texts, as a first ``add`` records it (docs/store.md#embedder-identity)."""
    embedder = store.embedder
    assert embedder is not None
    texts = [c.text for r in rows for c in r.chunks if c.text]
    matrix = np.asarray(embedder.embed(texts), dtype=np.float32) if texts else None
    identity = store.embedder_identity
    if identity is None:
        probe = None if matrix is None else pick_probe(texts)
        identity = (
            identity_of(embedder)
            if probe is None or matrix is None
            else identity_of(embedder, texts[probe], matrix[probe])
        )
    vectors = iter(matrix) if matrix is not None else iter(())
    out = []
    for r in rows:
        chunks = tuple(
            dataclasses.replace(c, vector=next(vectors) if c.text else None) for c in r.chunks
        )
        out.append(dataclasses.replace(r, chunks=chunks))
    return out, identity


class BatchWriter:
    """Writes rows to a store in batches through ``restore_rows`` and keeps the
    counts of what was committed."""

    def __init__(
        self,
        store: OracleMemoryStore,
        on_conflict: OnConflict,
        reembed: bool,
        identity: EmbedderIdentity | None,
        batch_rows: int,
        progress: Progress | None,
        total: int,
    ) -> None:
        self.store = store
        self.on_conflict = on_conflict
        self.reembed = reembed
        self.identity = None if reembed else identity
        self.batch_rows = batch_rows
        self.progress = progress
        self.total = total
        self.pending: list[DumpRow] = []
        self.records: dict[str, int] = {}
        self.search_rows = 0
        self.skipped_existing = 0
        self.skipped_expired = 0
        self.bytes = 0
        self.started = time.perf_counter()
        self.cap = RetentionCap(store)

    def summary(self) -> TransferSummary:
        """What was committed so far."""
        return TransferSummary(
            records=dict(self.records),
            search_rows=self.search_rows,
            skipped_expired=self.skipped_expired,
            skipped_existing=self.skipped_existing,
            bytes=self.bytes,
            seconds=time.perf_counter() - self.started,
        )

    def add(self, row: DumpRow, where: str) -> None:
        """Queue a row; write the batch when full."""
        self.pending.append(row)
        if len(self.pending) >= self.batch_rows:
            self.flush(where)

    def flush(self, where: str, batch: list[DumpRow] | DumpColumns | None = None) -> None:
        """Write the queued rows, or ``batch`` when given, in one transaction.

        Raises:
            TransferError: when the batch is refused (an id that clashes, a vector
                of another dimension, a row the write path refuses); nothing of it
                is written.
        """
        rows: list[DumpRow] | DumpColumns
        if batch is None:
            rows, self.pending = self.pending, []
        else:
            rows = batch
        if not len(rows):
            return
        if self.reembed:
            rows, self.identity = reembed_rows(
                self.store, rows if isinstance(rows, list) else rows.rows()
            )
        written: list[DumpRow] | DumpColumns = rows
        try:
            if isinstance(rows, list):
                restored = self.store.restore_rows(
                    rows,
                    on_conflict=self.on_conflict,
                    batch_size=self.batch_rows,
                    identity=self.identity,
                )
                result, written = RestoreCounts.of(restored), restored.written
            else:  # (with "skip", ``written`` counts a skipped row too)
                result = self.store.restore_columns(
                    rows,
                    on_conflict=self.on_conflict,
                    batch_size=self.batch_rows,
                    identity=self.identity,
                )
        except InvalidArgumentError as exc:
            raise TransferError(f"{where}: {exc}", self.summary()) from exc
        self.cap.count(written)
        for rtype, count in result.records.items():
            self.records[rtype] = self.records.get(rtype, 0) + count
        self.search_rows += result.search_rows
        self.skipped_existing += result.skipped_existing
        self.skipped_expired += result.skipped_expired
        if self.progress is not None:
            done = sum(self.records.values()) + self.skipped_existing + self.skipped_expired
            self.progress(done, self.total)


def _header(lines: Iterator[tuple[int, bytes]]) -> tuple[bytes, dict[str, Any]]:
    """The first line of a dump and its header, checked.

    Raises:
        InvalidArgumentError: naming line 1 for an empty source, a damaged stream
            or a line that is not a version-1 oam dump header.
    """
    try:
        first = next(lines, None)
    except BadLine as exc:
        raise InvalidArgumentError(f"source line 1: {exc}") from exc
    if first is None:
        raise InvalidArgumentError("source is empty: no oam dump header")
    try:
        return first[1], fmt.parse_header(first[1])
    except fmt.LineError as exc:
        raise InvalidArgumentError(f"source line 1: {exc}") from None


def import_store(
    store: OracleMemoryStore,
    source: Target,
    *,
    on_conflict: OnConflict = "error",
    reembed: bool = False,
    batch_rows: int = BATCH_ROWS,
    progress: Progress | None = None,
) -> TransferSummary:
    """Read an oam dump into ``store``, streaming, one transaction per batch of
    ``batch_rows`` rows through the store's bulk insert (docs/transfer.md#import).

    The dump is read twice: a first pass checks every line before anything is
    written (``precheck.check_dump``), so a bad dump leaves ``store`` as it was; a
    stream that cannot seek back is copied to a temporary file first.

    Args:
        store: Any ``OracleMemoryStore``; rows keep their ids, store times, message
            numbers, expiry, metadata, search rows and vectors.
        source: A path (gzip detected by content) or a binary file object.
        on_conflict: ``"error"`` (an id the store holds stops the import, naming
            it, before anything is written: the first pass looks every id up),
            ``"skip"`` (keep the store's row: a re-run after an interruption
            completes the import without duplicates) or ``"replace"``.
        reembed: Embed every search row's text again with ``store``'s embedder
            instead of taking the dump's vectors (needed when the dump comes from
            another embedder).
        batch_rows: Rows per transaction (positive int).
        progress: Called with ``(rows_done, rows_expected)`` after each batch.

    Returns:
        ``TransferSummary``: rows written per type, search rows, rows skipped as
        existing or expired, uncompressed bytes read, seconds.

    Raises:
        InvalidArgumentError: for a bad option, a missing file, or a first line that
            is not a version-1 oam dump header (nothing written).
        EmbedderMismatchError: the dump's vectors come from another embedder id or
            dimension than the store's, without ``reembed`` (nothing written).
        TransferError: (an ``InvalidArgumentError``) naming the line or id, with
            nothing written, for a line that is not JSON, of an unknown kind or
            record type, a row the store's write path refuses (NUL in text, an
            impossible timestamp, metadata ``add`` refuses, a bad message role,
            seq_no or scope: ``check_dump_batch`` in
            ``oam_core/store/dumpcheck.py``), a damaged or truncated dump, or an
            id the store holds (``"error"``); for what only the target's rows
            show (a thread id of another user there, a message number taken
            there, a search row quoting a message in neither the dump nor the
            store, an id another writer stored meanwhile), the failing batch is
            not written and ``.summary`` says what was committed before it.
    """
    conflict = check_options(on_conflict, reembed)
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise InvalidArgumentError(f"batch_rows must be a positive int, got {batch_rows!r}")
    started = time.perf_counter()
    with open_read(source, "source") as raw, replayable(raw) as stream:
        first, head, batches = _dump(store, stream, batch_rows, reembed)
        identity = fmt.header_identity(head)
        stored_dim = store.vector_dim
        check_dump(
            store,
            batches,
            lookup=conflict == "error",
            expected=stored_dim
            if stored_dim is not None or identity is None
            else identity.dimension,
            vectors=not reembed,
        )
        counts: dict[str, Any] = head["record_counts"]
        total = sum(v for v in counts.values() if isinstance(v, int))
        writer = BatchWriter(store, conflict, reembed, identity, batch_rows, progress, total)
        writer.started = started  # (the first pass counts in ``seconds``)
        writer.bytes = len(first)
        for item in batches():
            writer.bytes = item.bytes
            if item.error is not None:  # (the dump changed since the first pass)
                raise TransferError(item.error, writer.summary())
            writer.flush(item.label, item.rows)
    writer.cap.warn()
    return writer.summary()


def _dump(
    store: OracleMemoryStore, stream: IO[bytes], batch_rows: int, reembed: bool
) -> tuple[bytes, dict[str, Any], Callable[[], Iterator[Parsed]]]:
    """The header line of the dump ``stream`` holds, its header, and its batches
    (``batches.dump_batches``: a fresh pass from its first row each call), once its
    embedder fits ``store`` (``check_embedder``).

    Raises:
        InvalidArgumentError: for a header ``_header`` refuses.
        EmbedderMismatchError: as ``check_embedder``.
    """
    start = stream.tell()
    first, head = _header(numbered(stream))
    dimension = fmt.header_dimension(head)
    check_embedder(store, fmt.header_identity(head), dimension, reembed, "the dump")

    def batches() -> Iterator[Parsed]:
        # Decoded and written in turn, in this thread (``decoder.py`` says why).
        return dump_batches(_rows(stream, start), batch_rows, len(first), dimension, reembed)

    return first, head, batches


def _rows(stream: IO[bytes], start: int) -> Iterator[tuple[int, bytes]]:
    """The numbered lines after the header of the dump that begins at ``start`` of
    ``stream`` (sought back there: a pass from the first row)."""
    stream.seek(start)
    lines = numbered(stream)
    next(lines)
    return lines
