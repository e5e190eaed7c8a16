"""``OracleThread`` over every store back end (docs/concepts.md#the-client-and-threads, docs/context-card.md; C01-C03,
C06, C18, C19 in docs/failure-modes.md)."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import anyio
import pytest
from _fixtures import STORE_TIME, CountingLlm, alternating, contents, run_docstring_examples

from oam_core.apis.thread import Message
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import InvalidArgumentError
from oam_core.memory.client import OracleAgentMemory
from oam_core.memory.contextcard import OracleContextCard
from oam_core.memory.summary import OracleSummary
from oam_core.memory.thread import OracleThread
from oam_core.memory.tokens import truncate_tail
from oam_core.store.threads import thread_store


@pytest.fixture
def mem(store: Any) -> OracleAgentMemory:
    return OracleAgentMemory(store=store, extract_memories=False)


@pytest.fixture
def t(mem: OracleAgentMemory) -> OracleThread:
    return mem.create_thread(thread_id="t1", user_id="u1", agent_id="a1")


# -- Oracle's SDK documentation examples, verbatim ------------------------------------


def test_seed_create_thread_example(tmp_path: Path) -> None:
    db_pool = str(tmp_path / "seed.db")
    embedder = HashingEmbedder(64)
    llm = CountingLlm()
    client = OracleAgentMemory(connection=db_pool, embedder=embedder)
    thread = client.create_thread(
        thread_id="c1",
        llm=llm,
        enable_context_summary=True,
    )
    assert len(thread.add_messages([{"role": "user", "content": "I love pizza."}])) == 1
    client.close()


def test_seed_thread_method_examples(t: OracleThread) -> None:
    thread = t
    assert thread.add_memory("Remember this preference", memory_id="mem-thread-docs") == (
        "mem-thread-docs"
    )
    assert len(thread.add_messages([{"role": "user", "content": "Thread message from docs"}])) == 1
    assert thread.delete_memory("456") == 0
    assert thread.delete_message("123") == 0


def test_seed_context_card_example(t: OracleThread) -> None:
    thread = t
    assert thread.add_memory("User likes pizza", memory_id="mem-context-docs") == (
        "mem-context-docs"
    )
    assert len(thread.add_messages([{"role": "user", "content": "Tell me about pizza"}])) == 1
    assert ("User likes pizza" in thread.get_context_card().content) is True


def test_seed_get_messages_example(t: OracleThread) -> None:
    thread = t
    assert len(thread.add_messages([{"role": "user", "content": "Stored message example"}])) == 1
    messages = thread.get_messages()
    assert messages[-1].content == "Stored message example"


def test_seed_get_summary_example(t: OracleThread) -> None:
    thread = t
    assert (
        len(thread.add_messages([{"role": "assistant", "content": "Summary source message"}])) == 1
    )
    summary = thread.get_summary()
    assert bool(summary.content) is True


def test_seed_card_and_summary_type_examples() -> None:
    card = OracleContextCard(summary="ctx")
    assert ("<summary>" in card.content and "ctx" in card.content) is True
    assert OracleContextCard(summary="").formatted_content == ""
    card = OracleContextCard(summary="ctx", topics=["travel"])
    assert ("<topics>" in card.formatted_content) is True
    summary = OracleSummary(content="Plan the Rome itinerary.")
    assert summary.content == "Plan the Rome itinerary."
    assert str(summary) == "Plan the Rome itinerary."
    assert OracleSummary(content="Keep the tea preference in mind.").content == (
        "Keep the tea preference in mind."
    )
    assert OracleSummary(content="Thread recap").formatted_content == "Thread recap"


def test_docstring_examples_run(make_store: Any) -> None:
    """The examples of Oracle's SDK documentation quoted in the docstrings run as written."""

    names = iter(range(1000))

    def fresh() -> dict[str, Any]:
        store = make_store(name=f"doc{next(names)}.db")
        client = OracleAgentMemory(store=store, llm=CountingLlm())
        return {"thread": client.create_thread(thread_id="c1")}

    assert run_docstring_examples(OracleThread, fresh) >= 12


# -- add_messages ----------------------------------------------------------------------


def test_add_messages_persists_scope_roles_timestamps_metadata(t: OracleThread, store: Any) -> None:
    # a message's id is optional on its own (test_message_rules.py)
    ids = t.add_messages(
        [Message("user", "hello", timestamp="2026-01-01T00:00:00+00:00", metadata={"k": 1})]
    )
    ids += t.add_messages([{"role": "assistant", "content": "", "id": "given-id"}])
    assert ids[1] == "given-id"
    first = store.get("message", ids[0])
    assert (first.thread_id, first.user_id, first.agent_id) == ("t1", "u1", "a1")
    assert (first.role, first.content, first.metadata) == ("user", "hello", {"k": 1})
    assert first.timestamp == "2026-01-01T00:00:00+00:00"
    got = t.get_messages()
    assert got[0] == Message(
        "user", "hello", timestamp="2026-01-01T00:00:00+00:00", metadata={"k": 1}, id=ids[0]
    )
    assert got[1] == Message("assistant", "", id="given-id")


