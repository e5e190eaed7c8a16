"""``OAMMemoryBlock`` in ``llama_index.core.memory.Memory`` (modelled on llama-index-core's
memory tests): flushes reach the session's thread, the card shows up in
``memory.get()`` for both insert methods, truncation shortens instead of dropping,
sessions never mix, and messages already stored by ``OAMDBChatStore`` are not doubled."""

from __future__ import annotations

import asyncio
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import InsertMethod, Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index.core.utils import get_tokenizer
from llama_index_oam import OAMDBChatStore, OAMMemoryBlock

from oam_core import ILlm, OracleAgentMemory, OracleContextCard
from oam_core.embedders.hashing import HashingEmbedder


@pytest.fixture
def scratch(tmp_path: Path) -> Iterator[OracleAgentMemory]:
    """A second database for the short-term queue, so the block's own threads only
    get what the block appends."""
    m = OracleAgentMemory(connection=str(tmp_path / "queue.db"), extract_memories=False)
    yield m
    m.close()


def make_memory(
    block: OAMMemoryBlock,
    queue: OracleAgentMemory,
    session: str,
    *,
    token_limit: int = 60,
    insert_method: InsertMethod = InsertMethod.SYSTEM,
) -> Memory:
    return Memory.from_defaults(
        session_id=session,
        chat_store=OAMDBChatStore(queue),
        memory_blocks=[block],
        token_limit=token_limit,
        chat_history_token_ratio=0.5,
        token_flush_size=10,
        insert_method=insert_method,
    )


def chat(mem: Memory, turns: int, topic: str) -> None:
    for i in range(turns):
        mem.put(ChatMessage(role="user", content=f"Tell me about {topic}, part {i}, in detail"))
        mem.put(ChatMessage(role="assistant", content=f"Here is {topic} part {i}"))


def card_of(messages: list[ChatMessage], role: str) -> str:
    for m in messages:
        if m.role.value == role and "<context_card>" in (m.content or ""):
            text = m.content or ""
            return text[text.index("<context_card>") : text.index("</context_card>") + 15]
    return ""


def test_flushed_messages_reach_the_sessions_thread(
    memory: OracleAgentMemory, scratch: OracleAgentMemory, event_loop: asyncio.AbstractEventLoop
) -> None:
    block = OAMMemoryBlock(memory, user_id="u1", agent_id="a1")
    mem = make_memory(block, scratch, "s1")
    chat(mem, 6, "volcanoes")
    archived = mem.get_all(status=MessageStatus.ARCHIVED)
    assert archived, "the small token_limit must have flushed messages"
    thread = memory.get_thread("s1")
    assert (thread.user_id, thread.agent_id) == ("u1", "a1")
    stored = thread.get_messages()
    assert [(m.role, m.content) for m in stored] == [(m.role.value, m.content) for m in archived]
    dumps = [(m.metadata or {})["$message"]["llama_index"] for m in stored]
    assert [d["additional_kwargs"] for d in dumps] == [{}] * len(stored)  # no session_id kept


@pytest.mark.parametrize("method", [InsertMethod.SYSTEM, InsertMethod.USER])
def test_card_is_inserted_for_both_insert_methods(
    memory: OracleAgentMemory,
    scratch: OracleAgentMemory,
    event_loop: asyncio.AbstractEventLoop,
    method: InsertMethod,
) -> None:
    block = OAMMemoryBlock(memory, user_id="u1", agent_id="a1")
    mem = make_memory(block, scratch, "s1", token_limit=4000, insert_method=method)
    chat(mem, 1, "tea")
    assert card_of(mem.get(), "system") == card_of(mem.get(), "user") == ""  # no flush yet
    asyncio.run(
        block.aput([ChatMessage(role="user", content="I drink green tea")], session_id="s1")
    )
    memory.add_memory("User prefers green tea without sugar", user_id="u1", agent_id="a1")
    got = mem.get()
    role = "system" if method == InsertMethod.SYSTEM else "user"
    card = card_of(got, role)
    assert card, got
    root = ET.fromstring(card)
    assert "I drink green tea" in root.findtext("summary", "")
    relevant = [e.findtext("content") for e in root.find("relevant_information") or []]
    assert "User prefers green tea without sugar" in relevant
    if method == InsertMethod.USER:
        (holder,) = [m for m in got if "<context_card>" in (m.content or "")]
        assert holder.role.value == "user" and "Tell me about tea" in (holder.content or "")
        assert [m.role.value for m in got] == ["user", "assistant"]
    else:
        assert [m.role.value for m in got] == ["system", "user", "assistant"]


