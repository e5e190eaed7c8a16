"""The first pass of an import, and of a copy with ``on_conflict="error"``
(docs/transfer.md#import): an import reads and checks its whole dump before anything
is written (``check_dump``), so a bad line, a damaged stream or a missing end line
stops it with nothing written; with ``on_conflict="error"`` every id of the source
is also looked up in the target, so an id the target holds stops it with nothing
written.

Memory stays bounded: the dump is checked one batch at a time, and ids are looked up
in batches of ``CHECK_IDS`` as they are read, never all held. A dump is read twice
for it (a file is sought back, a gzip stream decompressed again, a stream that
cannot seek back is first copied to a temporary file, ``replayable``); a copy reads
the source's ids, without content or vectors.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import IO

import numpy as np

from oam_core.apis.records import THREAD
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import DumpRow
from oam_core.store.base import OracleMemoryStore
from oam_core.store.dumpcheck import check_dump_batch
from oam_core.store.dumpcolumns import DumpColumns
from oam_core.store.dumpids import Key
from oam_core.transfer.batches import Parsed
from oam_core.transfer.summary import TransferError, TransferSummary

CHECK_IDS = 8192
"""Ids looked up in the target per query batch (one read transaction each)."""

Where = tuple[Key, str]
"""A source row's key and where it is (``source line 12``, ``source row 12``)."""


def refuse_stored(store: OracleMemoryStore, keys: Callable[[], Iterable[Where]]) -> None:
    """Look up the source's keys (``keys()``: a fresh pass over them each call) in
    ``store`` in batches of ``CHECK_IDS``, and refuse an id the source holds twice
    (the second would clash with the first, written by then). Memory: 8 bytes per
    id (a 64-bit hash of each), 8 MB per million; a repeated hash makes a second
    pass that names the id (or finds two ids of one hash, and lets them pass).

    Raises:
        TransferError: (an ``InvalidArgumentError``) naming the first id of the
            first batch that holds one the store has, with how many of that batch
            clash, or an id found twice with both places; its ``summary`` is empty
            (nothing was written).
    """
    hashes: list[np.ndarray] = []
    batch: list[Where] = []
    for item in keys():
        batch.append(item)
        if len(batch) >= CHECK_IDS:
            hashes.append(_check(store, batch))
            batch = []
    hashes.append(_check(store, batch))
    _refuse_twice(np.concatenate(hashes), keys)


def _check(store: OracleMemoryStore, batch: list[Where]) -> np.ndarray:
    """The hashes of ``batch``'s ``(family, id)``, once none is in ``store``.

    Raises:
        TransferError: naming the first id ``store`` holds.
    """
    if batch:
        held = store.stored_ids([key for key, _ in batch])
        if held:
            (_, rid, rtype), where = next(item for item in batch if item[0] in held)
            raise TransferError(
                f"{where}: record id {rid!r} ({rtype}) already exists in the target "
                f"store ({len(held)} clashing ids among the {len(batch)} checked with "
                "it); nothing was written; pass on_conflict='skip' or 'replace'",
                TransferSummary(),
            )
    return np.fromiter((hash(k[:2]) for k, _ in batch), dtype=np.int64, count=len(batch))


def _refuse_twice(hashes: np.ndarray, keys: Callable[[], Iterable[Where]]) -> None:
    """Refuse an id that ``keys()`` holds twice, when ``hashes`` repeat one.

    Raises:
        TransferError: naming the id and both places.
    """
    ordered = np.sort(hashes)
    repeated = set(ordered[1:][ordered[1:] == ordered[:-1]].tolist())
    if not repeated:
        return
    seen: dict[tuple[str, str], str] = {}
    for (family, rid, rtype), where in keys():
        if hash((family, rid)) in repeated:
            first = seen.setdefault((family, rid), where)
            if first != where:
                raise TransferError(
                    f"{where}: record id {rid!r} ({rtype}) is in the source twice (first "
                    f"at {first.removeprefix('source ')}); nothing was written",
                    TransferSummary(),
                )


