"""``OAMDBChatStore``: the ``AsyncDBChatStore`` contract (modelled on llama-index-core's
SQLAlchemy chat store tests), copies, ordering, and ``Memory`` on top of it."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, MessageRole, TextBlock
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store import SimpleChatStore
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index_oam import OAMChatStore, OAMDBChatStore

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.threads import thread_store

T = TypeVar("T")
ACTIVE, ARCHIVED = MessageStatus.ACTIVE, MessageStatus.ARCHIVED


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def msg(text: str, role: str = "user") -> ChatMessage:
    return ChatMessage(role=role, content=text)


def texts(messages: list[ChatMessage]) -> list[str | None]:
    return [m.content for m in messages]


def test_add_get_count_with_status(memory: OracleAgentMemory) -> None:
    cs = OAMDBChatStore(memory, user_id="u1")

    async def go() -> None:
        await cs.add_message("s", msg("a"))
        await cs.add_messages("s", [msg("b", "assistant"), msg("c")])
        await cs.add_message("s", msg("old"), status=ARCHIVED)
        assert texts(await cs.get_messages("s")) == ["a", "b", "c"]
        assert texts(await cs.get_messages("s", status=ARCHIVED)) == ["old"]
        assert texts(await cs.get_messages("s", status=None)) == ["a", "b", "c", "old"]
        assert [m.role for m in await cs.get_messages("s")] == [
            MessageRole.USER,
            MessageRole.ASSISTANT,
            MessageRole.USER,
        ]
        assert await cs.count_messages("s") == 3
        assert await cs.count_messages("s", status=ARCHIVED) == 1
        assert await cs.count_messages("s", status=None) == 4
        assert texts(await cs.get_messages("s", limit=2, offset=1)) == ["b", "c"]
        assert await cs.get_messages("unknown") == []
        assert await cs.count_messages("unknown") == 0

    run(go())
    thread = memory.get_thread("s")
    assert thread.user_id == "u1"
    assert [m.content for m in thread.get_messages()] == ["a", "b", "c", "old"]


def test_set_messages_replaces_every_status(memory: OracleAgentMemory) -> None:
    cs = OAMDBChatStore(memory)

    async def go() -> None:
        await cs.add_messages("s", [msg("a"), msg("b")])
        await cs.add_message("s", msg("z"), status=ARCHIVED)
        await cs.set_messages("s", [msg("x"), msg("y")])
        assert texts(await cs.get_messages("s", status=None)) == ["x", "y"]
        await cs.set_messages("s", [])
        assert await cs.count_messages("s", status=None) == 0

    run(go())


def test_delete_message_by_position(memory: OracleAgentMemory) -> None:
    cs = OAMDBChatStore(memory)

    async def go() -> None:
        await cs.add_messages("s", [msg("A"), msg("B"), msg("C")])
        deleted = await cs.delete_message("s", 1)
        assert deleted is not None and deleted.content == "B"
        assert texts(await cs.get_messages("s")) == ["A", "C"]
        assert (await cs.delete_message("s", 0)).content == "A"  # type: ignore[union-attr]
        assert (await cs.delete_message("s", -1)).content == "C"  # type: ignore[union-attr]
        assert await cs.get_messages("s") == []
        assert await cs.delete_message("s", 0) is None

    run(go())


def test_delete_messages_by_status_keeps_memories(memory: OracleAgentMemory) -> None:
    cs = OAMDBChatStore(memory)

    async def go() -> None:
        await cs.add_messages("s", [msg("a"), msg("b")])
        await cs.add_message("s", msg("old"), status=ARCHIVED)
        memory.get_thread("s").add_memory("likes tea")
        await cs.delete_messages("s", status=ACTIVE)
        assert texts(await cs.get_messages("s", status=None)) == ["old"]
        await cs.delete_messages("s")
        assert await cs.count_messages("s", status=None) == 0

    run(go())
    assert [r.content for r in memory.store.list("memory", thread_id="s")] == ["likes tea"]


def test_delete_and_archive_oldest(memory: OracleAgentMemory) -> None:
    cs = OAMDBChatStore(memory)

    async def go() -> None:
        await cs.add_messages("s", [msg(f"m{i}") for i in range(6)])
        assert texts(await cs.archive_oldest_messages("s", 2)) == ["m0", "m1"]
        assert texts(await cs.get_messages("s")) == ["m2", "m3", "m4", "m5"]
        assert texts(await cs.get_messages("s", status=ARCHIVED)) == ["m0", "m1"]
        assert texts(await cs.delete_oldest_messages("s", 1)) == ["m2"]
        assert texts(await cs.get_messages("s", status=None)) == ["m0", "m1", "m3", "m4", "m5"]
        assert texts(await cs.archive_oldest_messages("s", 100)) == ["m3", "m4", "m5"]
        assert await cs.count_messages("s") == 0
        assert await cs.archive_oldest_messages("s", 0) == []
        with pytest.raises(ValueError, match="n must be an int >= 0"):
            await cs.delete_oldest_messages("s", -1)

    run(go())


def test_get_keys(memory: OracleAgentMemory) -> None:
    mine = OAMDBChatStore(memory, user_id="u1")
    other = OAMDBChatStore(memory, user_id="u2")

    async def go() -> None:
        await mine.add_message("s1", msg("a"))
        await mine.add_message("s2", msg("b"))
        await other.add_message("s3", msg("c"))
        await mine.delete_messages("s2")
        assert await mine.get_keys() == ["s1"]
        assert await other.get_keys() == ["s3"]

    run(go())


def test_returned_messages_are_copies(memory: OracleAgentMemory) -> None:
    cs = OAMDBChatStore(memory)

    async def go() -> None:
        original = msg("hello")
        await cs.add_message("s", original)
        original.blocks.append(TextBlock(text="mutated before read"))
        first = (await cs.get_messages("s"))[0]
        first.blocks.insert(0, TextBlock(text="memory card"))
        first.additional_kwargs["session_id"] = "s"
        second = (await cs.get_messages("s"))[0]
        assert second.content == "hello"
        assert second.additional_kwargs == {}
        assert second is not first

    run(go())


def test_a_messages_own_session_id_is_kept_by_both_chat_stores(
    memory: OracleAgentMemory,
) -> None:
    """Trial 48 f03: only the memory block drops the ``session_id`` tag that
    ``BaseMemoryBlock.aput`` sets; a chat store keeps the message as given, as
    ``SimpleChatStore`` does (the block's side: test_li_memory_block.py)."""
    kwargs = {"session_id": "crm-4711", "lang": "en"}
    simple = SimpleChatStore()
    simple.add_message("k", ChatMessage(role="user", content="hi", additional_kwargs=kwargs))
    classic = OAMChatStore(memory)
    classic.add_message("k1", ChatMessage(role="user", content="hi", additional_kwargs=kwargs))
    db = OAMDBChatStore(memory)
    run(db.add_message("k2", ChatMessage(role="user", content="hi", additional_kwargs=kwargs)))
    expected = simple.get_messages("k")[0].additional_kwargs
    assert expected == kwargs
    assert classic.get_messages("k1")[0].additional_kwargs == expected
    assert run(db.get_messages("k2"))[0].additional_kwargs == expected
    assert run(OAMDBChatStore(memory).get_messages("k1", status=None))[0].additional_kwargs == (
        expected
    )


def test_tool_calls_and_blocks_round_trip(memory: OracleAgentMemory) -> None:
    cs = OAMDBChatStore(memory)
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        ChatMessage(role="user", blocks=[TextBlock(text="look"), ImageBlock(url="http://x/y.png")]),
        ChatMessage(role="assistant", content="", additional_kwargs={"tool_calls": [call]}),
        ChatMessage(
            role="tool", content="42", additional_kwargs={"tool_call_id": "call_1", "name": "f"}
        ),
    ]

    async def go() -> list[ChatMessage]:
        await cs.add_messages("s", messages)
        return await OAMDBChatStore(memory).get_messages("s")

    back = run(go())
    assert [m.model_dump() for m in back] == [m.model_dump() for m in messages]
    stored = memory.store.list_thread_messages("s")
    assert [r.role for r in stored] == ["user", "assistant", "tool"]
    assert stored[2].metadata is not None and stored[2].metadata["$message"]["name"] == "f"
    assert stored[1].metadata["$message"]["tool_calls"] == [call]
    assert stored[2].metadata["$message"]["tool_call_id"] == "call_1"
    # The context card shows the call (name and arguments), not an empty message, and
    # its recent window never opens with the tool result.
    card = memory.get_thread("s").get_context_card(max_recent_messages=1, max_relevant_results=0)
    assert card.recent_messages == []
    assert "assistant" in card.summary and "tool call: f({})" in card.summary


