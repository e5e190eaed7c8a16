"""Rank positions of a scored list where equal scores share one rank
(docs/store.md#search-strategies).

A back end's ranked list orders records that are exactly as relevant (the same
text: the same vector, the same BM25 score) one after another, in whatever order it
read them. Reciprocal rank fusion (``fusion.fuse``) reads rank positions, so without
this the first of two identical records would outscore the second and HYBRID would
return exact duplicates at different distances, in insertion order. Here every
entry of a tie group gets the rank of the group's first entry ("competition"
ranking: 1, 2, 2, 4), so tied records get equal fused scores and the search orders
them by record type then id, as VECTOR and KEYWORD do. Ranks of untied entries are
their positions, as before.

The query's signal lists (``fusion.signal_lists``) rank the fused pool by a property of
the record and then by pool position; two entries of such a list tie when the text
lists tied them (equal fused score) and the property does not tell them apart
(``signal_ranks``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from oam_core.apis.records import Record


def tied_ranks(scored: Sequence[tuple[Hashable, float]]) -> list[int]:
    """The rank (from 1) of each entry of ``scored``, a list ordered best first by its
    score or distance: an entry whose value equals the previous entry's (exactly,
    ``==``) shares that entry's rank; any other entry's rank is its position.

    Args:
        scored: ``(key, score or distance)`` pairs in ranked order (a back end's
            ``rank_vector``, ``rank_keyword`` or native list).

    Returns:
        One int per entry, non-decreasing, ``ranks[0] == 1`` when non-empty.
    """
    ranks: list[int] = []
    previous: float | None = None
    for position, (_, value) in enumerate(scored, start=1):
        ranks.append(ranks[-1] if ranks and value == previous else position)
        previous = value
    return ranks


def signal_ranks(
    keys: Sequence[Hashable],
    scores: Mapping[Hashable, float],
    records: Mapping[Hashable, Record],
    *,
    by_content: bool = False,
) -> list[int]:
    """The rank (from 1) of each key of a signal list (``fusion.signal_lists``): a key
    shares the rank of an earlier key of the list to which the text lists' fusion
    gave the same score (``scores``), found among the keys just before it with that
    score; any other key's rank is its position.

    A list that holds the candidates with some property (speaker, date, time,
    preference) keeps them in pool order, so equal scores are all its tie; the
    own-text list orders by how many query terms a record holds first, so there
    (``by_content``) the two must also hold the same content.

    Args:
        keys: A signal list, best first (a sub-sequence of the fused pool).
        scores: The text lists' fused score of each key.
        records: The pool's loaded records.
        by_content: Whether tied keys must also have equal content.

    Returns:
        One int per key, ``ranks[0] == 1`` when non-empty.
    """
    ranks: list[int] = []
    for position, key in enumerate(keys, start=1):
        rank = position
        back = position - 2
        while back >= 0 and scores.get(keys[back]) == scores.get(key):
            if not by_content or _content(records, keys[back]) == _content(records, key):
                rank = ranks[back]
            back -= 1
        ranks.append(rank)
    return ranks


def _content(records: Mapping[Hashable, Record], key: Hashable) -> object:
    record = records.get(key)
    return key if record is None else record.content