def store_keys(store: OracleMemoryStore, user_ids: list[str] | None) -> Iterator[Where]:
    """The keys of the rows a copy from ``store`` writes (``dump_ids``), each with
    its place (``source row N``, counted as ``dump_ids`` returns them)."""
    n = 0
    for page in store.dump_ids(user_ids=user_ids, page_size=CHECK_IDS):
        for key in page:
            n += 1
            yield key, f"source row {n}"


def check_dump(
    store: OracleMemoryStore,
    batches: Callable[[], Iterator[Parsed]],
    *,
    lookup: bool,
    expected: int | None,
    vectors: bool,
) -> None:
    """The first pass of an import: read the whole dump (``batches()``, a fresh
    pass from its first row each call) and check every batch as the writing pass
    checks it before it looks at the target's rows (``batches.dump_batches``, then
    ``store/dumpcheck.py``'s ``check_dump_batch``), so that a bad line anywhere, a
    damaged stream or a missing end line stops the import before its first write.
    With ``lookup`` (``on_conflict="error"``) every id is also looked up in
    ``store`` (``refuse_stored``).

    Args:
        store: The target.
        batches: The dump's batches, read from its first row on.
        lookup: Look the ids up in ``store``.
        expected: The vector dimension of the rows (the store's, else the
            header's; None: the first batch's, as the store learns it).
        vectors: Check the vectors (False: ``reembed`` replaces them).

    Raises:
        TransferError: naming the line (or the lines of the batch, the record and
            the field); its ``summary`` is empty: nothing was written.
    """
    now = store.clock_now()

    def keys() -> Iterator[Where]:
        return _checked_keys(batches(), now, expected, vectors)

    if lookup:
        refuse_stored(store, keys)
    else:
        for _ in keys():
            pass


def _checked_keys(
    items: Iterator[Parsed], now: datetime, expected: int | None, vectors: bool
) -> Iterator[Where]:
    """The keys of the rows of ``items`` not expired at ``now``, each with its line,
    once its batch is checked (``check_dump``).

    Raises:
        TransferError: for the first batch that fails, nothing written.
    """
    threads: dict[str, DumpRow] = {}  # the dump's threads read so far
    for item in items:
        if item.error is not None:
            raise TransferError(f"{item.error}; nothing was written", TransferSummary())
        try:
            dims = check_dump_batch(item.rows, now, expected, threads.get, vectors=vectors)
        except InvalidArgumentError as exc:
            raise TransferError(
                f"{item.label}: {exc}; nothing was written", TransferSummary()
            ) from exc
        if expected is None and dims:
            expected = min(dims)  # (``check_dump_batch`` refuses two in one batch)
        rows = item.rows
        if isinstance(rows, DumpColumns):
            found: Iterator[tuple[str, str, str, datetime | None]] = zip(
                rows.families, rows.ids, rows.record_types, rows.expires_ats, strict=True
            )
        else:
            threads.update((r.id, r) for r in rows if r.family == THREAD)
            found = ((r.family, r.id, r.record_type, r.expires_at) for r in rows)
        for (family, rid, rtype, expires), n in zip(found, item.numbers, strict=True):
            if expires is None or expires > now:
                yield (family, rid, rtype), f"source line {n}"


@contextmanager
def replayable(stream: IO[bytes]) -> Iterator[IO[bytes]]:
    """``stream`` when it can seek back to where it is, else a temporary file
    holding the rest of it (as many bytes as the stream holds, on disk), positioned
    at its start; the file is removed when the block ends."""
    if _seekable(stream):
        yield stream
        return
    with tempfile.TemporaryFile(prefix="oam-import-") as spool:
        shutil.copyfileobj(stream, spool, 1 << 20)
        spool.seek(0)
        yield spool


def _seekable(stream: IO[bytes]) -> bool:
    try:
        stream.tell()
        return bool(stream.seekable())
    except (OSError, AttributeError, ValueError):
        return False
