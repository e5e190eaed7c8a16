"""Memories and messages searched together (docs/retrieval.md#memories-and-messages-together):
the client's search and the context card fuse the two kinds (by rank, or by
score when both are HYBRID's fused distances), a memory also
counting for the messages it was extracted from, on every back end."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from test_store_bad_queries import CASES, RECORDS

from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.records import MEMORY_TYPES, Record
from oam_core.memory.client import OracleAgentMemory
from oam_core.memory.provenancefusion import fuses_scores
from oam_core.memory.thread import OracleThread
from oam_core.store.fusion import DistanceKind
from oam_core.store.threads import thread_store

QUESTION = "What colour did Ana paint the fence?"
BOTH = {"message", *MEMORY_TYPES}


@pytest.fixture
def mem(store: Any) -> OracleAgentMemory:
    return OracleAgentMemory(store=store, extract_memories=False)


def _derived(
    store: Any, thread_id: str, record_id: str, content: str, sources: list[str], user: str
) -> None:
    """A memory written as the extraction pipeline writes it: in its thread, scoped to
    the user and the thread's agent, with ``$agent_memory.source_message_ids``."""
    threads = thread_store(store)
    row = threads.get_thread_row(thread_id)
    assert row is not None
    batch = PendingRecordBatch(
        texts=[content],
        record_type="memory",
        record_ids=[record_id],
        thread_ids=thread_id,
        user_ids=user,
        agent_ids=row.agent_id,
        metadata={"$agent_memory": {"source_message_ids": sources}},
    )
    state = dict(row.state or {})
    assert threads.commit_thread_pass(
        thread_id, expected_state=state, state=state, batches=[batch]
    ) == [record_id]


@pytest.fixture
def t(mem: OracleAgentMemory, store: Any) -> OracleThread:
    """Thread t1 of user u1: the turn that answers (``t-paint``) shares no word with
    the question, a turn that does not answer (``t-fence``) shares several; the memory
    extracted from ``t-paint`` states the answer in the question's words."""
    thread = mem.create_thread(thread_id="t1", user_id="u1")
    thread.add_messages(
        [
            {
                "role": "user",
                "content": "The fence in the garden needs paint, Ana.",
                "id": "t-fence",
            },
            {
                "role": "user",
                "content": "Finished it on Saturday, it looks so green now!",
                "id": "t-paint",
            },
            {"role": "user", "content": "We had lunch by the river at noon.", "id": "t-lunch"},
        ]
    )
    _derived(store, "t1", "mem-1", "Ana painted the fence green.", ["t-paint"], "u1")
    return thread


def _ids(results: list[tuple[Record, float]]) -> list[str]:
    return [record.id for record, _ in results]


def test_a_memory_raises_its_source_turn(mem: OracleAgentMemory, t: OracleThread) -> None:
    messages = mem.search(QUESTION, user_id="u1", k=3, record_types={"message"})
    assert _ids(messages)[0] == "t-fence"  # by its words alone
    assert _ids(mem.search(QUESTION, user_id="u1", k=1, record_types={"memory"})) == ["mem-1"]
    fused = mem.search(QUESTION, user_id="u1", k=4, record_types=BOTH)
    # t-paint: its own score + mem-1's, above t-fence, and shown as mem-1, the memory
    # extracted from it alone: 3 results for k = 4.
    assert _ids(fused) == ["mem-1", "t-fence", "t-lunch"]
    distances = [d for _, d in fused]
    assert all(getattr(d, "kind", None) is DistanceKind.FUSED for d in distances)
    assert distances == sorted(distances)
    memories = mem.search(QUESTION, user_id="u1", k=1, record_types={"memory"})
    if fuses_scores(memories, messages):
        # HYBRID: by score (1 - distance). t-paint scores its own plus mem-1's, above
        # 1 (the best one list gives): the others' distances are 1 - score / that.
        score = {r.id: 1 - float(d) for r, d in messages}
        top = max(1.0, score["t-paint"] + 1 - float(memories[0][1]))
        expected = [0.0, 1 - score["t-fence"] / top, 1 - score["t-lunch"] / top]
    else:
        # By rank: t-paint (second of the messages) scores 1/7 + 1/6, above the best
        # one list gives (t-fence first: 1/6, t-lunch 1/8).
        top = 1 / 7 + 1 / 6
        expected = [0.0, 1 - (1 / 6) / top, 1 - (1 / 8) / top]
    assert distances == pytest.approx(expected)
    # The default record types hold both kinds: the same fusion.
    assert _ids(mem.search(QUESTION, user_id="u1", k=4)) == _ids(fused)
    # k results when k exist.
    assert _ids(mem.search(QUESTION, user_id="u1", k=2)) == ["mem-1", "t-fence"]


