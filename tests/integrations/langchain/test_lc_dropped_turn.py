"""A turn ``RunnableWithMessageHistory`` cannot store (trial 37, C28): LangChain calls
the history from a listener whose errors it only logs, so the chain answers and the
turn is lost. The history remembers that failure and the next use of a history of
that thread raises ``DroppedHistoryWriteError`` once (the next turn fails loudly);
the call after that works. A refused direct ``add_messages`` raises at once and is
not reported again. SQLite file and PostgreSQL, sync and async."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_oam import DroppedHistoryWriteError, OAMChatMessageHistory

from oam_core import InvalidArgumentError, OracleAgentMemory

pytestmark = pytest.mark.filterwarnings(
    "ignore:RunnableWithMessageHistory is deprecated"
    ":langchain_core._api.deprecation.LangChainDeprecationWarning"
)
CFG: Any = {"configurable": {"session_id": "s"}}
BAD_REPLIES = ["bad\x00reply", "lone \udc00 surrogate"]


@pytest.fixture
def memory(memory_both: OracleAgentMemory) -> OracleAgentMemory:
    return memory_both


def _factories(memory: OracleAgentMemory) -> dict[str, Callable[[str], OAMChatMessageHistory]]:
    shared: dict[str, OAMChatMessageHistory] = {}

    def same(session_id: str) -> OAMChatMessageHistory:
        if session_id not in shared:
            shared[session_id] = OAMChatMessageHistory(memory, session_id, user_id="bob")
        return shared[session_id]

    return {
        "new-history-per-call": lambda sid: OAMChatMessageHistory(memory, sid, user_id="bob"),
        "one-history": same,
    }


def _contents(memory: OracleAgentMemory) -> list[Any]:
    return [m.content for m in OAMChatMessageHistory(memory, "s").messages]


@pytest.mark.parametrize("bad", BAD_REPLIES, ids=["nul", "surrogate"])
@pytest.mark.parametrize("factory", ["new-history-per-call", "one-history"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_reply_that_cannot_be_stored_fails_the_next_turn(
    memory: OracleAgentMemory, bad: str, factory: str, mode: str
) -> None:
    model = FakeListChatModel(responses=[bad, "second answer"])
    chain = RunnableWithMessageHistory(model, _factories(memory)[factory])

    def invoke(text: str) -> BaseMessage:
        if mode == "sync":
            return chain.invoke([HumanMessage(text)], CFG)
        reply: BaseMessage = asyncio.run(chain.ainvoke([HumanMessage(text)], CFG))
        return reply

    assert invoke("first").content == bad  # LangChain answers; the turn is not stored
    assert memory.store.list_thread_messages("s") == []
    with pytest.raises(DroppedHistoryWriteError, match=r"chat history 's' \(2 messages\)") as info:
        invoke("second")
    assert isinstance(info.value.__cause__, InvalidArgumentError)
    assert "messages[1].content" in str(info.value)
    assert invoke("third").content == "second answer"  # reported once; then on again
    assert _contents(memory) == ["third", "second answer"]


def test_a_refused_direct_write_raises_once_and_is_not_reported_again(
    memory: OracleAgentMemory,
) -> None:
    history = OAMChatMessageHistory(memory, "s", user_id="bob")
    with pytest.raises(InvalidArgumentError, match="NUL"):
        history.add_messages([HumanMessage("hi"), AIMessage("bad\x00reply")])
    assert history.messages == []
    history.add_messages([HumanMessage("hi"), AIMessage("good")])
    assert _contents(memory) == ["hi", "good"]
    assert OAMChatMessageHistory(memory, "s", user_id="bob").messages[1].content == "good"


def test_a_dropped_write_is_reported_by_the_next_history_on_the_same_connection(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'own.db'}"
    opened: list[OAMChatMessageHistory] = []

    def history(sid: str) -> OAMChatMessageHistory:
        opened.append(OAMChatMessageHistory(connection=url, session_id=sid, user_id="bob"))
        return opened[-1]

    chain = RunnableWithMessageHistory(FakeListChatModel(responses=["x\x00y", "ok"]), history)
    try:
        chain.invoke([HumanMessage("first")], CFG)
        with pytest.raises(DroppedHistoryWriteError, match="NUL"):
            chain.invoke([HumanMessage("second")], CFG)
        assert chain.invoke([HumanMessage("third")], CFG).content == "ok"
        assert [m.content for m in history("s").messages] == ["third", "ok"]
    finally:
        for h in opened:
            h.close()