def test_latest_input_pulls_its_memories_first(
    memory: OracleAgentMemory, scratch: OracleAgentMemory, event_loop: asyncio.AbstractEventLoop
) -> None:
    block = OAMMemoryBlock(memory, user_id="u1", agent_id="a1", max_relevant_results=1)
    asyncio.run(block.aput([ChatMessage(role="user", content="hello there")], session_id="s1"))
    memory.add_memory("The user's dog is called Rex", user_id="u1", agent_id="a1")
    memory.add_memory("The user works as a pilot", user_id="u1", agent_id="a1")
    mem = make_memory(block, scratch, "s1", token_limit=4000)
    for question, expected in [
        ("what is my dog called", "The user's dog is called Rex"),
        ("what do I do as work, pilot?", "The user works as a pilot"),
    ]:
        card = ET.fromstring(card_of(mem.get(input=question), "system"))
        relevant = [e.findtext("content") for e in card.find("relevant_information") or []]
        assert relevant == [expected]


def test_sessions_are_kept_apart(
    memory: OracleAgentMemory, scratch: OracleAgentMemory, event_loop: asyncio.AbstractEventLoop
) -> None:
    block = OAMMemoryBlock(memory, user_id="u1", agent_id="a1")
    first = make_memory(block, scratch, "first")
    second = make_memory(block, scratch, "second")
    for _ in range(3):
        chat(first, 2, "rivers")
        chat(second, 2, "mountains")
    one = card_of(first.get(), "system")
    two = card_of(second.get(), "system")
    assert "rivers" in one and "mountains" not in one
    assert "mountains" in two and "rivers" not in two
    first_thread = [m.content for m in memory.get_thread("first").get_messages()]
    assert first_thread and all("rivers" in c for c in first_thread)
    second_thread = [m.content for m in memory.get_thread("second").get_messages()]
    assert second_thread and all("mountains" in c for c in second_thread)

    async def both() -> tuple[str, str]:
        a, b = await asyncio.gather(
            block.aget([], session_id="first"), block.aget([], session_id="second")
        )
        return a, b

    a, b = asyncio.run(both())
    assert "rivers" in a and "mountains" not in a
    assert "mountains" in b and "rivers" not in b


def test_truncation_shortens_the_card(memory: OracleAgentMemory) -> None:
    block = OAMMemoryBlock(memory, priority=1)
    long_text = " ".join(f"sentence {i} about the history of ancient Rome" for i in range(40))

    async def go() -> tuple[str, str | None, str | None]:
        await block.aput([ChatMessage(role="user", content=long_text)], session_id="s")
        card = await block.aget([], session_id="s")
        shorter = await block.atruncate(card, 100)
        gone = await block.atruncate(card, 10**6)
        return card, shorter, gone

    card, shorter, gone = asyncio.run(go())
    assert shorter is not None
    assert len(shorter) <= len(card) - 100 * 3.5
    assert "(truncated)" in shorter
    ET.fromstring(shorter)  # still a well-formed card
    assert gone is None
    assert asyncio.run(block.atruncate("not a card of this block", 5)) is None


