"""How the chat adapters create and lose their threads (trial 37): a refused first
write (a NUL, a lone surrogate) through any adapter leaves nothing, not even a thread
row claiming the id for the caller's user; and after another client deletes a thread
an adapter used, its next write fails with ``ThreadDeletedError`` in every adapter
(LangChain history, LlamaIndex chat stores and memory block) instead of creating the
thread again. SQLite file and PostgreSQL."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_oam import OAMChatMessageHistory
from llama_index.core.base.llms.types import ChatMessage
from llama_index_oam import OAMChatStore, OAMDBChatStore, OAMMemoryBlock
from pydantic import BaseModel

from oam_core import InvalidArgumentError, OracleAgentMemory
from oam_core.errors import ThreadDeletedError


@pytest.fixture
def memory(url: str) -> Iterator[OracleAgentMemory]:
    client = OracleAgentMemory.open(url, embedder="hashing/64", extract_memories=False)
    try:
        yield client
    finally:
        client.close()


BAD_TEXTS = ["bad\x00text", "lone \ud800 surrogate"]


def _lc_sync(memory: OracleAgentMemory, text: str) -> None:
    OAMChatMessageHistory(memory, "t", user_id="mallory").add_messages(
        [HumanMessage("fine"), AIMessage(text)]
    )


def _lc_async(memory: OracleAgentMemory, text: str) -> None:
    history = OAMChatMessageHistory(memory, "t", user_id="mallory")
    asyncio.run(history.aadd_messages([HumanMessage("fine"), AIMessage(text)]))


def _li_add(memory: OracleAgentMemory, text: str) -> None:
    OAMChatStore(memory, user_id="mallory").add_message("t", ChatMessage(role="user", content=text))


def _li_set(memory: OracleAgentMemory, text: str) -> None:
    OAMChatStore(memory, user_id="mallory").set_messages(
        "t", [ChatMessage(role="user", content="fine"), ChatMessage(role="user", content=text)]
    )


def _li_db_add(memory: OracleAgentMemory, text: str) -> None:
    store = OAMDBChatStore(memory, user_id="mallory")
    asyncio.run(store.add_message("t", ChatMessage(role="user", content=text)))


def _li_block(memory: OracleAgentMemory, text: str) -> None:
    block = OAMMemoryBlock(memory, user_id="mallory")
    good = ChatMessage(role="user", content="fine", additional_kwargs={"session_id": "ok"})
    bad = ChatMessage(role="user", content=text, additional_kwargs={"session_id": "t"})
    asyncio.run(block._aput([good, bad]))  # a good session first: not written either


WRITES: dict[str, Callable[[OracleAgentMemory, str], None]] = {
    "langchain-history": _lc_sync,
    "langchain-history-async": _lc_async,
    "llama-index-chat-store-add": _li_add,
    "llama-index-chat-store-set": _li_set,
    "llama-index-db-chat-store-add": _li_db_add,
    "llama-index-memory-block": _li_block,
}


@pytest.mark.parametrize("text", BAD_TEXTS, ids=["nul", "surrogate"])
@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
def test_a_refused_first_write_leaves_no_thread(
    memory: OracleAgentMemory, write: str, text: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=r"messages\[\d\]\.content"):
        WRITES[write](memory, text)
    assert memory.list_threads() == []
    assert memory.get_thread_row("t") is None
    # the id is free for its real owner
    history = OAMChatMessageHistory(memory, "t", user_id="alice")
    history.add_messages([HumanMessage("hello")])
    assert [m.content for m in history.messages] == ["hello"]
    assert memory.get_thread_row("t").user_id == "alice"  # type: ignore[union-attr]


def _deleted_by_another_client(url: str, thread_id: str) -> None:
    with OracleAgentMemory.open(url, embedder="hashing/64", extract_memories=False) as other:
        assert other.delete_thread(thread_id) == 1


def test_every_adapter_refuses_to_write_to_a_thread_deleted_meanwhile(
    memory: OracleAgentMemory, url: str
) -> None:
    history = OAMChatMessageHistory(memory, "lc", user_id="alice")
    chats = OAMChatStore(memory, user_id="alice")
    db_chats = OAMDBChatStore(memory, user_id="alice")
    block = OAMMemoryBlock(memory, user_id="alice")
    msg = ChatMessage(role="user", content="first")
    history.add_messages([HumanMessage("first")])
    chats.add_message("li", msg)
    asyncio.run(db_chats.add_message("db", msg))
    session = {"session_id": "blk"}
    first = ChatMessage(role="user", content="first", additional_kwargs=session)
    asyncio.run(block._aput([first]))
    for thread_id in ("lc", "li", "db", "blk"):
        _deleted_by_another_client(url, thread_id)
    again = ChatMessage(role="user", content="again", additional_kwargs=session)
    writes: list[Callable[[], Any]] = [
        lambda: history.add_messages([HumanMessage("again")]),
        lambda: chats.add_message("li", again),
        lambda: chats.set_messages("li", [again]),
        lambda: asyncio.run(db_chats.add_message("db", again)),
        lambda: asyncio.run(db_chats.set_messages("db", [again])),
        lambda: asyncio.run(block._aput([again])),
    ]
    _each_refused_as_deleted(writes, memory)
    # A new store (which never saw the thread) starts it afresh, as a new history does.
    OAMChatStore(memory, user_id="alice").add_message("li", again)
    OAMChatMessageHistory(memory, "lc", user_id="alice").add_messages([HumanMessage("new")])
    assert sorted(r.thread_id for r in memory.list_threads()) == ["lc", "li"]


def _each_refused_as_deleted(writes: list[Callable[[], Any]], memory: OracleAgentMemory) -> None:
    """Every write raises ThreadDeletedError and no thread is created again."""
    for write in writes:
        with pytest.raises(ThreadDeletedError, match="deleted"):
            write()
    assert memory.list_threads() == []  # nothing created again


def _written_by_another_client(url: str, thread_id: str) -> None:
    with OracleAgentMemory.open(url, embedder="hashing/64", extract_memories=False) as other:
        thread = other.create_thread(thread_id=thread_id, user_id="alice")
        thread.add_messages([{"role": "user", "content": "old"}])


def test_a_thread_only_read_and_then_deleted_is_not_created_again(
    memory: OracleAgentMemory, url: str
) -> None:
    """Reading a thread is using it (trial 40 F1): the LlamaIndex adapters remember a
    thread that existed when they read it, as the LangChain history does."""
    for thread_id in ("lc", "li", "db", "blk"):
        _written_by_another_client(url, thread_id)
    history = OAMChatMessageHistory(memory, "lc", user_id="alice")
    chats = OAMChatStore(memory, user_id="alice")
    db_chats = OAMDBChatStore(memory, user_id="alice")
    block = OAMMemoryBlock(memory, user_id="alice")
    assert [m.content for m in history.messages] == ["old"]
    assert [m.content for m in chats.get_messages("li")] == ["old"]
    assert [m.content for m in asyncio.run(db_chats.get_messages("db", status=None))] == ["old"]
    assert "old" in asyncio.run(block._aget([], session_id="blk"))
    for thread_id in ("lc", "li", "db", "blk"):
        _deleted_by_another_client(url, thread_id)
    session = {"session_id": "blk"}
    again = ChatMessage(role="user", content="again", additional_kwargs=session)
    writes: list[Callable[[], Any]] = [
        lambda: history.add_messages([HumanMessage("again")]),
        lambda: chats.add_message("li", again),
        lambda: chats.set_messages("li", [again]),
        lambda: asyncio.run(db_chats.add_message("db", again)),
        lambda: asyncio.run(block._aput([again])),
    ]
    _each_refused_as_deleted(writes, memory)


def test_a_thread_read_before_it_existed_is_created_by_the_first_write(
    memory: OracleAgentMemory,
) -> None:
    chats = OAMChatStore(memory, user_id="alice")
    db_chats = OAMDBChatStore(memory, user_id="alice")
    block = OAMMemoryBlock(memory, user_id="alice")
    assert chats.get_messages("li") == []
    assert asyncio.run(db_chats.get_messages("db")) == []
    assert asyncio.run(block._aget([], session_id="blk")) == ""
    msg = ChatMessage(role="user", content="first", additional_kwargs={"session_id": "blk"})
    chats.add_message("li", msg)
    asyncio.run(db_chats.add_message("db", msg))
    asyncio.run(block._aput([msg]))
    assert sorted(r.thread_id for r in memory.list_threads()) == ["blk", "db", "li"]
    assert [m.content for m in chats.get_messages("li")] == ["first"]


NOT_JSON = {
    "nan": float("nan"),
    "inf": float("-inf"),
    "set": {1, 2},
    "bytes": b"\x00\xff",
    "object": object(),
    "nested": {"deep": [1, float("nan")]},
}


def _li_kwargs_writes(memory: OracleAgentMemory, value: object) -> list[Callable[[], Any]]:
    def msg(session: str | None = None) -> ChatMessage:
        kwargs: dict[str, Any] = {"v": value}
        if session is not None:
            kwargs["session_id"] = session
        return ChatMessage(role="user", content="x", additional_kwargs=kwargs)

    fine = ChatMessage(role="user", content="fine")
    chats = OAMChatStore(memory, user_id="mallory")
    db_chats = OAMDBChatStore(memory, user_id="mallory")
    block = OAMMemoryBlock(memory, user_id="mallory")
    return [
        lambda: chats.add_message("t", msg()),
        lambda: chats.set_messages("t", [fine, msg()]),
        lambda: asyncio.run(db_chats.add_messages("t", [fine, msg()])),
        lambda: asyncio.run(block._aput([msg("t")])),
    ]


@pytest.mark.parametrize("value", list(NOT_JSON.values()), ids=list(NOT_JSON))
def test_llama_index_refuses_additional_kwargs_json_cannot_hold(
    memory: OracleAgentMemory, value: object
) -> None:
    """Trial 40 F3: refused with InvalidArgumentError naming the key, as core
    add_messages and the LangChain history refuse them, never stored changed (NaN as
    null, a set as a list, bytes as base64); nothing written, no thread left."""
    for write in _li_kwargs_writes(memory, value):
        with pytest.raises(InvalidArgumentError, match=r"messages\[\d\]\.additional_kwargs\['v'\]"):
            write()
    assert memory.list_threads() == []
    assert memory.store.list("message", None) == []


def test_llama_index_keeps_json_additional_kwargs_and_tool_call_models(
    memory: OracleAgentMemory,
) -> None:
    class Call(BaseModel):
        id: str
        arguments: dict[str, Any]

    kwargs = {
        "n": 1.5,
        "t": (1, "a"),
        "m": {"x": None},
        "tool_calls": [Call(id="c1", arguments={"a": 1})],
    }
    chats = OAMChatStore(memory, user_id="alice")
    chats.add_message("t", ChatMessage(role="assistant", content="x", additional_kwargs=kwargs))
    [back] = chats.get_messages("t")
    assert back.additional_kwargs == {
        "n": 1.5,
        "t": [1, "a"],
        "m": {"x": None},
        "tool_calls": [{"id": "c1", "arguments": {"a": 1}}],
    }


@pytest.mark.parametrize("text", BAD_TEXTS, ids=["nul", "surrogate"])
def test_a_nul_or_lone_surrogate_in_a_message_field_is_named_as_passed(
    memory: OracleAgentMemory, text: str
) -> None:
    """Trial 43 f01: a NUL or lone surrogate in ``additional_kwargs`` is named as the
    caller passed it (``messages[1].additional_kwargs['v']``), as an int past 64 bits
    is, never by the stored layout (``messages[1].metadata['$message']...``); nothing
    is written, no thread left."""
    what = (
        r"a NUL character \(U\+0000\) at index 3"
        if "\x00" in text
        else r"a lone surrogate \(U\+D800\) at index 5"
    )
    chats, db_chats = OAMChatStore(memory, user_id="u"), OAMDBChatStore(memory, user_id="u")
    fine = ChatMessage(role="user", content="fine")
    bad = ChatMessage(role="user", content="x", additional_kwargs={"v": {"w": [text]}})
    lc_bad = AIMessage("x", additional_kwargs={"v": {"w": [text]}})
    history = OAMChatMessageHistory(memory, "t", user_id="u")
    writes: list[tuple[str, Callable[[], Any]]] = [
        ("messages[0]", lambda: chats.add_message("t", bad)),
        ("messages[1]", lambda: chats.set_messages("t", [fine, bad])),
        ("messages[1]", lambda: asyncio.run(db_chats.add_messages("t", [fine, bad]))),
        ("messages[1]", lambda: history.add_messages([HumanMessage("fine"), lc_bad])),
    ]
    for where, write in writes:
        name = re.escape(f"{where}.additional_kwargs['v']['w'][0]")
        with pytest.raises(InvalidArgumentError, match=rf"^{name} contains {what}; "):
            write()
    key = ChatMessage(role="user", content="x", additional_kwargs={text: 1})
    name = re.escape(f"messages[0].additional_kwargs key {text!r}")
    with pytest.raises(InvalidArgumentError, match=rf"^{name} contains "):
        chats.add_message("t", key)
    assert memory.list_threads() == []
    assert memory.store.list("message", None) == []
