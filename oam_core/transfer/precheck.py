"""The first pass of an import or a copy with ``on_conflict="error"``: every id of
the source is looked up in the target before anything is written, so an id the
target holds stops it with nothing written (docs/transfer.md#import).

Memory stays bounded: ids are looked up in batches of ``CHECK_IDS`` as they are
read, never all held. A dump is read twice for it (a file is opened again, a
gzip stream decompressed again, a stream that cannot seek back is first copied to
a temporary file); a copy reads the source's ids, without content or vectors.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import IO

import numpy as np
import orjson

from oam_core.apis.records import RECORD_TYPES, THREAD, family_of
from oam_core.errors import InvalidArgumentError
from oam_core.store.base import OracleMemoryStore
from oam_core.store.dumpids import Key
from oam_core.store.ttl import parse_iso_timestamp
from oam_core.transfer.decoder import BadLine, numbered
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


def dump_keys(stream: IO[bytes], now: datetime) -> Iterator[Where]:
    """The keys of the record and thread lines after a dump's header that are not
    expired at ``now``, each with its line number. A line that does not decode is
    passed over, and a damaged stream ends the pass: the writing pass names them
    as it names any bad line."""
    try:
        for n, line in numbered(stream):
            key = _line_key(line, now) if n > 1 else None
            if key is not None:
                yield key, f"source line {n}"
    except BadLine:
        return


def _line_key(line: bytes, now: datetime) -> Key | None:
    """``(family, id, record_type)`` of a live record or thread line, else None."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(obj, dict) or not isinstance(rid := obj.get("id"), str):
        return None
    kind = obj.get("kind")
    if kind == "thread":
        return THREAD, rid, THREAD
    rtype = obj.get("record_type")
    if kind != "record" or rtype not in RECORD_TYPES:
        return None
    expires = obj.get("expires_at")
    if isinstance(expires, str) and _before(expires, now):
        return None
    return family_of(rtype), rid, rtype


def _before(value: str, now: datetime) -> bool:
    """Whether the time ``value`` is at or before ``now`` (False when unreadable)."""
    try:
        return parse_iso_timestamp(value, what="expires_at") <= now
    except (InvalidArgumentError, ValueError):
        return False


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