def test_add_messages_generates_uuid4_ids_for_missing(t: OracleThread) -> None:
    ids = t.add_messages([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert len(set(ids)) == 2 and all(len(i) == 36 for i in ids)


def test_add_messages_empty_list_is_a_noop(
    mem: OracleAgentMemory, store: Any, snapshot: Any
) -> None:
    llm = CountingLlm()
    thread = mem.create_thread(thread_id="t-llm", llm=llm, extract_memories=True)
    before = snapshot(store)
    assert thread.add_messages([]) == []
    assert snapshot(store) == before
    assert llm.prompts == []


def test_whitespace_message_invents_no_memory(mem: OracleAgentMemory, store: Any) -> None:
    """C19: blank input is stored as a message, but yields no LLM call and no memory."""
    llm = CountingLlm()
    thread = mem.create_thread(thread_id="t-llm", llm=llm, extract_memories=True)
    thread.add_messages([{"role": "user", "content": "   \n\t "}])
    assert contents(thread.get_messages()) == ["   \n\t "]
    assert llm.prompts == []
    for record_type in ("memory", "fact", "preference", "guideline"):
        assert store.list(record_type, limit=None) == []


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([{"role": "user"}], ValueError),
        ([{"role": "", "content": "x"}], ValueError),
        ([{"role": "user", "content": None}], ValueError),
        ([{"role": "user", "content": "x", "extra": 1}], ValueError),
        ([42], TypeError),
        ("hello", ValueError),
        ({"role": "user", "content": "x"}, ValueError),
        (
            [
                {"role": "user", "content": "x", "id": "d"},
                {"role": "user", "content": "y", "id": "d"},
            ],
            ValueError,
        ),
    ],
)
def test_add_messages_rejects_bad_input_writing_nothing(
    t: OracleThread, store: Any, snapshot: Any, messages: Any, error: type[Exception]
) -> None:
    t.add_messages([{"role": "user", "content": "keep"}])
    before = snapshot(store)
    with pytest.raises(error):
        t.add_messages(messages)
    assert snapshot(store) == before


def test_add_messages_rejects_reserved_store_kwargs(t: OracleThread) -> None:
    with pytest.raises(ValueError, match="thread_ids"):
        t.add_messages([{"role": "user", "content": "x"}], thread_ids="other")
    assert t.get_messages() == []


def test_add_messages_forwards_store_kwargs(t: OracleThread, store: Any, clock: Any) -> None:
    t.add_messages([{"role": "user", "content": "short-lived"}], ttl_days=1)
    clock.advance(days=2)
    assert t.get_messages() == []


# -- get_messages windows (docs/concepts.md#the-client-and-threads; C01) --------------


@pytest.fixture
def t200(t: OracleThread) -> OracleThread:
    t.add_messages(alternating(200))
    return t


ALL = [f"m{i}" for i in range(200)]


def test_c01_full_history_in_insertion_order(t200: OracleThread) -> None:
    got = t200.get_messages(start=0, end=None)
    assert contents(got) == ALL
    assert [m.role for m in got[:4]] == ["user", "assistant", "user", "assistant"]
    assert contents(t200.get_messages(start=50, end=60)) == ALL[50:60]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, ALL[-100:]),
        ({"start": None}, ALL[-100:]),
        ({"start": 0}, ALL[0:100]),
        ({"start": 150}, ALL[150:250]),
        ({"start": 199}, ALL[199:]),
        ({"start": 500}, []),
        ({"start": -5}, ALL[-5:]),
        ({"start": -100}, ALL[-100:]),
        ({"start": -150}, ALL[-150:-50]),
        ({"start": 10, "end": None}, ALL[10:]),
        ({"start": 10, "end": -1}, ALL[10:]),
        ({"start": 10, "end": -2}, ALL[10:-2]),
        ({"start": -10, "end": -5}, ALL[-10:-5]),
        ({"start": -10, "end": None}, ALL[-10:]),
        ({"start": 60, "end": 50}, []),
        ({"start": 0, "end": 0}, []),
        ({"start": 195, "end": 1000}, ALL[195:]),
        ({"end": 3}, ALL[:3]),
        ({"end": None}, ALL),
        ({"start": None, "end": -1}, ALL),
    ],
)
def test_get_messages_windows(
    t200: OracleThread, kwargs: dict[str, Any], expected: list[str]
) -> None:
    assert contents(t200.get_messages(**kwargs)) == expected


