"""The checks of dumped rows that depend on the rows alone (docs/transfer.md#import):
what ``add`` refuses of the same fields, an id twice in a batch, vectors of another
dimension. ``restore`` (``store/dumprows.py``) runs them on every batch it writes,
then the checks against what the store holds; an import runs the same ones over the
whole dump before its first batch is written (``transfer/firstpass.py``), so a bad
row anywhere in a dump leaves the store as it was.
"""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from itertools import chain
from operator import attrgetter

import numpy as np
import orjson

from oam_core.apis.metadatajson import RESERVED_KEY, dump_metadata
from oam_core.apis.records import MEMORY_TYPES, MESSAGE, PROFILE_TYPES, THREAD, ThreadRow
from oam_core.apis.thread import check_role
from oam_core.apis.timestamps import normalize_timestamp
from oam_core.checks import check_text, check_texts, check_window
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import DumpRow
from oam_core.store.dumpcolumns import DumpColumns
from oam_core.store.dumpfields import check_profiles, check_windows
from oam_core.store.ttl import iso, parse_iso_timestamp

ThreadOf = Callable[[str], "DumpRow | ThreadRow | None"]
"""The thread of a message whose thread row is not in the batch: the store's
(``Backend.get_thread``), or one of an earlier batch of the dump; None: unknown."""


def check_batch(
    rows: Sequence[DumpRow],
    now: datetime,
    expected: int | None,
    thread_of: ThreadOf,
    *,
    vectors: bool = True,
) -> tuple[builtins.list[DumpRow], set[int]]:
    """The rows of ``rows`` not expired at ``now``, checked as ``restore`` checks
    them before it looks at what the store holds (``check_values``, and with
    ``vectors`` the vectors: ``expected`` dimensions, else one dimension, finite).

    Returns:
        The live rows with their times in the stored form, and the batch's vector
        dimension as a set (empty without vectors, or with ``vectors`` False).

    Raises:
        InvalidArgumentError: naming the record and the field.
    """
    live = [r for r in rows if r.expires_at is None or r.expires_at > now]
    _refuse_twice(live)
    live = check_values(live, thread_of)
    return live, (_check_vectors(live, expected) if vectors else set())


def check_dump_batch(
    batch: Sequence[DumpRow] | DumpColumns,
    now: datetime,
    expected: int | None,
    thread_of: ThreadOf,
    *,
    vectors: bool = True,
) -> set[int]:
    """``check_batch`` of a batch an import decoded, rows or columns (a batch of
    columns that ``plain`` passes needs nothing more); nothing is written.

    Returns:
        The batch's vector dimension as a set (``check_batch``).

    Raises:
        InvalidArgumentError: as ``check_batch``.
    """
    if isinstance(batch, DumpColumns):
        if vectors and plain(batch, now, expected):
            return {int(batch.vectors.shape[1])} if len(batch) else set()
        batch = batch.rows()
    return check_batch(batch, now, expected, thread_of, vectors=vectors)[1]


def _refuse_twice(rows: Sequence[DumpRow]) -> None:
    """Refuse an id given twice in ``rows``.

    Raises:
        InvalidArgumentError: naming the id and its record type.
    """
    keys = [(r.family, r.id) for r in rows]
    if len(set(keys)) != len(keys):
        seen: set[tuple[str, str]] = set()
        for r, key in zip(rows, keys, strict=True):
            if key in seen:
                raise InvalidArgumentError(f"record id {r.id!r} ({r.record_type}) is given twice")
            seen.add(key)


_ROW_TEXT = attrgetter("content", "role", "thread_id", "user_id", "agent_id", "timestamp")
_ROW_ALL = attrgetter(
    "id",
    "content",
    "role",
    "thread_id",
    "user_id",
    "agent_id",
    "timestamp",
    "metadata",
    "config",
    "state",
)
_CHUNKS = attrgetter("chunks")
_CHUNK_TEXT = attrgetter("text")
_VECTOR = attrgetter("vector")
_CHUNK_SOURCES = attrgetter("sources")
_METADATA = attrgetter("metadata")
_TIMESTAMP = attrgetter("timestamp")
_CREATED = attrgetter("created_at")
_RECORD_TYPE = attrgetter("record_type")
_ROW_TEXT_NAMES = ("content", "role", "thread_id", "user_id", "agent_id", "timestamp")


