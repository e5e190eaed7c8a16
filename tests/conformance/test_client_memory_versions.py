"""The client's memory versions over every back end (docs/versions.md):
``update_memory``, ``invalidate_memory``, ``get_memory_history`` and their async
twins, ``search(as_of=)``, and context cards that get k current memories when k exist
(the store filters before its top-k cut; nothing over-fetches)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
import pytest
from _fixtures import CountingLlm, run_docstring_examples

from oam_core.errors import InvalidArgumentError, NotFoundError
from oam_core.memory.client import OracleAgentMemory
from oam_core.memory.clientmemories import ClientMemories
from oam_core.store.options import SearchStrategy

SCOPE = {"user_id": "alice", "agent_id": "helper"}
START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
"""The conformance ``clock`` fixture's start time."""


@pytest.fixture
def mem(make_store: Any) -> OracleAgentMemory:
    return OracleAgentMemory(
        store=make_store(search_strategy=SearchStrategy.KEYWORD), extract_memories=False
    )


def _iso(when: Any) -> str:
    return when.isoformat().replace("+00:00", "Z")


def test_update_supersedes_and_history_lists_every_version_oldest_first(
    mem: OracleAgentMemory, clock: Any
) -> None:
    v1 = mem.add_memory("Alice lives in Lisbon", **SCOPE, metadata={"topic": "home"})
    clock.advance(days=1)
    v2 = mem.update_memory(v1, "Alice lives in Porto", reason="moved north")
    clock.advance(days=1)
    v3 = mem.update_memory(v2, "Alice lives in Berlin", reason="moved abroad")
    for probe in (v1, v2, v3):
        history = mem.get_memory_history(probe)
        assert [r.id for r in history] == [v1, v2, v3]
    old, middle, new = mem.get_memory_history(v3)
    assert new.content == "Alice lives in Berlin" and new.record_type == "memory"
    assert (new.user_id, new.agent_id) == ("alice", "helper")
    assert new.metadata is not None and new.metadata["topic"] == "home"
    assert new.valid_until is None
    assert old.valid_until is not None and middle.valid_until is not None
    assert old.metadata is not None and old.metadata["$agent_memory"]["superseded_by"] == v2
    assert old.metadata["$agent_memory"]["reason"] == "moved north"
    assert middle.metadata is not None and middle.metadata["$agent_memory"]["status"] == "invalid"
    lonely = mem.add_memory("Alice likes trains", **SCOPE)
    assert [r.id for r in mem.get_memory_history(lonely)] == [lonely]


def test_a_managed_memory_is_updated_and_invalidated_by_its_application(
    mem: OracleAgentMemory, clock: Any
) -> None:
    mark = {"$agent_memory": {"managed": True}}
    v1 = mem.add_memory("Alice likes green", **SCOPE, metadata={**mark, "topic": "colour"})
    clock.advance(days=1)
    v2 = mem.update_memory(v1, "Alice likes blue", reason="changed")
    old, new = mem.get_memory_history(v2)
    # the new version stays the application's; the old one is ended as usual
    assert new.metadata == {
        "$agent_memory": {"managed": True, "supersedes": [v1]},
        "topic": "colour",
    }
    assert old.metadata is not None and old.metadata["$agent_memory"]["superseded_by"] == v2
    clock.advance(days=1)
    v3 = mem.update_memory(v2, "Alice likes red", metadata={"topic": "hue"})
    assert mem.get_memory_history(v3)[-1].metadata == {
        "$agent_memory": {"managed": True, "supersedes": [v2]},
        "topic": "hue",
    }
    clock.advance(days=1)
    mem.invalidate_memory(v3, reason="no favourite")
    assert [r for r, _ in mem.search("Alice likes", **SCOPE, k=5)] == []


def _links(mem: OracleAgentMemory, memory_id: str) -> dict[str, Any]:
    record = mem.store.get("memory", memory_id)
    assert record is not None and record.metadata is not None
    keys = record.metadata["$agent_memory"]
    return {"superseded_by": keys.get("superseded_by"), "supersedes": keys.get("supersedes")}


