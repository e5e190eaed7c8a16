"""The fusion of memories and messages in which a memory counts for its source
messages (``oam_core/memory/provenancefusion.py``), on hand-built ranked lists."""

from __future__ import annotations

from typing import Any

import pytest

from oam_core.apis.records import MessageRecord, Record
from oam_core.memory.provenancefusion import (
    MIN_DEPTH,
    fuse_with_provenance,
    fused_search_steps,
    fuses_scores,
    source_message_ids,
    split_types,
)
from oam_core.steps import run_sync
from oam_core.store.fusion import Distance, DistanceKind


def _message(record_id: str) -> tuple[Record, float]:
    return MessageRecord(id=record_id, record_type="message", content=record_id, role="user"), 0.3


def _memory(record_id: str, *sources: Any, record_type: str = "memory") -> tuple[Record, float]:
    metadata = {"$agent_memory": {"source_message_ids": list(sources)}} if sources else None
    return Record(id=record_id, record_type=record_type, content=record_id, metadata=metadata), 0.2


def _ids(fused: list[tuple[Record, float]]) -> list[str]:
    return [record.id for record, _ in fused]


def test_a_memory_lifts_its_source_turn_above_the_first_turn() -> None:
    messages = [_message("m1"), _message("m2"), _message("m3")]
    memories = [_memory("a", "m3"), _memory("b")]
    fused = fuse_with_provenance(memories, messages, 5)
    # m3: 1/8 (its own rank 3) + 1/6 (memory a at rank 1) = 0.2917, first, shown as
    # a, the memory extracted from it alone (m3 is not listed again); m1 (1/6), then
    # the tie at 1/7 (b, m2), broken by record type then id.
    assert _ids(fused) == ["a", "m1", "b", "m2"]
    distances = [d for _, d in fused]
    # m3 scores above the best one list gives (1/6): distances are 1 - score / m3's.
    top = 1 / 8 + 1 / 6
    assert distances == pytest.approx(
        [0.0, 1 - (1 / 6) / top, 1 - (1 / 7) / top, 1 - (1 / 7) / top]
    )
    assert all(d.kind is DistanceKind.FUSED for d in distances)


def test_a_memory_with_a_source_outside_the_list_keeps_its_entry() -> None:
    messages = [_message("m1"), _message("m2")]
    memories = [_memory("a", "elsewhere"), _memory("b", "m2", "elsewhere"), _memory("c")]
    fused = fuse_with_provenance(memories, messages, 5)
    # m2: 1/7 + (1/7) / 2 (b at rank 2, two sources); a: 1/6 with m1 (1/6), "memory"
    # before "message": a keeps its entry (its source is not in the list), and so does
    # b (drawn from two messages, it is no repeat of m2); c (no sources) 1/8.
    assert _ids(fused) == ["m2", "a", "m1", "b", "c"]


def test_a_memory_divides_its_credit_among_its_sources_and_credits_add_up() -> None:
    messages = [_message("m1"), _message("m2"), _message("m3"), _message("m4")]
    memories = [_memory("a", "m4", "m2"), _memory("b", "m4")]
    fused = fuse_with_provenance(memories, messages, 6)
    # m4: 1/9 + (1/6) / 2 + 1/7 = 0.337, shown as b (drawn from m4 alone); m2: 1/7 +
    # (1/6) / 2 = 0.226; a (1/6, two sources: its own entry) and m1 (1/6); m3 1/8.
    assert _ids(fused) == ["b", "m2", "a", "m1", "m3"]
    top = 1 / 9 + 1 / 12 + 1 / 7
    assert [d for _, d in fused] == pytest.approx(
        [0.0, 1 - (1 / 7 + 1 / 12) / top, 1 - (1 / 6) / top, 1 - (1 / 6) / top, 1 - (1 / 8) / top]
    )


def test_sources_outside_the_message_list_are_not_added() -> None:
    fused = fuse_with_provenance([_memory("a", "elsewhere")], [_message("m1")], 5)
    assert _ids(fused) == ["a", "m1"]