def _check_vectors(rows: Sequence[DumpRow], expected: int | None) -> set[int]:
    """Refuse a search-row vector whose dimension differs from ``expected`` (the
    store's; for a new store the dump header's, so that a header naming another
    dimension than its vectors cannot record an identity no embedder opens), or from
    the batch's first vector when there is neither; and one holding NaN or infinity.
    One pass over the batch's vectors; row by row only to name the bad one.

    Returns:
        The batch's vector dimension as a set (empty when no row has a vector).

    Raises:
        InvalidArgumentError: naming the record.
    """
    vectors = [v for v in map(_VECTOR, chain.from_iterable(map(_CHUNKS, rows))) if v is not None]
    if not vectors:
        return set()
    dims = {int(v.shape[0]) for v in vectors}
    if len(dims) > 1 or (expected is not None and dims != {expected}):
        want = expected if expected is not None else int(vectors[0].shape[0])
        for r, v in _with_vectors(rows):
            if int(v.shape[0]) != want:
                raise InvalidArgumentError(
                    f"record {r.id!r}: vector dimension {int(v.shape[0])} does not match "
                    f"the store's dimension {want}"
                )
    if not np.isfinite(np.concatenate(vectors)).all():
        for r, v in _with_vectors(rows):
            if not np.isfinite(v).all():
                raise InvalidArgumentError(
                    f"record {r.id!r}: a search row's vector holds NaN or infinity"
                )
    return dims


def _with_vectors(rows: Sequence[DumpRow]) -> Iterator[tuple[DumpRow, np.ndarray]]:
    """Each search-row vector of ``rows`` with its row (to name a bad one)."""
    return ((r, c.vector) for r in rows for c in r.chunks if c.vector is not None)


def check_values(rows: Sequence[DumpRow], thread_of: ThreadOf) -> builtins.list[DumpRow]:
    """Refuse rows the store's own write path (``add``, ``add_messages``) refuses,
    and return them with each event ``timestamp`` in the stored form
    (``normalize_timestamp``) and each ``created_at`` in the form the store writes
    (UTC with microseconds): a dump is a file from elsewhere (docs/transfer.md).

    One pass over the whole batch in the common case; a failing check looks for the
    row and field to name.

    Raises:
        InvalidArgumentError: naming the record id and the field, for text with NUL
            or a lone surrogate, an impossible timestamp, metadata the store
            refuses (the reserved ``$agent_memory`` key must be an object), a search
            row without text of a record with text, or a message with a blank role
            (None passes, as in ``store.add``), without text, with the ``seq_no`` of
            another message of its thread in ``rows``, or of another user or agent
            than its thread (the one in ``rows``, else ``thread_of``'s; None
            passes); a validity window on a message or profile, or one ending
            before it starts; a profile with a scope id. A thread neither in
            ``rows`` nor known to ``thread_of``, or no thread, is not refused:
            ``store.add`` writes such messages.
    """
    # Column-wise in C (``attrgetter``, ``chain``), row by row only to name a culprit
    # or for the few rows that need a closer look: this runs on every imported row.
    chunks = builtins.list(chain.from_iterable(map(_CHUNKS, rows)))
    texts: builtins.list[str | None] = builtins.list(chain.from_iterable(map(_ROW_ALL, rows)))
    texts.extend(map(_CHUNK_TEXT, chunks))
    texts.extend(chain.from_iterable(map(_CHUNK_SOURCES, chunks)))
    try:
        check_texts(texts, "rows")
    except ValueError:
        for r in rows:
            _check_row_text(r)
    _check_metadata(rows)
    out = _stored_times(rows)
    if None in map(_CHUNK_TEXT, chunks):
        _check_indexed_text(rows)
    check_windows(rows)
    if not PROFILE_TYPES.isdisjoint(map(_RECORD_TYPE, rows)):
        check_profiles(rows)
    if MESSAGE in map(_RECORD_TYPE, rows):
        threads: dict[str, DumpRow | ThreadRow | None] = {
            r.id: r for r in rows if r.family == THREAD
        }
        seqs: set[tuple[str, int]] = set()
        for r in rows:
            if r.record_type == MESSAGE:
                _check_message(r, threads, seqs, thread_of)
    return out