def test_deleting_a_version_joins_its_neighbours(mem: OracleAgentMemory, clock: Any) -> None:
    v1 = mem.add_memory("Alice lives in Lisbon", **SCOPE)
    clock.advance(days=1)
    v2 = mem.update_memory(v1, "Alice lives in Porto")
    clock.advance(days=1)
    v3 = mem.update_memory(v2, "Alice lives in Paris")
    assert mem.delete_memory(v2) == 1
    assert _links(mem, v1) == {"superseded_by": v3, "supersedes": None}
    assert _links(mem, v3) == {"superseded_by": None, "supersedes": [v1]}
    for probe in (v1, v3):
        assert [r.id for r in mem.get_memory_history(probe)] == [v1, v3]
    assert mem.delete_memory(v3) == 1
    assert _links(mem, v1) == {"superseded_by": None, "supersedes": None}
    assert [r.id for r in mem.get_memory_history(v1)] == [v1]
    with pytest.raises(InvalidArgumentError) as raised:
        mem.update_memory(v1, "Alice lives in Rome")
    assert v2 not in str(raised.value) and v3 not in str(raised.value)
    assert [r.id for r in mem.store.list("memory")] == [v1]


def test_a_record_upserted_on_an_ended_id_is_not_in_the_old_chain(
    mem: OracleAgentMemory, clock: Any
) -> None:
    v1 = mem.add_memory("Alice lives in Lisbon", **SCOPE)
    clock.advance(days=1)
    v2 = mem.update_memory(v1, "Alice lives in Berlin")
    mem.store.upsert(["Alice lives in Porto"], "memory", record_ids=[v1], user_ids="alice")
    assert [r.content for r in mem.get_memory_history(v1)] == ["Alice lives in Porto"]
    assert [r.content for r in mem.get_memory_history(v2)] == ["Alice lives in Berlin"]


def test_search_reads_current_memories_unless_asked_for_a_time_or_every_version(
    mem: OracleAgentMemory, clock: Any
) -> None:
    v1 = mem.add_memory("Alice lives in Lisbon", **SCOPE)
    moved = START + timedelta(days=2)
    clock.set(moved + timedelta(days=1))
    v2 = mem.update_memory(v1, "Alice lives in Porto", valid_from=moved)
    now = {r.id for r, _ in mem.search("Alice lives", user_id="alice", k=10)}
    assert now == {v2}
    every = {r.id for r, _ in mem.search("Alice lives", user_id="alice", k=10, as_of=None)}
    assert every == {v1, v2}
    before = mem.search("Alice lives", user_id="alice", k=10, as_of=START + timedelta(days=1))
    assert [r.id for r, _ in before] == [v1]
    iso = mem.search("Alice lives", user_id="alice", k=10, as_of=_iso(moved))
    assert [r.id for r, _ in iso] == [v2]
    with pytest.raises(InvalidArgumentError, match="as_of"):
        mem.search("Alice lives", as_of="not a time")


def test_invalidate_ends_a_memory_once_and_search_leaves_it_out(
    mem: OracleAgentMemory, clock: Any
) -> None:
    car = mem.add_memory("Alice has a red car", **SCOPE)
    clock.advance(hours=1)
    assert mem.invalidate_memory(car, reason="sold it") is True
    assert mem.invalidate_memory(car) is False
    record = mem.store.get("memory", car)
    assert record is not None and record.valid_until is not None
    assert record.metadata is not None
    keys = record.metadata["$agent_memory"]
    assert keys["status"] == "invalid" and keys["superseded_by"] is None
    assert keys["reason"] == "sold it"
    assert mem.search("red car", k=5) == []
    assert [r.id for r, _ in mem.search("red car", k=5, as_of=None)] == [car]


def test_ending_a_memory_never_moves_an_end_it_already_has_later(
    mem: OracleAgentMemory, clock: Any
) -> None:
    gym = mem.store.add(
        ["Alice has a gym membership"],
        "memory",
        user_ids="alice",
        agent_ids="helper",
        valid_from=START - timedelta(days=30),
        valid_until=START + timedelta(days=300),
    )[0]
    assert mem.invalidate_memory(gym, valid_until=START + timedelta(days=900)) is True
    record = mem.store.get("memory", gym)
    assert record is not None and record.valid_until is not None
    assert datetime.fromisoformat(record.valid_until) == START + timedelta(days=300)
    assert record.metadata is not None and record.metadata["$agent_memory"]["status"] == "invalid"
    at = _iso(START + timedelta(days=400))
    assert mem.search("gym membership", k=5, as_of=at) == []

    job = mem.store.add(
        ["Alice works at Acme"],
        "memory",
        user_ids="alice",
        agent_ids="helper",
        valid_until=START + timedelta(days=100),
    )[0]
    later = mem.update_memory(job, "Alice works at Globex", valid_from=START + timedelta(days=200))
    old = mem.store.get("memory", job)
    assert old is not None and old.valid_until is not None
    assert datetime.fromisoformat(old.valid_until) == START + timedelta(days=100)
    gap = _iso(START + timedelta(days=150))
    assert mem.search("works at", k=5, as_of=gap) == []
    after = [r.id for r, _ in mem.search("works at", k=5, as_of=_iso(START + timedelta(days=250)))]
    assert after == [later]