def test_unaided_first_places_are_at_zero_as_in_a_search_of_one_kind() -> None:
    fused = fuse_with_provenance([_memory("a"), _memory("b")], [_message("m1")], 3)
    # No message scores above the best one list gives (1/6): a and m1 at 0, b at
    # 1 - (1/7) / (1/6); equal distances in record type, then id order.
    assert _ids(fused) == ["a", "m1", "b"]
    assert [d for _, d in fused] == pytest.approx([0.0, 0.0, 1 / 7])


def test_k_cuts_and_each_record_comes_once() -> None:
    messages = [_message("m1"), _message("m1"), _message("m2")]
    memories = [_memory("a", "m2", "m2"), _memory("a"), _memory("b")]
    fused = fuse_with_provenance(memories, messages, 2)
    # m2: 1/8 (its first place, rank 3) + 1/6 once (a names it twice) = 0.2917, shown
    # as a (listed once); m1 (1/6) next, and k = 2 cuts b.
    assert _ids(fused) == ["a", "m1"]
    assert [d for _, d in fused] == pytest.approx([0.0, 1 - (1 / 6) / (1 / 8 + 1 / 6)])
    assert fuse_with_provenance([], [], 3) == []


def test_weights_set_each_lists_share() -> None:
    messages = [_message("m1"), _message("m2")]
    memories = [_memory("a", "m2"), _memory("b")]
    fused = fuse_with_provenance(memories, messages, 3, memory_weight=0.5)
    # m2 (shown as a): 1/7 + 0.5/6 = 0.2262 beats m1 (1/6); b: 0.5/7.
    assert _ids(fused) == ["a", "m1", "b"]
    assert fused[2][1] == pytest.approx(1 - (0.5 / 7) / (1 / 7 + 0.5 / 6))


def test_source_message_ids_reads_the_reserved_provenance() -> None:
    record, _ = _memory("a", "m1", 3, "m2", "m1")
    assert source_message_ids(record) == ["m1", "m2"]
    assert source_message_ids(_memory("b")[0]) == []
    odd = Record(id="c", record_type="fact", content="x", metadata={"$agent_memory": "no"})
    assert source_message_ids(odd) == []


def test_split_types() -> None:
    assert split_types({"message", "fact", "user_profile"}) == ({"fact", "user_profile"}, True)
    assert split_types({"memory"}) == ({"memory"}, False)


def test_fused_search_steps_searches_each_kind_and_drops_shown_messages() -> None:
    calls: list[tuple[str, int, dict[str, Any]]] = []

    def search(query: str, k: int, **kwargs: Any) -> list[tuple[Record, float]]:
        calls.append((query, k, kwargs))
        if kwargs["record_types"] == {"message"}:
            return [_message("shown"), _message("m1"), _message("m2")]
        return [_memory("a", "m2"), _memory("b", "shown")]

    fused = run_sync(
        fused_search_steps(
            search,
            "q",
            2,
            memory_search={"record_types": {"fact"}, "user_id": "u"},
            message_search={"record_types": {"message"}, "thread_id": "t"},
            drop=["shown"],
        )
    )
    assert calls == [  # each kind MIN_DEPTH deep (the messages one more: "shown")
        ("q", MIN_DEPTH + 1, {"record_types": {"message"}, "thread_id": "t"}),
        ("q", MIN_DEPTH, {"record_types": {"fact"}, "user_id": "u"}),
    ]
    # m2: 1/7 (rank 2 once "shown" is dropped) + 1/6 (memory a), shown as a; then m1
    # (1/6), and k = 2 cuts b (its source, "shown", is not in the list).
    assert _ids(fused) == ["a", "m1"]