def test_validity_windows_and_scopes_hold(
    mem: OracleAgentMemory, t: OracleThread, store: Any
) -> None:
    other = mem.create_thread(thread_id="t2", user_id="u2")
    other.add_messages([{"role": "user", "content": "Hello there.", "id": "t-other"}])
    # Another user's memory naming t-fence does not count in u1's search.
    _derived(store, "t2", "mem-2", "Ana painted the fence green", ["t-fence"], "u2")
    assert _ids(mem.search(QUESTION, user_id="u1", k=3))[:2] == ["mem-1", "t-fence"]
    assert mem.invalidate_memory("mem-1", reason="wrong")
    # An invalidated memory is not current: it neither comes back nor raises its turn.
    current = mem.search(QUESTION, user_id="u1", k=3)
    assert "mem-1" not in _ids(current) and _ids(current)[0] == "t-fence"
    # Every version (as_of=None): it is back, and so is its credit.
    every = mem.search(QUESTION, user_id="u1", k=3, as_of=None)
    assert _ids(every)[:2] == ["mem-1", "t-fence"] and "t-paint" not in _ids(every)
    # A thread scope applies to both kinds; mem-2's source is not in t2's messages, so
    # it keeps its own entry (and stands for that turn).
    assert _ids(mem.search(QUESTION, thread_id="t2", k=5)) == ["mem-2", "t-other"]


def test_one_kind_alone_is_the_stores_own_search(
    mem: OracleAgentMemory, t: OracleThread, store: Any
) -> None:
    for types in ({"message"}, {"memory", "fact"}):
        ours = mem.search(QUESTION, user_id="u1", k=3, record_types=types)
        theirs = store.search(QUESTION, 3, user_id="u1", exact_user_match=True, record_types=types)
        assert [(r.id, float(d)) for r, d in ours] == [(r.id, float(d)) for r, d in theirs]


def test_a_smaller_k_gives_a_prefix_of_a_larger_one(
    mem: OracleAgentMemory, t: OracleThread, store: Any
) -> None:
    """Each kind is ranked at least ``MIN_DEPTH`` deep whatever ``k``, so the fused
    order and distances do not depend on ``k`` (they did: k=1 and k=2 put different
    records first)."""
    t.add_messages([{"role": "user", "content": f"The fence post {n} is loose."} for n in range(4)])
    _derived(store, "t1", "mem-2", "Ana says the fence posts are loose.", ["t-fence"], "u1")
    full = [(r.id, round(d, 9)) for r, d in mem.search("fence posts", k=8, record_types=BOTH)]
    assert len(full) >= 6 and full[0][0] == "mem-2"
    for k in range(1, len(full)):
        got = [(r.id, round(d, 9)) for r, d in mem.search("fence posts", k=k, record_types=BOTH)]
        assert got == full[:k], k


def test_the_card_fuses_memories_and_the_threads_messages(t: OracleThread) -> None:
    t.add_messages([{"role": "user", "content": QUESTION, "id": "t-ask"}])
    card = t.get_context_card(fallback_message_count=1, max_relevant_results=3)
    # The asked question (shown in the summary) is left out; the answering turn comes
    # first, shown as the memory extracted from it.
    assert _ids([(r, d or 0.0) for r, d in card.relevant_results]) == [
        "mem-1",
        "t-fence",
        "t-lunch",
    ]
    assert "<record_id>mem-1</record_id>" in card.content


def test_async_twins_give_the_same_results(mem: OracleAgentMemory, t: OracleThread) -> None:
    t.add_messages([{"role": "user", "content": QUESTION, "id": "t-ask"}])

    async def both() -> tuple[list[str], list[str]]:
        found = await mem.search_async(QUESTION, user_id="u1", k=4)
        card = await t.get_context_card_async(fallback_message_count=1, max_relevant_results=3)
        return _ids(found), [r.id for r, _ in card.relevant_results]

    found, card = anyio.run(both)
    assert found == _ids(mem.search(QUESTION, user_id="u1", k=4))
    assert card == [
        r.id
        for r, _ in t.get_context_card(
            fallback_message_count=1, max_relevant_results=3
        ).relevant_results
    ]
    assert card[:2] == ["mem-1", "t-fence"]


@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
@pytest.mark.parametrize(("case", "query"), [c[:2] for c in CASES], ids=[c[0] for c in CASES])
def test_odd_queries_stay_well_formed_on_the_fused_path(
    make_store: Any, strategy: str, case: str, query: str
) -> None:
    """The odd-query table (tests/conformance/test_store_bad_queries.py) through the
    fused search: each text as a memory extracted from a message holding it, searched
    with both kinds; at most k results, each record once, ascending fused distances
    in [0, 1] (ties by type, then id)."""
    keyword = strategy == "KEYWORD"
    store = make_store(search_strategy=strategy, **({"embedder": None} if keyword else {}))
    client = OracleAgentMemory(store=store, extract_memories=False)
    thread = client.create_thread(thread_id="t1", user_id="u1")
    thread.add_messages(
        [{"role": "user", "content": text, "id": f"m-{key}"} for key, text in RECORDS.items()]
    )
    for key, text in RECORDS.items():
        _derived(store, "t1", f"f-{key}", text, [f"m-{key}"], "u1")
    k = 4
    results = client.search(query, k=k, user_id="u1")
    assert len(results) <= k
    keys = [(float(d), r.record_type, r.id) for r, d in results]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert all(
        0.0 <= d <= 1.0 and getattr(d, "kind", None) is DistanceKind.FUSED for _, d in results
    )
    if not keyword:
        assert len(results) == k  # the vector half always ranks every record