def _check_metadata(rows: Sequence[DumpRow]) -> None:
    """Refuse metadata holding an escaped NUL, or whose reserved key is not an
    object (``dump_metadata`` with ``library``), naming the record."""
    metas = "".join([m for m in map(_METADATA, rows) if m is not None])
    if "\\u0000" in metas or RESERVED_KEY in metas:
        for r in rows:
            meta = r.metadata
            if meta is not None and ("\\u0000" in meta or RESERVED_KEY in meta):
                try:
                    dump_metadata(orjson.loads(meta), f"record {r.id!r}: metadata", library=True)
                except ValueError as exc:
                    raise InvalidArgumentError(str(exc)) from None


def _stored_times(rows: Sequence[DumpRow]) -> builtins.list[DumpRow]:
    """``rows`` with each event ``timestamp`` and ``created_at`` in the stored form.

    Raises:
        InvalidArgumentError: naming the record and the field of a time that
            cannot be read.
    """
    out = builtins.list(rows)
    stamps = set(map(_TIMESTAMP, rows))
    stamps.discard(None)
    if not all(map(stored_form, stamps)):
        for i, r in enumerate(rows):
            ts = r.timestamp
            if ts is not None and not stored_form(ts):
                try:
                    norm = normalize_timestamp(ts, f"record {r.id!r}: timestamp")
                except ValueError as exc:
                    raise InvalidArgumentError(str(exc)) from None
                if norm != ts:
                    out[i] = dataclasses.replace(r, timestamp=norm)
    if not all(map(stored_created, map(_CREATED, out))):
        for i, r in enumerate(out):
            if not stored_created(r.created_at):
                try:
                    when = parse_iso_timestamp(r.created_at, what=f"record {r.id!r}: created_at")
                except ValueError as exc:
                    raise InvalidArgumentError(str(exc)) from None
                out[i] = dataclasses.replace(r, created_at=iso(when))
    return out


def _check_message(
    r: DumpRow,
    threads: dict[str, DumpRow | ThreadRow | None],
    seqs: set[tuple[str, int]],
    thread_of: ThreadOf,
) -> None:
    where = f"record {r.id!r} (message)"
    if r.role is not None:  # ``store.add(..., "message")`` takes no role, as None
        try:
            check_role(r.role, f"{where}: role")
        except ValueError as exc:
            raise InvalidArgumentError(str(exc)) from None
    if r.content is None:
        raise InvalidArgumentError(f"{where}: content must be a string, got None")
    tid = r.thread_id
    if tid is None or r.seq_no is None:
        # ``store.add(..., "message")`` without ``thread_ids`` writes messages of no
        # thread, each numbered 0.
        return
    if tid not in threads:
        threads[tid] = thread_of(tid)
    thread = threads[tid]
    if (tid, r.seq_no) in seqs:
        raise InvalidArgumentError(
            f"{where}: seq_no {r.seq_no} is given to another message of thread {tid!r}"
        )
    seqs.add((tid, r.seq_no))
    if thread is None:
        # ``store.add(..., "message", thread_ids=...)`` writes messages of a thread
        # without a thread row: a dump of such a store holds them.
        return
    for name in ("user_id", "agent_id"):
        mine, theirs = getattr(r, name), getattr(thread, name)
        # None is what ``store.add(..., "message")`` writes without a scope; another
        # user's or agent's id would put the message in a thread not theirs.
        if mine is not None and mine != theirs:
            raise InvalidArgumentError(
                f"{where}: {name} {mine!r} differs from its thread {tid!r}'s {theirs!r} "
                "(a message belongs to its thread's user and agent, or to none)"
            )


def _check_indexed_text(rows: Sequence[DumpRow]) -> None:
    """Refuse a search row without text of a record with text.

    Raises:
        InvalidArgumentError: naming the record and the search row.
    """
    for r in rows:
        for j, c in enumerate(r.chunks):
            if c.text is None and r.content:
                raise InvalidArgumentError(
                    f"record {r.id!r}: search_rows[{j}].text is null but the record "
                    "has text to index"
                )