def test_truncation_keeps_the_memory_before_summary_and_message_hits(
    memory: OracleAgentMemory,
) -> None:
    """At every requested cut, the card keeps the stored memory whole as long as
    anything is kept: the transcript summary and the message hits go first (a
    fresh-user review saw the memory dropped while the filler stayed). Truncation
    writes nothing: the memory stays stored."""
    thread = memory.create_thread(thread_id="s1", user_id="u", agent_id="a")
    filler = "compost soil gardening tomatoes and compost soil gardening " * 8
    thread.add_messages(
        [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}: {filler}"}
            for i in range(12)
        ]
    )
    fact = "The user is allergic to wasps, so no gardening in August."
    memory.store.add([fact], "fact", user_ids="u", agent_ids="a", thread_ids="s1")
    block = OAMMemoryBlock(memory, user_id="u", agent_id="a", priority=1, fallback_message_count=6)

    async def go() -> tuple[str, list[tuple[int, str | None]]]:
        card = await block.aget([], session_id="s1")
        cuts = [_tokens(card) * percent // 100 for percent in range(5, 100, 5)]
        return card, [(n, await block.atruncate(card, n)) for n in cuts]

    card, shorter = asyncio.run(go())
    assert fact in card and "compost" in card
    alone = _tokens(card_with(fact))
    for n, text in shorter:
        if text is None:  # only when not even a card of the fact alone fits
            assert _tokens(card) - n < alone, n
            continue
        ET.fromstring(text)
        assert _tokens(text) <= _tokens(card) - n, n
        if _tokens(card) - n >= alone:
            assert fact in text, (n, text)
    [stored] = memory.store.list("fact", user_id="u")
    assert stored.content == fact


def card_with(fact: str) -> str:
    """The card holding one fact alone (what the smallest useful truncation keeps)."""
    from oam_core import OracleContextCard
    from oam_core.apis.records import Record

    record = Record(
        id="x" * 36, record_type="fact", content=fact, created_at="2026-12-01T13:41:42.588409+00:00"
    )
    return OracleContextCard(relevant_results=[record]).content


def test_memory_truncates_a_prioritised_block_instead_of_dropping_it(
    memory: OracleAgentMemory, scratch: OracleAgentMemory, event_loop: asyncio.AbstractEventLoop
) -> None:
    block = OAMMemoryBlock(memory, priority=1, fallback_message_count=20)
    mem = make_memory(block, scratch, "s", token_limit=400)
    chat(mem, 12, "the solar system")
    full = asyncio.run(block.aget([], session_id="s"))
    card = card_of(mem.get(), "system")
    assert card and "(truncated)" in card and len(card) < len(full)
    ET.fromstring(card)


def test_block_does_not_double_messages_of_an_oam_chat_store(
    memory: OracleAgentMemory, event_loop: asyncio.AbstractEventLoop
) -> None:
    block = OAMMemoryBlock(memory)
    mem = Memory.from_defaults(
        session_id="s",
        chat_store=OAMDBChatStore(memory),
        memory_blocks=[block],
        token_limit=60,
        chat_history_token_ratio=0.5,
        token_flush_size=10,
    )
    chat(mem, 8, "birds")
    everything = mem.get_all(status=None)
    assert len(everything) == 16
    stored = memory.get_thread("s").get_messages()
    assert [m.content for m in stored] == [m.content for m in everything]
    # The block still appends what the chat store did not store (another queue).
    asyncio.run(block.aput([ChatMessage(role="user", content="extra")], session_id="s"))
    assert memory.get_thread("s").get_messages()[-1].content == "extra"


def test_reset_shares_the_thread_and_areset_active_keeps_the_blocks_transcript(
    memory: OracleAgentMemory, event_loop: asyncio.AbstractEventLoop
) -> None:
    """docs/llama_index.md#quick-start: with OAMDBChatStore the queue and the block
    share the session's thread, so ``Memory.reset()`` deletes the archived messages
    the block shows too; ``areset(status=ACTIVE)`` empties only the queue."""

    def session(name: str) -> Memory:
        mem = Memory.from_defaults(
            session_id=name,
            chat_store=OAMDBChatStore(memory),
            memory_blocks=[OAMMemoryBlock(memory, priority=1)],
            token_limit=60,
            chat_history_token_ratio=0.5,
            token_flush_size=10,
        )
        chat(mem, 8, "birds")
        return mem

    kept = session("kept")
    archived = [m.content for m in kept.get_all(status=MessageStatus.ARCHIVED)]
    assert archived and len(archived) < 16
    event_loop.run_until_complete(kept.areset(status=MessageStatus.ACTIVE))
    assert [m.content for m in memory.get_thread("kept").get_messages()] == archived

    lost = session("lost")
    lost.reset()
    assert memory.get_thread("lost").get_messages() == []


def test_block_without_thread_or_session_and_bad_input(memory: OracleAgentMemory) -> None:
    block = OAMMemoryBlock(memory)
    assert asyncio.run(block.aget([], session_id="never-seen")) == ""
    assert asyncio.run(block.aget([])) == ""
    with pytest.raises(ValueError, match="session_id"):
        asyncio.run(block.aput([ChatMessage(role="user", content="x")]))
    with pytest.raises(ValueError, match="max_relevant_results"):
        OAMMemoryBlock(memory, max_relevant_results=-1)
    with pytest.raises(ValueError, match="OracleAgentMemory"):
        OAMMemoryBlock("nope")  # type: ignore[arg-type]
    assert (block.name, block.priority) == ("oam_memory", 0)


def test_block_works_with_a_keyword_store(tmp_path: Path) -> None:
    m = OracleAgentMemory(
        connection=str(tmp_path / "kw.db"), search_strategy="KEYWORD", extract_memories=False
    )
    block = OAMMemoryBlock(m, user_id="u", agent_id="a")
    asyncio.run(block.aput([ChatMessage(role="user", content="hi")], session_id="s"))
    m.add_memory("The user collects stamps", user_id="u", agent_id="a")
    latest = [ChatMessage(role="user", content="which stamps do I collect")]
    card = asyncio.run(block.aget(latest, session_id="s"))
    assert "The user collects stamps" in card
    m.close()


class RecordingLlm(ILlm):
    """A fake LLM that records prompts and extracts nothing."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        self.prompts.append(prompt)
        return json.dumps({"memories": []})


def test_block_appends_through_the_thread_of_a_client_with_an_llm(tmp_path: Path) -> None:
    """With extraction on, flushed messages go through ``OracleThread.add_messages`` (the
    path that runs extraction); concurrent flushes of two sessions stay apart."""
    client = OracleAgentMemory(connection=str(tmp_path / "llm.db"), llm=RecordingLlm())
    block = OAMMemoryBlock(client, user_id="u", agent_id="a")

    async def flush() -> None:
        await asyncio.gather(
            block.aput([ChatMessage(role="user", content="one")], session_id="s1"),
            block.aput([ChatMessage(role="user", content="two")], session_id="s2"),
            block.aput(
                [
                    ChatMessage(
                        role="user", content="three", additional_kwargs={"session_id": "s1"}
                    ),
                    ChatMessage(
                        role="user", content="four", additional_kwargs={"session_id": "s2"}
                    ),
                ]
            ),
        )

    asyncio.run(flush())
    assert sorted(m.content for m in client.get_thread("s1").get_messages()) == ["one", "three"]
    assert sorted(m.content for m in client.get_thread("s2").get_messages()) == ["four", "two"]
    assert client.get_thread("s1").extract_memories is True
    client.close()


class ExtractingLlm(ILlm):
    """A fake LLM that extracts one fixed fact from every pass."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        self.prompts.append(prompt)
        fact = {"text": "The user is allergic to peanuts", "record_type": "fact", "timestamp": None}
        return json.dumps({"memories": [fact]})


def test_extraction_runs_on_flushed_messages_and_feeds_the_card(tmp_path: Path) -> None:
    """With the LLM pipeline (docs/memory-pipeline.md) present, a flush into the block is one
    extraction pass over the flushed messages, and the extracted fact reaches the card;
    with ``OAMDBChatStore`` the messages are extracted once, when first stored."""
    pytest.importorskip("oam_core.memory.extraction", reason="needs the LLM pipeline")
    llm = ExtractingLlm()
    client = OracleAgentMemory(
        connection=str(tmp_path / "x.db"), embedder=HashingEmbedder(64), llm=llm
    )
    block = OAMMemoryBlock(client, user_id="u", agent_id="a")
    said = ChatMessage(role="user", content="I am allergic to peanuts")
    asyncio.run(block.aput([said], session_id="s"))
    assert len(llm.prompts) == 1 and "I am allergic to peanuts" in llm.prompts[0]
    (fact,) = client.store.list("fact")
    (stored,) = client.get_thread("s").get_messages()
    assert fact.user_id == "u" and fact.thread_id == "s"
    assert fact.metadata is not None
    assert fact.metadata["$agent_memory"]["source_message_ids"] == [stored.id]
    question = [ChatMessage(role="user", content="what am I allergic to")]
    card = ET.fromstring(asyncio.run(block.aget(question, session_id="s")))
    relevant = [e.findtext("content") for e in card.find("relevant_information") or []]
    assert relevant[:1] == ["The user is allergic to peanuts"]

    mem = Memory.from_defaults(
        session_id="s2",
        chat_store=OAMDBChatStore(client, user_id="u", agent_id="a"),
        memory_blocks=[block],
        token_limit=60,
        chat_history_token_ratio=0.5,
        token_flush_size=10,
    )

    async def chat() -> None:
        for i in range(6):
            await mem.aput(ChatMessage(role="user", content=f"message {i} about cats and dogs"))

    before = len(llm.prompts)
    asyncio.run(chat())
    assert len(llm.prompts) - before == 6  # one pass per stored message, none on flush
    assert len(client.get_thread("s2").get_messages()) == 6
    client.close()


# -- issue item 5: truncation counts Memory's tokens and drops results one by one -----------


def _tokens(text: str) -> int:
    """A text's tokens as ``Memory`` counts them by default."""
    return len(get_tokenizer()(text))


def _result_contents(card: str) -> list[str]:
    section = ET.fromstring(card).find("relevant_information")
    return [e.findtext("content") or "" for e in (section if section is not None else [])]


def test_memory_keeps_the_only_memory_when_a_card_of_it_fits_the_room_left(
    memory: OracleAgentMemory, scratch: OracleAgentMemory, event_loop: asyncio.AbstractEventLoop
) -> None:
    """``Memory(token_limit=400, chat_history_token_ratio=0.5)``: the history leaves
    about 250 tokens, a card holding the block's only memory takes about 100 (XML,
    ids and timestamps cost more tokens per character than prose), so the card is
    kept with that memory whole, within the room left, instead of being dropped."""
    fact = "Ada's cat Tom is allergic to fish."
    memory.add_memory(fact, user_id="ada", agent_id="helper")
    block = OAMMemoryBlock(memory, user_id="ada", agent_id="helper", priority=1)
    mem = Memory.from_defaults(
        session_id="s1",
        chat_store=OAMDBChatStore(scratch),
        memory_blocks=[block],
        token_limit=400,
        chat_history_token_ratio=0.5,
    )
    for i in range(14):
        mem.put(
            ChatMessage(
                role="user",
                content=f"turn {i}: tell me about gardening, soil and compost in detail",
            )
        )
        mem.put(
            ChatMessage(
                role="assistant", content=f"turn {i}: here is more about gardening and compost"
            )
        )
    got = mem.get(input="what may Tom eat?")
    history = [m for m in got if "<context_card>" not in (m.content or "")]
    room = 400 - sum(_tokens(m.content or "") for m in history)
    full = asyncio.run(
        block.aget([ChatMessage(role="user", content="what may Tom eat?")], session_id="s1")
    )
    assert _tokens(full) > room  # Memory had to truncate the block
    alone = OracleContextCard(relevant_results=[memory.store.list("memory")[0]]).content
    assert _tokens(alone) < room
    card = card_of(got, "system")
    assert card, got
    assert _tokens(card) <= room
    assert _result_contents(card)[0] == fact


def test_truncation_drops_memories_one_by_one_lowest_ranked_first(
    memory: OracleAgentMemory,
) -> None:
    """At a budget that holds the best two memories but not the third, the
    truncated card holds exactly the best two, whole, in rank order."""
    facts = [
        "The user's dog Rex eats salmon kibble.",
        "The user's dog Rex sleeps in a basket.",
        "The user's dog Rex was born in Porto.",
        "The user's dog Rex fears thunder.",
    ]
    for fact in facts:
        memory.add_memory(fact, user_id="u", agent_id="a")
    block = OAMMemoryBlock(memory, user_id="u", agent_id="a", priority=1)

    async def go() -> tuple[str, list[str]]:
        await block.aput([ChatMessage(role="user", content="hello")], session_id="s")
        card = await block.aget(
            [ChatMessage(role="user", content="what does the dog Rex eat")], session_id="s"
        )
        ranked = _result_contents(card)
        records = {r.content: r for r in memory.store.list("memory")}
        best_two = OracleContextCard(relevant_results=[records[c] for c in ranked[:2]]).content
        cut = _tokens(card) - _tokens(best_two) - 5
        shorter = await block.atruncate(card, cut)
        assert shorter is not None
        return shorter, ranked

    shorter, ranked = asyncio.run(go())
    assert sorted(ranked) == sorted(facts)
    assert _result_contents(shorter) == ranked[:2]


def test_truncation_counts_with_the_given_tokenizer(memory: OracleAgentMemory) -> None:
    """``tokenizer_fn`` (``Memory``'s own, when it has a custom one) is what the
    block counts with: here one token a character, so the card shrinks by at least
    as many characters as tokens were asked for."""
    memory.add_memory("Rex the dog eats salmon.", user_id="u", agent_id="a")
    block = OAMMemoryBlock(memory, user_id="u", agent_id="a", priority=1, tokenizer_fn=list)

    async def go() -> tuple[str, str | None]:
        await block.aput(
            [ChatMessage(role="user", content="tell me about dogs " * 30)], session_id="s"
        )
        card = await block.aget([ChatMessage(role="user", content="dog food")], session_id="s")
        return card, await block.atruncate(card, len(card) // 2)

    card, shorter = asyncio.run(go())
    assert shorter is not None
    assert len(shorter) <= len(card) - len(card) // 2
    assert "Rex the dog eats salmon." in _result_contents(shorter)
    with pytest.raises(ValueError, match="tokenizer_fn"):
        OAMMemoryBlock(memory, tokenizer_fn="cl100k")  # type: ignore[arg-type]