def test_unknown_and_non_current_ids_are_refused(mem: OracleAgentMemory, clock: Any) -> None:
    v1 = mem.add_memory("Alice lives in Lisbon", **SCOPE)
    clock.advance(days=1)
    v2 = mem.update_memory(v1, "Alice lives in Porto")
    with pytest.raises(InvalidArgumentError, match="memory_id"):
        mem.update_memory(v1, "Alice lives in Faro")
    for call in (
        lambda: mem.update_memory("no-such-memory", "x"),
        lambda: mem.invalidate_memory("no-such-memory"),
        lambda: mem.get_memory_history("no-such-memory"),
    ):
        with pytest.raises(NotFoundError):
            call()
    assert [r.id for r in mem.get_memory_history(v2)] == [v1, v2]


def test_async_twins_do_the_same(mem: OracleAgentMemory, clock: Any) -> None:
    async def scenario() -> None:
        v1 = await mem.add_memory_async("Alice lives in Lisbon", **SCOPE)
        clock.advance(days=1)
        v2 = await mem.update_memory_async(v1, "Alice lives in Porto", reason="moved")
        assert [r.id for r in await mem.get_memory_history_async(v1)] == [v1, v2]
        hits = await mem.search_async("Alice lives", user_id="alice", as_of=None)
        assert {r.id for r, _ in hits} == {v1, v2}
        clock.advance(days=1)
        assert await mem.invalidate_memory_async(v2, reason="left") is True
        assert await mem.search_async("Alice lives", user_id="alice") == []

    anyio.run(scenario)


def test_a_card_gets_k_current_memories_when_k_exist(mem: OracleAgentMemory, clock: Any) -> None:
    """Ten superseded versions outrank the current memories for the card's query;
    the card still shows exactly the k=2 current ones (an over-fetch of 3k would
    have found none)."""
    thread = mem.create_thread(**SCOPE)
    thread.add_messages([{"role": "user", "content": "Which flat in Lisbon does Alice rent?"}])
    current = mem.add_memory("Alice rents a flat in Lisbon near the river", **SCOPE)
    for n in range(10):
        clock.advance(hours=1)
        current = mem.update_memory(current, f"Alice rents flat {n} in Lisbon, which flat {n}")
    trains = mem.add_memory("Alice likes trains in Lisbon", **SCOPE)
    card = thread.get_context_card(fallback_message_count=1, max_relevant_results=2)
    shown = [r.id for r, _ in card.relevant_results]
    assert sorted(shown) == sorted([current, trains])


def test_docstring_examples_run(make_store: Any) -> None:
    def fresh() -> dict[str, Any]:
        return {"client": OracleAgentMemory(store=make_store(), llm=CountingLlm())}

    assert run_docstring_examples(ClientMemories, fresh) >= 5


@pytest.mark.parametrize("content", ["", "   ", None])
def test_update_refuses_blank_content_and_writes_nothing(
    mem: OracleAgentMemory, content: Any
) -> None:
    v1 = mem.add_memory("Alice lives in Lisbon", **SCOPE)
    with pytest.raises(InvalidArgumentError, match="content"):
        mem.update_memory(v1, content)
    assert [r.id for r in mem.get_memory_history(v1)] == [v1]
    assert [r.id for r in mem.store.list("memory")] == [v1]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("a\x00b", "content contains a NUL character (U+0000) at index 1"),
        ("a\ud800b", "content contains a lone surrogate (U+D800) at index 1"),
    ],
)
def test_add_and_update_name_content_for_text_no_store_can_hold(
    mem: OracleAgentMemory, content: str, says: str
) -> None:
    v1 = mem.add_memory("Alice lives in Lisbon", **SCOPE)
    with pytest.raises(InvalidArgumentError) as raised:
        mem.update_memory(v1, content)
    assert str(raised.value).startswith(says)
    with pytest.raises(InvalidArgumentError) as raised:
        mem.add_memory(content, **SCOPE)
    assert str(raised.value).startswith(says)
    assert [r.id for r in mem.store.list("memory")] == [v1]