def test_order_is_insertion_order(memory: OracleAgentMemory) -> None:
    """C01/C02: 200 alternating messages read back in insertion order."""
    cs = OAMDBChatStore(memory)
    batch = [msg(f"m{i}", "user" if i % 2 == 0 else "assistant") for i in range(200)]

    async def go() -> None:
        await cs.add_messages("s", batch[:100])
        for m in batch[100:]:
            await cs.add_message("s", m)
        got = await cs.get_messages("s")
        assert texts(got) == [f"m{i}" for i in range(200)]
        assert texts(await cs.get_messages("s", offset=50, limit=10)) == [
            f"m{i}" for i in range(50, 60)
        ]

    run(go())


def test_bad_arguments(memory: OracleAgentMemory) -> None:
    cs = OAMDBChatStore(memory)
    with pytest.raises(ValueError, match="key"):
        run(cs.get_messages(" "))
    with pytest.raises(ValueError, match="limit"):
        run(cs.get_messages("s", limit=-1))
    with pytest.raises(ValueError, match="ChatMessage"):
        run(cs.add_messages("s", ["not a message"]))  # type: ignore[list-item]
    with pytest.raises(ValueError, match="OracleAgentMemory"):
        OAMDBChatStore("nope")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="user_id"):
        OAMDBChatStore(memory, user_id="")


