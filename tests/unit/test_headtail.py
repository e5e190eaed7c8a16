"""A fused ranking's head and tail (store/headtail.py): whatever ``k``, the first
results are the same, order and distances, also when ties straddle every cut and
some head entries have no score (docs/store.md#search-strategies)."""

from __future__ import annotations

import itertools
import random

import pytest

from oam_core.store.fusion import fuse, rrf_distance
from oam_core.store.headtail import next_depth, settled, tail, tail_distance, with_tail

DEPTH = 6

Lists = list[list[tuple[str, float]]]


def _lists(seed: int, n_lists: int) -> Lists:
    """``n_lists`` ranked lists over 40 keys, scores from a few levels (ties everywhere),
    ties in the order of a record key that is not the keys' order (as a back end
    orders them by row key, the store's final sort by type and id); not every key in
    every list."""
    rnd = random.Random(seed)
    keys = [f"k{i:02d}" for i in range(40)]
    row_key = dict(zip(keys, rnd.sample(range(40), 40), strict=True))
    out = []
    for _ in range(n_lists):
        held = [key for key in keys if rnd.random() < 0.8]
        scored = [(key, float(rnd.randint(0, 4))) for key in held]
        out.append(sorted(scored, key=lambda ks: (-ks[1], row_key[ks[0]])))
    return out


def _head(first: Lists, weights: list[float]) -> list[tuple[str, float]]:
    """RRF of the lists by position; a list of weight 0 gives its records no score."""
    fused = fuse([[key for key, _ in lst] for lst in first], weights)
    return [(key, rrf_distance(s, sum(weights))) for key, s in fused]


def _results(full: Lists, weights: list[float], k: int) -> list[tuple[str, float]]:
    first = [lst[:DEPTH] for lst in full]
    ranked = with_tail(_head(first, weights), first, lambda n: [lst[:n] for lst in full], DEPTH, k)
    return sorted(ranked, key=lambda kd: (kd[1], kd[0]))[:k]  # as the store's final sort


@pytest.mark.parametrize(
    "weights", [[1.0], [1.0, 1.0, 1.0], [0.0, 1.0, 0.5]], ids=["one", "three", "zero"]
)
@pytest.mark.parametrize("seed", range(8))
def test_every_smaller_k_is_a_prefix_of_every_larger_one(seed: int, weights: list[float]) -> None:
    full = _lists(seed, len(weights))
    everything = _results(full, weights, 40)
    assert len(everything) == len({key for lst in full for key, _ in lst})
    for k in range(1, 41):
        assert _results(full, weights, k) == everything[:k], k
    distances = [d for _, d in everything]
    assert all(0.0 <= d < 1.0 for d in distances)


def test_tail_distances_rise_from_the_heads_last_toward_one() -> None:
    assert tail_distance(0.5, 6, 6) == 0.75
    steps = [tail_distance(0.9, rank, 50) for rank in range(1, 500)]
    assert all(0.9 < a < b < 1.0 for a, b in itertools.pairwise(steps))


def test_a_tie_at_the_kth_place_is_ranked_whole() -> None:
    lst = [("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 2.0), ("e", 1.0)]
    assert next_depth([lst[:3]], 3, 2) == 6  # "c" ties "b", the 2nd: rank deeper
    assert next_depth([lst], 5, 2) is None  # "e" does not tie it
    assert next_depth([lst[:2]], 3, 2) is None  # a short list holds everything


def test_what_the_head_settles_and_what_the_tail_holds() -> None:
    first = [[("a", 0.9), ("b", 0.5)], [("c", 0.7)]]
    head = [("a", 0.2), ("c", 0.4), ("b", 1.0)]  # "b" has no score
    # Enough scored entries: no deeper ranking; complete lists: their tail.
    assert settled(head, first, 3, 2) == [("a", 0.2), ("c", 0.4)]
    b_alone = ("b", tail_distance(0.4, 2, 3))  # 2nd of its list
    assert settled(head, first, 3, 3) == [("a", 0.2), ("c", 0.4), b_alone]
    assert settled(head, first, 2, 3) is None  # the first list may hold more
    deeper = [[("a", 0.9), ("b", 0.5), ("d", 0.5), ("e", 0.1)], [("c", 0.7), ("f", 0.6)]]
    # "b" and "d" tie at rank 2, "f" is 2nd of its list: one distance, one rank.
    second, fourth = tail_distance(0.4, 2, 2), tail_distance(0.4, 4, 2)
    assert tail(head, first, deeper, 2) == [
        ("b", second),
        ("d", second),
        ("f", second),
        ("e", fourth),
    ]
    # A record of ``first`` the head does not list (a message a memory stands in
    # for) is not listed again.
    assert [key for key, _ in tail(head[:2], first, deeper, 2)] == ["d", "f", "e"]
