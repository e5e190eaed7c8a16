"""Search rows that quote other records (docs/store.md#search-rows-that-quote-other-messages).

A message's context row holds the text of the messages before it in the thread
(``memory/indexing.py``). Such a row is written from a ``QuotingChunk``: a chunk text
that names the message records it quotes. The store keeps one ``chunk_sources`` link
per quoted record, and:

* a row quoting a record that is missing when the row is written is not written;
* a row expires at the earliest expiry of its own record and the records it quotes,
  so search stops returning it when it stops returning what it quotes, and
  ``purge_expired`` deletes it with them;
* deleting a record (``delete``, ``delete_records``, an upsert replacing it, a
  thread or cascading actor delete) or changing its text (``update``) deletes the
  rows quoting it in the same transaction.

So no text a caller deleted stays searchable or stored in another record's row. The
rules are here, once; each back end only stores the links and runs the deletes.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from oam_core.errors import InvalidArgumentError

if TYPE_CHECKING:
    from oam_core.store.planning import ChunkPlan

__all__ = [
    "QuotingChunk",
    "QuotingRow",
    "ResolvedChunk",
    "earliest",
    "quoted_ids",
    "resolve_quotes",
    "take_sources",
    "to_epoch",
]


class QuotingChunk(str):
    """A caller-owned chunk text (an ``index_texts`` entry's item) that quotes the
    text of other message records.

    Args:
        text: The chunk text.
        sources: Ids of the message records (same store) whose text ``text`` holds.

    Raises:
        ValueError: when ``sources`` is not a sequence of strings.
    """

    sources: tuple[str, ...]

    def __new__(cls, text: str, sources: Sequence[str]) -> QuotingChunk:
        if isinstance(sources, str) or not all(isinstance(s, str) for s in sources):
            raise InvalidArgumentError(
                f"sources must be a sequence of message ids, got {sources!r}"
            )
        made = super().__new__(cls, text)
        made.sources = tuple(dict.fromkeys(sources))
        return made

    def __reduce__(self) -> tuple[object, tuple[str, tuple[str, ...]]]:
        return (QuotingChunk, (str(self), self.sources))


def take_sources(chunks: Sequence[ChunkPlan]) -> None:
    """Move the sources of ``QuotingChunk`` texts onto their ``ChunkPlan`` (the text
    becomes a plain ``str``, as every database driver expects)."""
    for chunk in chunks:
        if isinstance(chunk.text, QuotingChunk):
            chunk.sources = chunk.text.sources
            chunk.text = str(chunk.text)


@dataclass(frozen=True)
class ResolvedChunk:
    """Where one planned search row stands once its sources are looked up.

    Attributes:
        plan: Index of the row's record among the records written.
        seq: The row's position among its record's rows.
        expires_at: The row's expiry (as in ``QuotingRow``; None: never).
        source_keys: The keys of the records it quotes.
    """

    plan: int
    seq: int
    expires_at: Any
    source_keys: tuple[Hashable, ...]


def earliest(*expiries: Any) -> Any:
    """The earliest of ``expiries`` (all Unix seconds, or all datetimes), None (never)
    when all are None."""
    known = [e for e in expiries if e is not None]
    return min(known) if known else None


QuotingRow = tuple["str | None", Hashable, Any, "Sequence[ChunkPlan]"]
"""One record about to get search rows: ``(its id when it is a message, else None;
its key; its expiry, None for never, in the back end's comparable form: Unix seconds,
a naive UTC datetime; its planned rows)``."""


def resolve_quotes(
    rows: Sequence[QuotingRow], stored: Mapping[str, tuple[Hashable, Any]]
) -> tuple[dict[tuple[int, int], ResolvedChunk], set[tuple[int, int]]]:
    """Resolve the quoted records of the search rows about to be written.

    Args:
        rows: The records getting rows, in write order (see ``QuotingRow``).
        stored: ``{message id: (key, expiry as in ``QuotingRow``)}`` of the quoted
            messages already stored, read in the writing transaction.

    Returns:
        ``(quoting, dropped)``: the rows with sources by ``(record index, row
        position)``, and the rows not to write because a record they quote is
        missing (deleted meanwhile, or never written).
    """
    batch = {mid: (key, exp) for mid, key, exp, _ in rows if mid is not None and key is not None}
    quoting: dict[tuple[int, int], ResolvedChunk] = {}
    dropped: set[tuple[int, int]] = set()
    for i, (_, key, expires, chunks) in enumerate(rows):
        for seq, chunk in enumerate(chunks):
            if not chunk.sources:
                continue
            found = [batch.get(s) or stored.get(s) for s in chunk.sources]
            known = [f for f in found if f is not None]
            if len(known) < len(found):
                dropped.add((i, seq))
                continue
            quoting[(i, seq)] = ResolvedChunk(
                i,
                seq,
                earliest(expires, *(f[1] for f in known)),
                tuple(f[0] for f in known if f[0] != key),
            )
    return quoting, dropped


def quoted_ids(rows: Sequence[QuotingRow]) -> list[str]:
    """The message ids the planned rows quote that are not in ``rows`` themselves, in
    first-seen order (the ones to look up in the store)."""
    own = {mid for mid, *_ in rows if mid is not None}
    out = {s: None for *_, chunks in rows for c in chunks for s in c.sources if s not in own}
    return list(out)


def to_epoch(value: datetime | None) -> float | None:
    """An aware datetime as Unix seconds (None stays None)."""
    return None if value is None else value.timestamp()