@pytest.mark.parametrize(
    "kwargs", [{"start": "1"}, {"start": 1.0}, {"end": True}, {"start": 0, "end": "x"}]
)
def test_get_messages_rejects_non_int(t: OracleThread, kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        t.get_messages(**kwargs)


def test_get_messages_reads_only_the_window(t200: OracleThread, monkeypatch: Any) -> None:
    calls: list[tuple[Any, ...]] = []
    original = t200.store.list_thread_messages

    def spy(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        calls.append((args, kwargs, len(result)))
        return result

    monkeypatch.setattr(t200.store, "list_thread_messages", spy)
    t200.get_messages(start=20, end=30)
    t200.get_messages()
    assert [n for _, _, n in calls] == [10, 100]


def test_c02_equal_timestamps_keep_insertion_order(t: OracleThread) -> None:
    same = "2026-01-01T00:00:00+00:00"
    t.add_messages([{"role": "user", "content": c, "timestamp": same} for c in "zyx"])
    t.add_messages([{"role": "user", "content": c, "timestamp": same} for c in "wba"])
    for _ in range(3):
        assert contents(t.get_messages()) == list("zyxwba")
        assert contents(t.get_messages(start=2, end=4)) == ["x", "w"]


# -- deletions (C03; docs/concepts.md#the-client-and-threads) ------------------------


def test_c03_delete_middle_first_then_last(t: OracleThread) -> None:
    a, b, c = t.add_messages([{"role": "user", "content": x} for x in "ABC"])
    assert t.delete_message(b) == 1
    assert contents(t.get_messages()) == ["A", "C"]
    assert t.delete_message(a) == 1
    assert contents(t.get_messages()) == ["C"]
    assert t.delete_message(c) == 1
    assert t.get_messages() == []
    assert t.delete_message(c) == 0


def test_delete_message_and_memory_of_other_thread_return_zero(
    mem: OracleAgentMemory, t: OracleThread, store: Any
) -> None:
    other = mem.create_thread(thread_id="t2", user_id="u1", agent_id="a1")
    (msg,) = other.add_messages([{"role": "user", "content": "theirs"}])
    memory = other.add_memory("their memory")
    unscoped = t.add_memory("no thread", thread_id=None)
    fact = store.add(["a fact"], "fact", thread_ids="t2")[0]
    assert t.delete_message(msg) == 0
    assert t.delete_memory(memory) == 0
    assert t.delete_memory(unscoped) == 0
    assert t.delete_memory(fact) == 0
    assert t.delete_memory(msg) == 0
    assert t.delete_message(memory) == 0
    assert store.get("message", msg) is not None
    assert store.get("memory", memory) is not None
    assert store.get("fact", fact) is not None
    assert other.delete_message(msg) == 1
    assert other.delete_memory(fact) == 1


def test_delete_memory_keeps_messages_and_derived_memories(t: OracleThread, store: Any) -> None:
    (msg,) = t.add_messages([{"role": "user", "content": "I like tea"}])
    memory = t.add_memory("User likes tea")
    assert t.delete_message(msg) == 1
    assert store.get("memory", memory) is not None
    assert t.delete_memory(memory) == 1
    assert store.get("memory", memory) is None


@pytest.mark.parametrize("bad", [None, "", 5])
def test_delete_rejects_bad_ids(t: OracleThread, bad: Any) -> None:
    with pytest.raises(ValueError):
        t.delete_message(bad)
    with pytest.raises(ValueError):
        t.delete_memory(bad)


# -- add_memory --------------------------------------------------------------------------


def test_add_memory_scope_defaults_and_overrides(t: OracleThread, store: Any) -> None:
    default = store.get("memory", t.add_memory("x"))
    assert (default.thread_id, default.user_id, default.agent_id) == ("t1", "u1", "a1")
    moved = store.get("memory", t.add_memory("y", user_id="u9", thread_id=None))
    assert (moved.thread_id, moved.user_id, moved.agent_id) == (None, "u9", "a1")
    with_meta = store.get("memory", t.add_memory("z", metadata={"src": "doc"}))
    assert with_meta.metadata == {"src": "doc"}


def test_add_memory_rejects_bad_input(t: OracleThread, store: Any, snapshot: Any) -> None:
    before = snapshot(store)
    with pytest.raises(ValueError):
        t.add_memory(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        t.add_memory("x", user_id="")
    with pytest.raises(ValueError):
        t.add_memory("x", record_type="fact")
    t.add_memory("x", memory_id="dup")
    with pytest.raises(ValueError):
        t.add_memory("y", memory_id="dup")
    assert [r.content for r in store.list("memory")] == ["x"]
    del before


# -- get_summary (docs/context-card.md#summaries; C06) --------------------------------


def test_summary_is_transcript_lines(t: OracleThread) -> None:
    t.add_messages(
        [
            {"role": "user", "content": "I love pizza.", "timestamp": "2026-01-01T10:00:00"},
            {"role": "assistant", "content": "Noted."},
        ]
    )
    assert t.get_summary().content == (
        f"user (2026-01-01T10:00:00+00:00): I love pizza.\nassistant ({STORE_TIME}): Noted."
    )
    assert t.get_summary(except_last=1).content == "user (2026-01-01T10:00:00+00:00): I love pizza."
    assert t.get_summary(except_last=2).content == ""
    assert t.get_summary(except_last=5).content == ""


def test_summary_of_empty_thread_is_empty(t: OracleThread) -> None:
    assert t.get_summary() == OracleSummary("")


@pytest.mark.parametrize("budget", [1, 3, 4, 5, 10, 50, 1000])
def test_c06_tiny_budgets_give_short_well_formed_summaries(t: OracleThread, budget: int) -> None:
    t.add_messages([{"role": "user", "content": "word " * 2000} for _ in range(3)])
    t.add_messages([{"role": "assistant", "content": "the end"}])
    text = t.get_summary(token_budget=budget).content
    limit = int(budget * 3.5)
    assert len(text) <= limit
    if text:
        assert text.startswith("(truncated)\n")
        assert t.get_summary(token_budget=0).content.endswith(text[len("(truncated)\n") :])
    else:
        assert limit <= len("(truncated)\n")


def test_summary_budget_rules(t: OracleThread) -> None:
    t.add_messages([{"role": "user", "content": "x" * 400} for _ in range(300)])
    full = t.get_summary(token_budget=0).content
    assert full == t.get_summary(token_budget=-1).content
    assert full.count("\n") == 299
    bounded = t.get_summary(token_budget=1000).content
    assert len(bounded) == 3500
    assert bounded == "(truncated)\n" + full[-(3500 - 12) :]
    small = t.get_summary(token_budget=100_000).content
    assert small == full


@pytest.mark.parametrize("except_last", [0, 7, 120])
@pytest.mark.parametrize("budget", [700, 2000, 3000, 5000])
def test_summary_paging_equals_truncating_the_whole_transcript(
    t: OracleThread, except_last: int, budget: int
) -> None:
    t.add_messages(alternating(260))
    full = t.get_summary(except_last=except_last, token_budget=0).content
    expected = truncate_tail(full, budget)
    assert t.get_summary(except_last=except_last, token_budget=budget).content == expected


def test_summary_within_budget_is_untouched(t: OracleThread) -> None:
    t.add_messages([{"role": "user", "content": "hi"}])
    assert not t.get_summary(token_budget=20).content.startswith("(truncated)")


def test_summary_argument_errors(t: OracleThread) -> None:
    with pytest.raises(TypeError, match="bogus"):
        t.get_summary(bogus=1)
    with pytest.raises(ValueError, match="except_last"):
        t.get_summary(except_last=-1)
    with pytest.raises(ValueError, match="token_budget"):
        t.get_summary(token_budget="10")  # type: ignore[arg-type]


def test_summary_prefers_a_running_summary(t: OracleThread, store: Any) -> None:
    t.add_messages([{"role": "user", "content": "hello"}])
    thread_store(store).update_thread_row(
        "t1", state={"context_summary": {"summary": "User greets.", "topics": ["greeting"]}}
    )
    assert t.get_summary().content == "User greets."
    assert t.get_summary(except_last=1).content == ""
    card = t.get_context_card(max_relevant_results=0)
    assert "<topic>greeting</topic>" in card.content
    assert "User greets." in card.content


# -- context card (docs/context-card.md) ----------------------------------------------


def test_card_exact_xml_without_retrieval(t: OracleThread) -> None:
    t.add_messages(
        [
            {"role": "user", "content": "Plan <Rome> & Paris", "timestamp": "2026-02-01T09:00:00"},
            {"role": "assistant", "content": "Sure."},
            {"role": "user", "content": "Thanks"},
        ]
    )
    card = t.get_context_card(
        fallback_message_count=5, max_relevant_results=0, max_recent_messages=1
    )
    assert card.content == (
        "<context_card>\n"
        "  <summary>\n"
        "    user (2026-02-01T09:00:00+00:00): Plan &lt;Rome&gt; &amp; Paris\n"
        f"    assistant ({STORE_TIME}): Sure.\n"
        "  </summary>\n"
        "  <recent_messages>\n"
        "    <message>\n"
        f"      <timestamp>{STORE_TIME}</timestamp>\n"
        "      <role>user</role>\n"
        "      <content>Thanks</content>\n"
        "    </message>\n"
        "  </recent_messages>\n"
        "</context_card>"
    )
    assert card.formatted_content == card.content


def test_card_exact_xml_with_retrieval(t: OracleThread) -> None:
    t.add_memory("User loves pizza", memory_id="m-pizza")
    t.add_messages([{"role": "user", "content": "pizza tonight?"}])
    card = t.get_context_card(fallback_message_count=1, max_relevant_results=1)
    assert card.content == (
        "<context_card>\n"
        "  <summary>\n"
        f"    user ({STORE_TIME}): pizza tonight?\n"
        "  </summary>\n"
        "  <relevant_information>\n"
        "    <memory>\n"
        "      <record_id>m-pizza</record_id>\n"
        f"      <timestamp>{STORE_TIME}</timestamp>\n"
        "      <content>User loves pizza</content>\n"
        "    </memory>\n"
        "  </relevant_information>\n"
        "</context_card>"
    )


def test_empty_thread_card_is_empty(t: OracleThread) -> None:
    card = t.get_context_card()
    assert card.content == "" and card.formatted_content == ""


def test_card_scope_user_agent_exact_thread_not(
    mem: OracleAgentMemory, t: OracleThread, store: Any
) -> None:
    sibling = mem.create_thread(thread_id="t2", user_id="u1", agent_id="a1")
    stranger = mem.create_thread(thread_id="t3", user_id="u2", agent_id="a1")
    sibling.add_memory("pizza memory from sibling thread", memory_id="sib")
    stranger.add_memory("pizza memory of another user", memory_id="other-user")
    mem.add_memory("pizza memory without scope", memory_id="unscoped")
    store.add(["pizza fact"], "fact", record_ids="fact-1", user_ids="u1", agent_ids="a1")
    sibling.add_messages([{"role": "user", "content": "pizza message in sibling thread"}])
    t.add_messages([{"role": "user", "content": "old pizza message here"}])
    t.add_messages([{"role": "user", "content": "x"} for _ in range(5)])
    t.add_messages([{"role": "user", "content": "pizza"}])
    card = t.get_context_card(fallback_message_count=1, max_relevant_results=10)
    ids = {record.id for record, _ in card.relevant_results}
    assert {"sib", "fact-1"} <= ids
    assert "other-user" not in ids and "unscoped" not in ids
    kinds = {record.record_type for record, _ in card.relevant_results}
    assert kinds <= {"memory", "fact", "message"}
    message_hits = [r for r, _ in card.relevant_results if r.record_type == "message"]
    assert all(r.thread_id == "t1" for r in message_hits)
    assert "old pizza message here" in [r.content for r in message_hits]
    assert "pizza" not in [r.content for r in message_hits]  # already in the summary
    assert "<fact>" in card.content and "<record_id>fact-1</record_id>" in card.content
    distances = [d for _, d in card.relevant_results if d is not None]
    assert len(distances) == len(card.relevant_results)
    assert distances == sorted(distances)


def test_card_respects_max_relevant_results(t: OracleThread) -> None:
    for i in range(8):
        t.add_memory(f"pizza memory {i}")
    t.add_messages([{"role": "user", "content": "pizza"}])
    assert len(t.get_context_card(max_relevant_results=3).relevant_results) == 3
    assert t.get_context_card(max_relevant_results=0).relevant_results == []


def test_card_recent_messages_verbatim(t: OracleThread) -> None:
    t.add_messages(alternating(12))
    card = t.get_context_card(
        fallback_message_count=2, max_relevant_results=0, max_recent_messages=3
    )
    assert contents(card.recent_messages) == ["m9", "m10", "m11"]
    assert card.summary.splitlines() == [
        f"assistant ({STORE_TIME}): m7",
        f"user ({STORE_TIME}): m8",
    ]
    assert t.get_context_card(max_relevant_results=0).recent_messages == []


@pytest.mark.parametrize(("n_messages", "n_recent"), [(4, 0), (4, 1), (3, 5), (6, 2)])
def test_card_window_shorter_than_the_counts(
    t: OracleThread, n_messages: int, n_recent: int
) -> None:
    """With fewer messages than fallback + recent, every message shows once: the
    recent ones verbatim, all the others in the fallback summary."""
    t.add_messages(alternating(n_messages))
    card = t.get_context_card(
        fallback_message_count=5, max_relevant_results=0, max_recent_messages=n_recent
    )
    shown = min(n_recent, n_messages)
    assert contents(card.recent_messages) == [
        f"m{i}" for i in range(n_messages - shown, n_messages)
    ]
    earlier = range(max(0, n_messages - shown - 5), n_messages - shown)
    assert [line.rsplit(": ", 1)[1] for line in card.summary.splitlines()] == [
        f"m{i}" for i in earlier
    ]


def test_card_without_embedder_skips_retrieval(make_store: Any) -> None:
    store = make_store(embedder=None, search_strategy="VECTOR")
    mem = OracleAgentMemory(store=store, extract_memories=False)
    thread = mem.create_thread(thread_id="t1")
    thread.add_memory("pizza")
    thread.add_messages([{"role": "user", "content": "pizza"}])
    card = thread.get_context_card()
    assert card.relevant_results == []
    assert "pizza" in card.summary


def test_card_keyword_store(make_store: Any) -> None:
    store = make_store(embedder=None, search_strategy="KEYWORD")
    thread = OracleAgentMemory(store=store, extract_memories=False).create_thread()
    thread.add_memory("User likes pizza", memory_id="kw")
    thread.add_messages([{"role": "user", "content": "pizza please"}])
    assert [r.id for r, _ in thread.get_context_card().relevant_results] == ["kw"]


def test_c06_tight_card_budget_is_well_formed(mem: OracleAgentMemory) -> None:
    thread = mem.create_thread(thread_id="tight", context_card_token_limit=5)
    thread.add_messages([{"role": "user", "content": "long <text> " * 3000} for _ in range(3)])
    card = thread.get_context_card(max_recent_messages=1)
    assert len(card.summary) <= 17
    assert card.content == ""  # not even the card's markup fits 17 characters


@pytest.mark.parametrize("use_async", [False, True])
def test_c06_card_limit_bounds_results_and_recent_messages(
    mem: OracleAgentMemory, use_async: bool
) -> None:
    thread = mem.create_thread(user_id="u", agent_id="a", context_card_token_limit=50)
    thread.add_memory("topic3 note " + "blah " * 40000, memory_id="big")
    thread.add_messages(
        [{"role": "user", "content": f"topic{i} " + "blah " * 40000} for i in range(12)]
    )

    def card_for(limit: int) -> OracleContextCard:
        handle = mem.get_thread(thread.thread_id, context_card_token_limit=limit)
        if use_async:
            return anyio.run(lambda: handle.get_context_card_async(max_recent_messages=2))
        return handle.get_context_card(max_recent_messages=2)

    small = card_for(50).content
    assert 0 < len(small) <= 175  # 50 tokens * 3.5
    ET.fromstring(small)
    root = ET.fromstring(card_for(2000).content)
    assert len(card_for(2000).content) <= 7000
    recent = [el.text or "" for el in root.iterfind("recent_messages/message/content")]
    assert [m.split(" ")[0] for m in recent] == ["topic10", "topic11"]
    assert all(m.endswith(" …(truncated)") for m in recent)
    found = [el.text or "" for el in root.iterfind("relevant_information/*/content")]
    assert found and all(m.endswith(" …(truncated)") for m in found)
    assert (root.findtext("summary") or "").strip().startswith("(truncated)")
    assert len(card_for(0).content) > 2_000_000  # <= 0 = no bound


def test_card_argument_errors(t: OracleThread) -> None:
    with pytest.raises(TypeError, match="bogus"):
        t.get_context_card(bogus=True)
    for name in ("fallback_message_count", "max_relevant_results", "max_recent_messages"):
        with pytest.raises(ValueError, match=name):
            t.get_context_card(**{name: -1})


def test_card_xml_is_well_formed_with_hostile_text(t: OracleThread) -> None:
    nasty = "</content></memory><x a='1'>&amp; ]]> \"quotes\""
    t.add_memory(nasty)
    t.add_messages([{"role": "user", "content": nasty}])
    card = t.get_context_card(max_recent_messages=1)
    root = ET.fromstring(card.content)
    assert root.find("recent_messages/message/content").text == nasty  # type: ignore[union-attr]
    assert root.find("relevant_information/memory/content").text == nasty  # type: ignore[union-attr]


# -- stale handles never write orphans (C16 class) ----------------------------------------


def _ghost_ids(store: Any) -> list[str]:
    return sorted(r.id for r, _ in store.search("ghost", k=5))


def _thread_rows_and_records(store: Any, thread_id: str) -> tuple[list[str], list[str]]:
    threads = [r.thread_id for r in thread_store(store).list_thread_rows()]
    records = [r.id for r in store.list("message", thread_id=thread_id)] + [
        r.id for r in store.list("memory", thread_id=thread_id)
    ]
    return threads, records


def _write(t: OracleThread, what: str, use_async: bool) -> None:
    async def run_async() -> None:
        if what == "messages":
            await t.add_messages_async([{"role": "user", "content": "ghost message", "id": "gm"}])
        else:
            await t.add_memory_async("ghost memory", memory_id="gmem")

    if use_async:
        anyio.run(run_async)
    elif what == "messages":
        t.add_messages([{"role": "user", "content": "ghost message", "id": "gm"}])
    else:
        t.add_memory("ghost memory", memory_id="gmem")


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize("what", ["messages", "memory"])
def test_c16_stale_handle_after_delete_thread_fails_and_writes_nothing(
    mem: OracleAgentMemory, store: Any, use_async: bool, what: str
) -> None:
    t = mem.create_thread(thread_id="T", user_id="u", agent_id="a", metadata={"k": 1})
    mem.delete_thread("T")
    with pytest.raises(ValueError, match="thread 'T' does not exist"):
        _write(t, what, use_async)
    assert _thread_rows_and_records(store, "T") == ([], [])
    assert _ghost_ids(store) == []
    # the same handle reopened from a new row writes again
    mem.create_thread(thread_id="T", user_id="u", agent_id="a")
    _write(t, what, use_async)
    assert _ghost_ids(store) == (["gm"] if what == "messages" else ["gmem"])


@pytest.mark.parametrize("use_async", [False, True])
@pytest.mark.parametrize("what", ["messages", "memory"])
@pytest.mark.parametrize("deleter", ["delete_thread", "delete_user", "delete_agent"])
def test_c22_a_delete_landing_between_check_and_write_leaves_no_orphans(
    mem: OracleAgentMemory, store: Any, use_async: bool, what: str, deleter: str
) -> None:
    """docs/failure-modes.md#c22: another client deletes the thread (or its user or agent, with
    cascade) while a live handle writes. The delete is injected right after the
    handle decides to write: into the row check of a check-then-write (the old
    ``get_thread_row``) and into the combined check-and-write (``add_to_thread``).
    The write fails clearly and nothing of the thread is left."""
    t = mem.create_thread(thread_id="T", user_id="u", agent_id="a")
    t.add_messages([{"role": "user", "content": "kept before", "id": "before"}])
    other = OracleAgentMemory(store=store, extract_memories=False)
    target = {"delete_thread": "T", "delete_user": "u", "delete_agent": "a"}[deleter]
    fired: list[str] = []

    def racing(method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            if not fired:
                fired.append(deleter)
                assert getattr(other, deleter)(target) in (0, 1)
            return result

        return call

    def racing_write(method: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            if not fired:
                fired.append(deleter)
                assert getattr(other, deleter)(target) in (0, 1)
            return method(*args, **kwargs)

        return call

    threads = thread_store(store)
    threads.get_thread_row = racing(threads.get_thread_row)
    threads.add_to_thread = racing_write(threads.add_to_thread)
    try:
        with pytest.raises(ValueError, match="thread 'T' does not exist"):
            _write(t, what, use_async)
    finally:
        for name in ("get_thread_row", "add_to_thread"):
            delattr(threads, name)
    assert fired == [deleter]
    assert _thread_rows_and_records(store, "T") == ([], [])
    assert _ghost_ids(store) == []
    assert store.search("kept", 5) == []


def test_c16_directly_built_thread_gets_a_row(mem: OracleAgentMemory, store: Any) -> None:
    other = mem.create_thread(thread_id="other", user_id="u", agent_id="a")
    other.add_memory("ghost other", memory_id="keep")
    t = OracleThread(store, thread_id="direct", user_id="u", agent_id="a", extract_memories=False)
    assert thread_store(store).get_thread_row("direct") is None
    t.add_memory("ghost direct", memory_id="gd")
    assert thread_store(store).get_thread_row("direct") is not None
    t.add_messages([{"role": "user", "content": "ghost hello", "id": "gh"}])
    assert mem.get_thread("direct").extract_memories is False
    mem.delete_thread("direct")
    assert _ghost_ids(store) == ["keep"]
    assert [r.thread_id for r in mem.list_threads()] == ["other"]


def test_c16_unscoped_or_invalid_writes_create_no_row(mem: OracleAgentMemory, store: Any) -> None:
    t = mem.create_thread(thread_id="T", user_id="u", agent_id="a")
    mem.delete_thread("T")
    t.add_messages([])
    t.add_memory("ghost elsewhere", thread_id=None, memory_id="unscoped")
    with pytest.raises(ValueError):
        t.add_memory(5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        t.add_messages([{"role": "user"}])
    assert thread_store(store).get_thread_row("T") is None
    assert _ghost_ids(store) == ["unscoped"]


def test_c16_concurrent_creator_is_tolerated(mem: OracleAgentMemory, store: Any) -> None:
    """A directly built handle creates its row in the write's transaction; another
    client creating the same thread just before is fine (no "already exists")."""
    t = OracleThread(store, thread_id="T", user_id="u", agent_id="a", extract_memories=False)
    threads = thread_store(store)
    real = threads.add_to_thread

    def racing(*args: Any, **kwargs: Any) -> Any:
        if thread_store(store).get_thread_row("T") is None:  # another writer creates the row first
            thread_store(store).create_thread_row("T", user_id="u", agent_id="a")
        return real(*args, **kwargs)

    threads.add_to_thread = racing
    try:
        t.add_memory("ghost raced", memory_id="raced")
    finally:
        del threads.add_to_thread
    assert _ghost_ids(store) == ["raced"]
    assert [r.thread_id for r in mem.list_threads()] == ["T"]


# -- async twins (docs/concepts.md#sync-and-async; C18) --------------------------------


def test_async_reads_match_sync(t: OracleThread) -> None:
    t.add_memory("likes pizza", memory_id="pm")
    t.add_messages([*alternating(30), {"role": "user", "content": "pizza?"}])

    async def run() -> tuple[Any, ...]:
        return (
            await t.get_messages_async(),
            await t.get_messages_async(start=-7, end=-2),
            await t.get_summary_async(except_last=2, token_budget=30),
            await t.get_context_card_async(max_recent_messages=2),
        )

    assert anyio.run(run) == (
        t.get_messages(),
        t.get_messages(start=-7, end=-2),
        t.get_summary(except_last=2, token_budget=30),
        t.get_context_card(max_recent_messages=2),
    )


def test_async_writes_match_sync(mem: OracleAgentMemory, store: Any) -> None:
    sync_t = mem.create_thread(thread_id="s", user_id="u", agent_id="a")
    async_t = mem.create_thread(thread_id="as", user_id="u", agent_id="a")
    batch = [{"role": "user", "content": f"c{i}", "id": f"id{i}"} for i in range(3)]
    batch.append({"role": "assistant", "content": "no id"})
    sync_ids = sync_t.add_messages(batch[:3])

    async def run() -> tuple[Any, ...]:
        ids = await async_t.add_messages_async([dict(m, id="a" + m["id"]) for m in batch[:3]])
        generated = await async_t.add_messages_async(batch[3:])
        return (
            ids,
            generated,
            await async_t.add_memory_async("m", memory_id="am"),
            await async_t.delete_message_async("id0"),
            await async_t.delete_message_async("aid0"),
            await async_t.delete_memory_async("am"),
            await async_t.delete_memory_async("am"),
        )

    ids, generated, mid, *deleted = anyio.run(run)
    assert ids == ["a" + i for i in sync_ids]
    assert len(generated) == 1 and len(generated[0]) == 36
    assert mid == "am"
    assert deleted == [0, 1, 1, 0]
    assert contents(async_t.get_messages()) == ["c1", "c2", "no id"]
    assert store.get("message", "id0") is not None


def test_async_errors_match_sync(t: OracleThread) -> None:
    async def run() -> None:
        with pytest.raises(TypeError):
            await t.get_summary_async(bogus=1)
        with pytest.raises(TypeError):
            await t.get_context_card_async(bogus=1)
        with pytest.raises(ValueError):
            await t.add_messages_async([{"role": "user"}])
        with pytest.raises(ValueError):
            await t.get_messages_async(start="x")  # type: ignore[arg-type]

    anyio.run(run)


def test_sync_methods_work_inside_a_running_loop(t: OracleThread) -> None:
    async def run() -> str:
        t.add_messages([{"role": "user", "content": "inside the loop"}])
        assert contents(t.get_messages()) == ["inside the loop"]
        t.get_summary()
        return t.get_context_card(max_recent_messages=1).content

    assert "inside the loop" in asyncio.run(run())


def test_speaker_name_makes_a_message_findable_by_name(make_store):
    """docs/context-card.md#speaker-names: the participant name in metadata["$message"]["name"] is part of the
    message's retrieval text; the stored content is unchanged."""
    from oam_core import OracleAgentMemory

    store = make_store(search_strategy="KEYWORD")
    memory = OracleAgentMemory(store=store, extract_memories=False)
    thread = memory.create_thread(thread_id="t-name", user_id="u1", agent_id="a1")
    thread.add_messages(
        [
            {
                "role": "user",
                "content": "I painted a sunrise",
                "metadata": {"$message": {"name": "Melanie"}},
            },
            {"role": "assistant", "content": "Lovely colours"},
        ]
    )
    hits = store.search("Melanie", 5)
    # Her own turn first; the reply is found through its context row (the turn before it).
    assert [r.content for r, _ in hits] == ["I painted a sunrise", "Lovely colours"]
    assert thread.get_messages()[0].content == "I painted a sunrise"
    thread.add_messages(
        [{"role": "user", "content": "x", "metadata": {"$message": {"name": "Bob"}}}],
        index_texts=["caller text"],
    )
    assert [r.content for r, _ in store.search("caller", 5)] == ["x"]


def test_a_reply_is_found_by_the_message_it_answers(make_store, search_rows):
    """docs/retrieval.md#what-a-message-is-indexed-by: each message gets a context row (the two previous
    messages + it), also across add_messages calls; long messages get no context row
    and stay chunked."""
    from oam_core import OracleAgentMemory
    from oam_core.store.text import chunk_text

    store = make_store(search_strategy="KEYWORD")
    memory = OracleAgentMemory(store=store, extract_memories=False)
    thread = memory.create_thread(thread_id="t-ctx", user_id="u1", agent_id="a1")
    thread.add_messages([{"role": "assistant", "content": "Have you ever been to Lisbon?"}])
    thread.add_messages([{"role": "user", "content": "Yes, twice last year!"}])
    found = [r.content for r, _ in store.search("Lisbon", 5, record_types={"message"})]
    assert found == ["Have you ever been to Lisbon?", "Yes, twice last year!"]
    reply = thread.get_messages()[1]
    assert reply.content == "Yes, twice last year!"
    assert [t for t, _ in search_rows(store, "message", reply.id)] == [
        "Yes, twice last year!",
        "Have you ever been to Lisbon?\nYes, twice last year!",
    ]
    (follow_up,) = thread.add_messages([{"role": "assistant", "content": "In spring?"}])
    assert [t for t, _ in search_rows(store, "message", follow_up)] == [
        "In spring?",
        "Have you ever been to Lisbon?\nYes, twice last year!\nIn spring?",
    ]
    assert "In spring?" in [r.content for r, _ in store.search("Lisbon", 5)]
    long_text = "word " * 3000
    (long_id,) = thread.add_messages([{"role": "user", "content": long_text}])
    n_rows = len(search_rows(store, "message", long_id))
    assert n_rows == len(chunk_text(long_text, store.chunk_chars)) > 1


def test_card_after_a_delete_and_an_edit_shows_the_thread_as_it_is(
    make_store: Any,
) -> None:
    """A message's context row quotes the turns before it; deleting or editing one of
    them drops the rows quoting it, which are not rebuilt (docs/retrieval.md). The
    card is still right: no deleted or replaced text, the neighbours found by their
    own text, and no extra work (the same embedder calls as before the delete)."""

    embedder = HashingEmbedder(64)  # records the texts of each call in .calls
    store = make_store(embedder=embedder)
    thread = OracleAgentMemory(store=store, extract_memories=False).create_thread(
        thread_id="t1", user_id="u1", agent_id="a1"
    )
    ids = thread.add_messages(
        [
            {"role": "user", "content": "My sister Dana moved to Oslo last spring."},
            {"role": "assistant", "content": "Wow, how exciting for her!"},
            {"role": "user", "content": "She says the winters are long."},
            {"role": "user", "content": "Tell me about Oslo."},
        ]
    )

    def card() -> tuple[str, list[list[str]]]:
        before = len(embedder.calls)
        content = thread.get_context_card(fallback_message_count=1).content
        return content, embedder.calls[before:]

    first, first_calls = card()
    assert "Dana" in first and "how exciting" in first
    assert thread.delete_message(ids[0]) == 1
    after_delete, delete_calls = card()
    assert "Dana" not in after_delete
    assert "how exciting" in after_delete and "winters are long" in after_delete
    assert store.update("message", ids[1], text="Winter there sounds dark.") is not None
    after_edit, edit_calls = card()
    assert "how exciting" not in after_edit and "Winter there sounds dark." in after_edit
    # Only the card's query is embedded, once (the store keeps a repeated query's
    # vectors, docs/store.md#searching): nothing is rebuilt.
    assert len(first_calls) == 1 and len(first_calls[0]) == 1, first_calls
    assert delete_calls == edit_calls == []


INT_OPTIONS = [
    "max_message_token_length",
    "message_shortening_input_token_limit",
    "memory_extraction_window",
    "context_summary_update_frequency",
    "memory_extraction_frequency",
    "memory_extraction_token_limit",
    "context_card_token_limit",
]


@pytest.mark.parametrize("option", INT_OPTIONS)
@pytest.mark.parametrize("value", [2**63, -(2**63) - 1, 10**30])
def test_an_int_option_past_64_bits_is_named(
    mem: OracleAgentMemory, option: str, value: int
) -> None:
    """Trial 37 (C26): the option is named, not the "config" it is persisted in."""
    with pytest.raises(InvalidArgumentError, match=rf"^{option} must fit in 64 bits"):
        mem.create_thread(thread_id="big", user_id="u1", **{option: value})
    assert mem.get_thread_row("big") is None
    created = mem.create_thread(thread_id="big", user_id="u1")
    with pytest.raises(InvalidArgumentError, match=rf"^{option} must fit in 64 bits"):
        mem.get_thread("big", **{option: value})
    assert created.config == mem.get_thread("big").config