def test_extraction_needs_an_llm_error_passes_through(db_path: Path) -> None:
    strict = OracleAgentMemory(connection=str(db_path))  # extraction on, no LLM
    with pytest.raises(ValueError, match=r"(?i)llm"):
        run(OAMDBChatStore(strict).add_message("s", msg("hi")))
    assert strict.store.list_thread_messages("s") == []
    strict.close()


def test_memory_queue_persists_in_oam_threads(
    db_path: Path, event_loop: asyncio.AbstractEventLoop
) -> None:
    """``Memory.from_defaults(chat_store=...)``: the queue survives a new process
    (a new client on the same file) and flushed messages are archived, not lost."""
    first = OracleAgentMemory(
        connection=str(db_path), embedder=HashingEmbedder(64), extract_memories=False
    )
    mem = Memory.from_defaults(
        session_id="chat-1",
        chat_store=OAMDBChatStore(first),
        token_limit=40,
        chat_history_token_ratio=0.5,
        token_flush_size=10,
    )
    for i in range(6):
        mem.put(ChatMessage(role="user", content=f"question {i} about the weather"))
        mem.put(ChatMessage(role="assistant", content=f"answer {i}"))
    active = mem.get_all(status=ACTIVE)
    assert 0 < len(active) < 12
    first.close()

    second = OracleAgentMemory(connection=str(db_path), extract_memories=False)
    cs = OAMDBChatStore(second)
    again = Memory.from_defaults(session_id="chat-1", chat_store=cs, token_limit=40)
    assert texts(again.get_all(status=ACTIVE)) == texts(active)
    archived = again.get_all(status=ARCHIVED)
    assert texts(archived + active) == [
        t for i in range(6) for t in (f"question {i} about the weather", f"answer {i}")
    ]
    assert [m.content for m in second.get_thread("chat-1").get_messages()] == texts(
        archived + active
    )
    again.reset()
    assert again.get_all(status=None) == []
    second.close()