def test_a_memory_standing_in_for_its_message_costs_no_place() -> None:
    calls: list[int] = []

    def search(query: str, k: int, **kwargs: Any) -> list[tuple[Record, float]]:
        if kwargs["record_types"] == {"message"}:
            return [_message("m1")]
        calls.append(k)
        found = [_memory("a", "m1"), _memory("b", "m1"), _memory("c"), _memory("d")]
        return found[:k]

    steps = fused_search_steps(
        search,
        "q",
        3,
        memory_search={"record_types": {"fact"}},
        message_search={"record_types": {"message"}},
    )
    # a stands in for m1 (1/6 + 1/6 + 1/7 from b); b, also from m1, keeps its own
    # entry (1/7): only the best-ranked memory of a message takes its place; c 1/8.
    assert _ids(run_sync(steps)) == ["a", "b", "c"]
    assert calls == [MIN_DEPTH]
    with pytest.raises(ValueError, match="k"):
        run_sync(fused_search_steps(search, "q", "3", memory_search={}, message_search={}))  # type: ignore[arg-type]


def test_when_one_kind_finds_nothing_the_other_comes_back_as_ranked() -> None:
    def search(query: str, k: int, **kwargs: Any) -> list[tuple[Record, float]]:
        if kwargs["record_types"] == {"message"}:
            return [_message("m1"), _message("m2"), _message("m3")][:k]
        return []

    steps = fused_search_steps(
        search,
        "q",
        2,
        memory_search={"record_types": {"fact"}},
        message_search={"record_types": {"message"}},
    )
    # The store's own pairs (distance 0.3 each here), cut to k: nothing to fuse.
    assert [(r.id, d) for r, d in run_sync(steps)] == [("m1", 0.3), ("m2", 0.3)]


def _scored(
    item: tuple[Record, float], distance: float, kind: DistanceKind
) -> tuple[Record, Distance]:
    return item[0], Distance.of(distance, kind)


def test_hybrid_lists_are_fused_by_their_scores() -> None:
    fused_kind = DistanceKind.FUSED
    messages = [_scored(_message("m1"), 0.1, fused_kind), _scored(_message("m2"), 0.2, fused_kind)]
    memories = [_scored(_memory("a"), 0.5, fused_kind), _scored(_memory("b"), 0.6, fused_kind)]
    assert fuses_scores(memories, messages)
    # By score (1 - distance): m1 0.9, m2 0.8, a 0.5, b 0.4. By rank, a would tie m1
    # at 1/6 and come first ("memory" before "message"), b tie m2 at 1/7.
    fused = fuse_with_provenance(memories, messages, 4)
    assert _ids(fused) == ["m1", "m2", "a", "b"]
    assert [d for _, d in fused] == pytest.approx([0.1, 0.2, 0.5, 0.6])
    assert _ids(fuse_with_provenance([(r, float(d)) for r, d in memories], messages, 4)) == [
        "a",
        "m1",
        "b",
        "m2",
    ]


def test_a_memory_credits_its_source_by_its_score_under_hybrid() -> None:
    fused_kind = DistanceKind.FUSED
    messages = [_scored(_message("m1"), 0.1, fused_kind), _scored(_message("m2"), 0.2, fused_kind)]
    memories = [_scored(_memory("c", "m2"), 0.3, fused_kind)]
    fused = fuse_with_provenance(memories, messages, 3)
    # m2: 0.8 + 0.7 = 1.5, shown as c; m1 0.9; the ceiling is m2's 1.5.
    assert _ids(fused) == ["c", "m1"]
    assert [d for _, d in fused] == pytest.approx([0.0, 1 - 0.9 / 1.5])


def test_distances_of_other_kinds_are_fused_by_rank() -> None:
    messages = [_scored(_message("m1"), 0.1, DistanceKind.COSINE)]
    memories = [_scored(_memory("a"), 0.5, DistanceKind.COSINE)]
    assert not fuses_scores(memories, messages)
    mixed = [_scored(_memory("a"), 0.5, DistanceKind.KEYWORD)]
    assert not fuses_scores(mixed, [_scored(_message("m1"), 0.1, DistanceKind.FUSED)])
    # ranks: a and m1 both 1/6, "memory" before "message"
    assert _ids(fuse_with_provenance(memories, messages, 2)) == ["a", "m1"]