def test_an_ended_version_cannot_be_reopened_through_store_update(
    mem: OracleAgentMemory, clock: Any
) -> None:
    v1 = mem.add_memory("Alice lives in Lisbon", **SCOPE)
    clock.advance(days=1)
    v2 = mem.update_memory(v1, "Alice lives in Porto")
    car = mem.add_memory("Alice has a red car", **SCOPE)
    clock.advance(hours=1)
    mem.invalidate_memory(car)
    before = {r.id: (r.valid_from, r.valid_until, r.metadata) for r in mem.store.list("memory")}
    later = START + timedelta(days=30)
    earlier = START - timedelta(days=30)
    for memory_id, why in ((v1, "replaced by"), (car, "was invalidated")):
        for end in (None, later):
            with pytest.raises(InvalidArgumentError, match=f"valid_until=.*{why}"):
                mem.store.update("memory", memory_id, valid_until=end)
        # Its start moved would reopen it too (trial 47 f03).
        for start in (earlier, later):
            with pytest.raises(InvalidArgumentError, match=f"valid_from=.*{why}"):
                mem.store.update("memory", memory_id, valid_from=start)
    after = {r.id: (r.valid_from, r.valid_until, r.metadata) for r in mem.store.list("memory")}
    assert after == before
    assert [r.id for r, _ in mem.search("Alice lives", k=5)] == [v2]
    # The same end again, or another field of the old version, is still accepted.
    old = mem.store.get("memory", v1)
    assert old is not None
    mem.store.update("memory", v1, valid_until=old.valid_until)
    mem.store.update("memory", v1, valid_from=old.valid_from)
    mem.store.update("memory", v1, metadata={"note": "typo fixed"})
    assert [r.id for r, _ in mem.search("Alice lives", k=5)] == [v2]


def test_a_version_cannot_start_before_the_version_it_replaced_ends(
    mem: OracleAgentMemory, clock: Any
) -> None:
    """Trial 51 f01: moving the newer version's start earlier than its predecessor's
    end (or to None) would make both hold: refused, nothing written; a later start
    (a gap) is accepted."""
    v1 = mem.add_memory("Alice lives in Lisbon", **SCOPE)
    car = mem.add_memory("Alice drives a red car", **SCOPE)
    clock.advance(days=1)
    v2 = mem.update_memory(v1, "Alice lives in Porto")
    plan = mem.update_memory(car, "Alice drives a blue car", valid_from=START + timedelta(days=400))
    before = {r.id: (r.valid_from, r.valid_until, r.metadata) for r in mem.store.list("memory")}
    for memory_id, start in (
        (v2, None),
        (v2, START - timedelta(days=30)),
        (plan, START + timedelta(days=2)),  # planned for later, moved to now
        (plan, None),
    ):
        with pytest.raises(InvalidArgumentError, match=r"valid_from=.*replaced.*would make both"):
            mem.store.update("memory", memory_id, valid_from=start)
    after = {r.id: (r.valid_from, r.valid_until, r.metadata) for r in mem.store.list("memory")}
    assert after == before
    assert [r.id for r, _ in mem.search("lives", k=5)] == [v2]
    assert [r.id for r, _ in mem.search("drives", k=5)] == [car]
    # Its own start again, or a start after the predecessor's end (a gap), is accepted.
    current = mem.store.get("memory", v2)
    assert current is not None and current.valid_from is not None
    assert mem.store.update("memory", v2, valid_from=current.valid_from) == 1
    assert mem.store.update("memory", v2, valid_from=START + timedelta(days=1, hours=6)) == 1
    assert mem.store.update("memory", plan, valid_from=START + timedelta(days=500)) == 1
    clock.advance(days=1)
    assert [r.id for r, _ in mem.search("lives", k=5)] == [v2]