def test_status_is_filterable_metadata_and_foreign_messages_are_history(
    memory: OracleAgentMemory,
) -> None:
    cs = OAMDBChatStore(memory)

    async def go() -> None:
        await cs.add_messages("s", [msg("q1"), msg("q2")])
        await cs.archive_oldest_messages("s", 1)
        memory.get_thread("s").add_messages([{"role": "assistant", "content": "direct"}])
        assert texts(await cs.get_messages("s")) == ["q2"]
        assert texts(await cs.get_messages("s", status=ARCHIVED)) == ["q1", "direct"]
        assert (await cs.get_messages("s", status=ARCHIVED))[1].role == MessageRole.ASSISTANT

    run(go())
    by_status = {
        r.content: (r.metadata or {}).get("_llama_index_status")
        for r in memory.store.list_thread_messages("s")
    }
    assert by_status == {"q1": "archived", "q2": "active", "direct": None}
    active = memory.store.list(
        "message", thread_id="s", metadata_filter={"_llama_index_status": "active"}
    )
    assert [r.content for r in active] == ["q2"]


def test_a_bare_store_is_accepted(store: SQLiteMemoryStore) -> None:
    cs = OAMDBChatStore(store, user_id="u")

    async def go() -> list[ChatMessage]:
        await cs.add_message("s", msg("hi"))
        return await cs.get_messages("s")

    assert texts(run(go())) == ["hi"]
    row = thread_store(store).get_thread_row("s")
    assert row is not None and row.user_id == "u"


def test_sessions_of_another_user_are_refused(tmp_path: Any) -> None:
    """A store or block configured for one user never reads or writes another
    user's thread (found by a fresh-user review)."""
    import asyncio

    from llama_index.core.llms import ChatMessage
    from llama_index_oam import OAMDBChatStore, OAMMemoryBlock

    from oam_core import OracleAgentMemory
    from oam_core.embedders.hashing import HashingEmbedder

    client = OracleAgentMemory(
        connection=str(tmp_path / "own.db"), embedder=HashingEmbedder(64), extract_memories=False
    )
    client.add_memory("Ada's PIN is 1234.", user_id="ada", agent_id="helper")
    ada = OAMDBChatStore(client, user_id="ada", agent_id="helper")
    bob = OAMDBChatStore(client, user_id="bob", agent_id="helper")

    async def run() -> None:
        await ada.add_message("ada-session", ChatMessage(role="user", content="my PIN"))
        with pytest.raises(ValueError, match="belongs to user_id 'ada', not 'bob'"):
            await bob.add_message("ada-session", ChatMessage(role="user", content="bob was here"))
        with pytest.raises(ValueError, match="belongs to user_id 'ada'"):
            await bob.get_messages("ada-session")
        block = OAMMemoryBlock(client, user_id="bob", agent_id="helper")
        with pytest.raises(ValueError, match="belongs to user_id 'ada'"):
            await block.aget([ChatMessage(role="user", content="PIN")], session_id="ada-session")
        assert [m.content for m in await ada.get_messages("ada-session")] == ["my PIN"]

    asyncio.run(run())
    client.close()


def test_a_failed_set_messages_keeps_the_old_messages(
    memory: OracleAgentMemory, monkeypatch: pytest.MonkeyPatch
) -> None:
    cs = OAMChatStore(memory)
    cs.set_messages("s", [msg("a"), msg("b")])
    store = memory.store

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the embedder is down")

    monkeypatch.setattr(store.runtime, "embed_plans", refuse)  # every write of new text fails
    with pytest.raises(RuntimeError, match="embedder is down"):
        cs.set_messages("s", [msg("x"), msg("y")])
    monkeypatch.undo()
    assert texts(cs.get_messages("s")) == ["a", "b"]  # nothing acknowledged was lost
    cs.set_messages("s", [msg("x"), msg("y")])
    assert texts(cs.get_messages("s")) == ["x", "y"]
