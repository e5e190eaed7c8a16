"""Memories and messages searched together: a rank fusion in which a memory also
counts for the messages it was extracted from (docs/retrieval.md#memories-and-messages-together).

A memory extracted by the pipeline names its source messages
(``metadata["$agent_memory"]["source_message_ids"]``, ``memory/provenance.py``). When
a search asks for both kinds (the context card, ``OracleAgentMemory.search`` with
record types holding ``message`` and a memory-like type), the memory-like records and
the messages are searched separately, each by the store's own ranking within the
same scope, filter and validity window, and the two ranked lists are fused here by
weighted reciprocal rank fusion (``store.fusion.fuse``'s formula, constant
``store.fusion.RRF_K``):

* a memory-like record (or profile) at rank ``r`` of its list scores
  ``MEMORY_WEIGHT / (RRF_K + r)``;
* a message at rank ``r`` of its list scores ``MESSAGE_WEIGHT / (RRF_K + r)``, plus,
  for every memory at rank ``r'`` that names it as one of its ``n`` sources,
  ``MEMORY_WEIGHT / (RRF_K + r') / n`` (the memory's evidence counts for the turns
  it came from, divided among them: a memory drawn from one turn gives it all, one
  drawn from an extraction window of ten messages a tenth to each). Only messages of
  the message list get this credit: a source message outside the search's scope,
  filter or depth is not added.

**By score under HYBRID** (``fuses_scores``): when every distance of both lists is
a ``DistanceKind.FUSED`` one (a HYBRID search's), each is ``1 - score / the best
fused score the query could reach`` in the same store, so the two lists' distances
are on one scale, and the fusion adds scores ``1 - distance`` in place of
reciprocal ranks (the same weights, the same crediting of source messages): a
memory far below the best message no longer ties it because both are first of
their lists. A cosine distance (VECTOR: short facts and whole turns have different
cosine spreads) or a keyword distance (each relative to its own list's best hit)
is not comparable across the lists, so those are fused by rank. On LoCoMo with its
observations, recall_all@10 0.738 -> 0.746, every category and both halves up
(bench/README.md#memories-and-turns-together).

The fused list holds memories and messages, best first (ties by record type then
id, the store's rule), each record once, cut to ``k``. The fusion reads each list's
first ``MIN_DEPTH`` results whatever ``k``; a larger ``k`` gets the records ranked
below them after those, as they are (``fused_search_steps``, ``store/headtail.py``),
so a smaller ``k`` gives the first results of a larger one. A memory extracted from a
single message of the list stands in for it: it takes that message's place and
fused score (its own rank's credit included), and the message is not listed again,
so the extracted fact (names and dates resolved) is shown where the turn it
restates would be, and the two do not take two places for one piece of evidence.
Only the best-ranked such memory of a message stands in; a memory drawn from
several messages, from none, or from one not in the list keeps its own entry.
When one kind finds nothing (a store without memories, or without messages in
scope), the other kind's results come back as the store ranked them, with its
distances: there is nothing to fuse.

Each distance is ``1 - score / ceiling`` (as ``store.fusion.rrf_distance``, a
``DistanceKind.FUSED`` distance in [0, 1], as HYBRID's), the ceiling being the best
a search of one kind gives (rank 1 of one list unaided, ``max(MEMORY_WEIGHT,
MESSAGE_WEIGHT) / (RRF_K + 1)``; by score, distance 0: ``max(MEMORY_WEIGHT,
MESSAGE_WEIGHT)``) or the query's best fused score when a message
credited by memories scores above that: a record ranked first among its kind and
unaided is at 0, as a search of that kind alone would put it, and the distances
ascend strictly with the fused order (equal scores, equal distances, ties by record
type then id, the store's rule).

Everything here is pure (no I/O): the two store searches are the callers'
(``contextcard.relevant_steps``, ``ClientMemories.search``), through
``fused_search_steps``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from oam_core.apis.records import MESSAGE, Record
from oam_core.checks import MAX_ROWS, check_int
from oam_core.memory.provenance import reserved_keys
from oam_core.steps import Steps, call
from oam_core.store.fusion import RRF_K, Distance, DistanceKind
from oam_core.store.headtail import next_depth, scored, settled, tail

__all__ = [
    "MEMORY_WEIGHT",
    "MESSAGE_WEIGHT",
    "MIN_DEPTH",
    "fuse_with_provenance",
    "fused_search_steps",
    "fuses_scores",
    "source_message_ids",
    "split_types",
]

MEMORY_WEIGHT = 1.0
"""RRF weight of the memory list, and of the credit a memory divides among its source
messages (bench/README.md#memories-and-turns-together)."""

MESSAGE_WEIGHT = 1.0
"""RRF weight of the message list."""

MIN_DEPTH = 10
"""How many results of each list are fused, whatever ``k`` (the messages' list less
the shown messages a card drops): records below them follow the fused head
(``fused_search_steps``), so a smaller ``k`` gives a prefix of a larger one (order
and distances), as a store search does."""


def source_message_ids(record: Record) -> list[str]:
    """The ids of the messages ``record`` was extracted from (its reserved
    ``source_message_ids``; ``[]`` for a record without provenance), each once, in
    stored order.

    Args:
        record: A loaded record of any type.
    """
    sources = reserved_keys(record).get("source_message_ids")
    if not isinstance(sources, list):
        return []
    return list(dict.fromkeys(s for s in sources if isinstance(s, str)))


def fuse_with_provenance(
    memories: Sequence[tuple[Record, float]],
    messages: Sequence[tuple[Record, float]],
    k: int,
    *,
    memory_weight: float = MEMORY_WEIGHT,
    message_weight: float = MESSAGE_WEIGHT,
) -> list[tuple[Record, Distance]]:
    """Fuse a ranked list of memory-like records and one of messages (module docstring).

    Args:
        memories: ``(record, distance)`` pairs of memory-like records and profiles,
            best first (a store search's result; the distances are not read).
        messages: ``(record, distance)`` pairs of messages, best first.
        k: Most results (>= 1).
        memory_weight, message_weight: The RRF weight of each list (> 0).

    Returns:
        Up to ``k`` ``(record, distance)`` pairs, best first, each record once (a
        memory standing in for the one message it came from in its place); the
        distance a
        ``DistanceKind.FUSED`` ``Distance`` in [0, 1].
    """
    by_score = fuses_scores(memories, messages)
    unit = 1.0 if by_score else 1.0 / (RRF_K + 1)  # what rank 1 (distance 0) is worth
    scores: dict[tuple[str, str], float] = {}
    records: dict[tuple[str, str], Record] = {}
    message_keys: dict[str, tuple[str, str]] = {}
    stand_in: dict[tuple[str, str], Record] = {}
    seen: set[tuple[str, str]] = set()
    for rank, (record, distance) in enumerate(messages, start=1):
        key = (record.record_type, record.id)
        if key not in records:
            records[key] = record
            message_keys[record.id] = key
            scores[key] = message_weight * _worth(rank, distance, by_score)
    for rank, (record, distance) in enumerate(memories, start=1):
        key = (record.record_type, record.id)
        if key in records or key in seen:
            continue
        seen.add(key)
        credit = memory_weight * _worth(rank, distance, by_score)
        sources = source_message_ids(record)
        targets = [message_keys[s] for s in sources if s in message_keys]
        for target in targets:
            scores[target] += credit / len(sources)
        if len(sources) == 1 and targets and targets[0] not in stand_in:
            stand_in[targets[0]] = record  # it takes the place of the message it restates
            continue
        records[key] = record
        scores[key] = credit
    entries = [(score, stand_in.get(key, records[key])) for key, score in scores.items()]
    entries.sort(key=lambda e: (-e[0], e[1].record_type, e[1].id))
    top = entries[0][0] if entries else 0.0
    ceiling = max(max(memory_weight, message_weight) * unit, top)
    return [
        (record, Distance.of(max(0.0, min(1.0, 1.0 - score / ceiling)), DistanceKind.FUSED))
        for score, record in entries[:k]
    ]


def fuses_scores(
    memories: Sequence[tuple[Record, float]], messages: Sequence[tuple[Record, float]]
) -> bool:
    """Whether ``fuse_with_provenance`` fuses the two lists by their scores (``1 -
    distance``) rather than by their ranks: when every distance of both is a
    ``DistanceKind.FUSED`` ``Distance`` (a HYBRID search's, or a long query's),
    each a share of the best fused score that query could reach in that store, so a
    memory and a message at the same distance are as near; a cosine or keyword
    distance is not comparable across the two lists (module docstring).

    Args:
        memories, messages: ``(record, distance)`` pairs (a ``float`` distance
            without a kind counts as not comparable).
    """
    pairs = (*memories, *messages)
    return bool(pairs) and all(
        isinstance(d, Distance) and d.kind is DistanceKind.FUSED for _, d in pairs
    )


def _worth(rank: int, distance: float, by_score: bool) -> float:
    """What a list entry adds to the fusion before its list's weight: its score
    ``1 - distance`` (``fuses_scores``) or its reciprocal rank ``1 / (RRF_K + rank)``."""
    return 1.0 - float(distance) if by_score else 1.0 / (RRF_K + rank)


def split_types(record_types: Iterable[str]) -> tuple[set[str], bool]:
    """The types of ``record_types`` other than ``message``, and whether ``message``
    is one of them."""
    types = set(record_types)
    return types - {MESSAGE}, MESSAGE in types


def fused_search_steps(
    search: Callable[..., list[tuple[Record, float]]],
    query: str,
    k: int,
    *,
    memory_search: Mapping[str, Any],
    message_search: Mapping[str, Any],
    drop: Iterable[str] = (),
) -> Steps[list[tuple[Record, float]]]:
    """Search memory-like records and messages with two calls of ``search`` and fuse
    the results (``fuse_with_provenance``); when one kind finds nothing, the other's
    results come back as the store ranked them, with its distances.

    The fusion reads each list's first ``MIN_DEPTH`` results whatever ``k`` (the
    head); a larger ``k`` gets the records ranked below them after the head
    (``store/headtail.py``: by best rank in either list, at distances above the
    head's), so a smaller ``k`` gives the first results of a larger one.

    Args:
        search: ``store.search`` (the steps driver calls it sync, or its async twin).
        query: The text query.
        k: Most results (>= 1): ``k`` come back when ``k`` records of either kind
            match.
        memory_search: The keyword arguments of the memory search (scope, record
            types, filter, ``as_of``).
        message_search: Those of the message search (``record_types={"message"}``).
        drop: Ids of messages to leave out (the card's shown messages); the message
            list is searched that much deeper.

    Returns:
        As ``fuse_with_provenance`` (or one search's pairs): ``k`` results when
        ``k`` records of either kind match (a memory standing in for a message
        takes its place, so none is lost).

    Raises:
        InvalidArgumentError: for ``k`` not an int >= 1; the store's errors.
    """
    check_int(k, "k", minimum=1)
    dropped = set(drop)
    lists = (search, query, memory_search, message_search, dropped)
    found, kept = yield from _ranked(*lists, MIN_DEPTH)
    if not found or not kept:  # one kind found: its own search, as ranked
        if (found or kept) and k > MIN_DEPTH:
            found, kept = yield from _ranked(*lists, k)
        return (found or kept)[:k]
    fused = fuse_with_provenance(found, kept, len(found) + len(kept))
    head = [(_key(record), float(d)) for record, d in fused]
    first = [[(_key(r), float(d)) for r, d in lst] for lst in (found, kept)]
    ranked = settled(head, first, MIN_DEPTH, k)
    records: dict[tuple[str, str], Record] = {_key(r): r for lst in (found, kept) for r, _ in lst}
    if ranked is None:
        n: int | None = min(k + 1, MAX_ROWS)
        deeper: list[list[tuple[tuple[str, str], float]]] = []
        while n is not None:
            both = yield from _ranked(*lists, n)
            records.update((_key(r), r) for lst in both for r, _ in lst)
            deeper = [[(_key(r), float(d)) for r, d in lst] for lst in both]
            n = next_depth(deeper, n, k)
        ranked = [*scored(head), *tail(head, first, deeper, MIN_DEPTH)]
    # The head as fused; the tail by distance, then record type and id (the store's rule).
    out: list[tuple[Record, float]] = [item for item in fused if float(item[1]) < 1.0]
    more = sorted(ranked[len(out) :], key=lambda kd: (kd[1], kd[0]))
    out += [(records[key], Distance.of(d, DistanceKind.FUSED)) for key, d in more]
    return out[:k]


def _key(record: Record) -> tuple[str, str]:
    return (record.record_type, record.id)


def _ranked(
    search: Callable[..., list[tuple[Record, float]]],
    query: str,
    memory_search: Mapping[str, Any],
    message_search: Mapping[str, Any],
    dropped: set[str],
    n: int,
) -> Steps[tuple[list[tuple[Record, float]], list[tuple[Record, float]]]]:
    """The two store searches, ``n`` deep: ``(memory-like records, messages not in
    ``dropped``)``; the messages are searched ``len(dropped)`` deeper."""
    messages: list[tuple[Record, float]] = yield from call(
        search, query, min(n + len(dropped), MAX_ROWS), **message_search
    )
    kept = [item for item in messages if item[0].id not in dropped]
    found: list[tuple[Record, float]] = yield from call(search, query, n, **memory_search)
    return found, kept