def _check_row_text(r: DumpRow) -> None:
    where = f"record {r.id!r}"
    try:
        check_text(r.id, f"{where}: id")
        for name, value in zip(_ROW_TEXT_NAMES, _ROW_TEXT(r), strict=True):
            if value is not None:
                check_text(value, f"{where}: {name}")
        for name in ("metadata", "config", "state"):
            value = getattr(r, name)
            if value is not None:
                check_text(value, f"{where}: {name}")
        for j, c in enumerate(r.chunks):
            if c.text is not None:
                check_text(c.text, f"{where}: search_rows[{j}].text")
            check_texts(builtins.list(c.sources), f"{where}: search_rows[{j}].sources")
    except ValueError as exc:
        raise InvalidArgumentError(str(exc)) from None


def stored_form(ts: str) -> bool:
    """Whether ``ts`` is already what ``normalize_timestamp`` stores (the fast path:
    a dump written by oam holds only these)."""
    if len(ts) not in (25, 32) or ts[10] != "T" or not ts.endswith("+00:00"):
        return False
    try:
        parsed = datetime.fromisoformat(ts)
    except ValueError:
        return False
    return parsed.isoformat(timespec="seconds" if len(ts) == 25 else "microseconds") == ts


def stored_created(value: str) -> bool:
    """Whether a ``created_at`` is in the form the store writes (``iso``: UTC with
    microseconds); the decoder has parsed it already."""
    return len(value) == 32 and value[10] == "T" and value.endswith("+00:00")


_PLAIN_TYPES = MEMORY_TYPES
"""Record types a ``DumpColumns`` batch is written for directly: not messages (their
threads and numbers are checked row by row) nor profiles (their search rows carry
the profile's own id as scope)."""


def plain(cols: DumpColumns, now: datetime, expected: int | None) -> bool:
    """Whether every check ``restore`` makes passes for ``cols`` with nothing
    to change (no row expired, no id twice, no text or metadata to refuse, times in
    the stored form, windows in order, vectors of ``expected`` dimensions (or one
    dimension) and finite); the checks run over whole columns. False sends the batch
    to the general path, which looks closer and names what is wrong."""
    n = len(cols)
    types = set(cols.record_types)
    if not types <= _PLAIN_TYPES:
        return False
    if cols.expires_ats.count(None) != n and not all(
        e is None or e > now for e in cols.expires_ats
    ):
        return False
    if len(set(zip(cols.families, cols.ids, strict=True))) != n or None in cols.texts:
        return False
    texts: builtins.list[str | None] = [*cols.ids, *cols.contents, *cols.roles]
    for column in (cols.thread_ids, cols.user_ids, cols.agent_ids, cols.timestamps):
        texts.extend(column)
    texts.extend(cols.metadatas)
    texts.extend(cols.texts)
    try:
        check_texts(texts, "rows")
    except ValueError:
        return False
    metas = "".join([m for m in cols.metadatas if m is not None])
    if "\\u0000" in metas or RESERVED_KEY in metas:
        return False
    stamps = {t for t in set(cols.timestamps) if t is not None}
    if not all(map(stored_form, stamps)) or not all(map(stored_created, cols.created_ats)):
        return False
    if not _windows_in_order(cols):
        return False
    vectors = cols.vectors
    if vectors.ndim != 2 or vectors.shape[0] != n or vectors.dtype != np.float32:
        return False
    if expected is not None and vectors.shape[1] != expected:
        return False
    return bool(np.isfinite(vectors).all())


def _windows_in_order(cols: DumpColumns) -> bool:
    """Whether no validity window ends before it starts."""
    n = len(cols)
    if cols.valid_froms.count(None) == n and cols.valid_untils.count(None) == n:
        return True
    for start, stop in zip(cols.valid_froms, cols.valid_untils, strict=True):
        if start is not None or stop is not None:
            try:
                check_window(start, stop, "valid_until", allow_empty=True)
            except ValueError:
                return False
    return True
