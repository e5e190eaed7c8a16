"""Conformance: the errors the client and threads raise are those of the tree, on
every back end (docs/errors.md; issue 16 item 6): an unknown thread is a
``NotFoundError`` (a ``KeyError``), a write to a thread deleted meanwhile a
``ThreadDeletedError`` (a ``ValueError``) that writes nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from oam_core import NotFoundError, OAMError, OracleAgentMemory, ThreadDeletedError
from oam_core.store.threads import thread_store


@pytest.fixture
def mem(store: Any) -> OracleAgentMemory:
    return OracleAgentMemory(store=store, extract_memories=False)


def test_get_thread_of_an_unknown_thread_is_not_found(mem: OracleAgentMemory) -> None:
    with pytest.raises(NotFoundError, match="unknown thread id 'nope'") as raised:
        mem.get_thread("nope")
    assert isinstance(raised.value, KeyError) and isinstance(raised.value, OAMError)
    assert str(raised.value) == "unknown thread id 'nope'"  # no KeyError quotes
    with pytest.raises(KeyError):
        asyncio.run(mem.get_thread_async("nope"))


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("what", ["messages", "memory"])
def test_a_write_to_a_deleted_thread_is_thread_deleted(
    mem: OracleAgentMemory, store: Any, what: str, use_async: bool
) -> None:
    thread = mem.create_thread(thread_id="T", user_id="u", agent_id="a")
    other = OracleAgentMemory(store=store, extract_memories=False)
    assert other.delete_thread("T") == 1

    async def write_async() -> Any:
        if what == "messages":
            return await thread.add_messages_async([{"role": "user", "content": "late"}])
        return await thread.add_memory_async("late memory")

    def write() -> Any:
        if use_async:
            return asyncio.run(write_async())
        if what == "messages":
            return thread.add_messages([{"role": "user", "content": "late"}])
        return thread.add_memory("late memory")

    with pytest.raises(ThreadDeletedError, match="thread 'T' does not exist") as raised:
        write()
    assert isinstance(raised.value, ValueError)
    assert mem.get_thread_row("T") is None
    assert store.list("memory", thread_id="T") == []
    assert store.list_thread_messages("T") == []


def test_a_pipeline_commit_on_a_deleted_thread_is_thread_deleted(
    mem: OracleAgentMemory,
) -> None:
    mem.create_thread(thread_id="T")
    assert mem.delete_thread("T") == 1
    with pytest.raises(ThreadDeletedError, match="does not exist"):
        thread_store(mem.store).commit_thread_pass("T", expected_state={}, state={"x": 1})
