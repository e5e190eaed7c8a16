"""Tied entries share one rank in the fusion (store/search.py tied_ranks, fusion.fuse)."""

from __future__ import annotations

from oam_core.apis.records import Record
from oam_core.store.fusion import fuse
from oam_core.store.search import signal_ranks, tied_ranks


def test_tied_ranks_give_a_tie_group_the_rank_of_its_first_entry() -> None:
    assert tied_ranks([]) == []
    assert tied_ranks([("a", 0.1)]) == [1]
    scored = [("a", 0.1), ("b", 0.2), ("c", 0.2), ("d", 0.2), ("e", 0.3), ("f", 0.3)]
    assert tied_ranks(scored) == [1, 2, 2, 2, 5, 5]
    # Scores (higher is better) alike: only equality matters.
    assert tied_ranks([("a", 9.0), ("b", 9.0), ("c", 1.5)]) == [1, 1, 3]
    # Nearly equal is not equal.
    assert tied_ranks([("a", 0.5), ("b", 0.5 + 1e-12)]) == [1, 2]


def test_fuse_with_shared_ranks_gives_tied_keys_one_score() -> None:
    lists = [["a", "b", "c"], ["a", "b", "c"]]
    plain = dict(fuse(lists, rrf_k=10))
    assert plain["a"] == 2 / 11 and plain["b"] == 2 / 12 and plain["c"] == 2 / 13
    tied = dict(fuse(lists, rrf_k=10, ranks=[[1, 1, 3], [1, 1, 3]]))
    assert tied["a"] == tied["b"] == 2 / 11
    assert tied["c"] == 2 / 13  # an untied entry keeps its position's rank
    # Default ranks are positions: the same scores to the last bit.
    assert fuse(lists, rrf_k=10, ranks=[[1, 2, 3], [1, 2, 3]]) == fuse(lists, rrf_k=10)


def _record(rid: str, content: str) -> Record:
    return Record(id=rid, record_type="memory", content=content)


def test_signal_ranks_tie_equal_text_scores_and_for_own_text_equal_content() -> None:
    scores = {"x": 0.5, "y": 0.4, "z": 0.4, "w": 0.4, "v": 0.1}
    records = {
        "x": _record("x", "a"),
        "y": _record("y", "same"),
        "z": _record("z", "other"),
        "w": _record("w", "same"),
        "v": _record("v", "same"),
    }
    keys = ["x", "y", "z", "w", "v"]
    assert signal_ranks(keys, scores, records) == [1, 2, 2, 2, 5]
    # The own-text list ties only copies: w shares y's rank across z.
    assert signal_ranks(keys, scores, records, by_content=True) == [1, 2, 3, 2, 5]
    assert signal_ranks([], scores, records) == []
