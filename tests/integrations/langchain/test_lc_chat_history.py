"""OAMChatMessageHistory: lossless round trips, order, size, async parity, sharing,
clear semantics and RunnableWithMessageHistory (issue 4 items 1 and 5; C01, C04, C18)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    FunctionMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_oam import OAMChatMessageHistory

from oam_core import OracleAgentMemory
from oam_core.store.threads import thread_store


def conversation() -> list[BaseMessage]:
    """One message of every kind, with the fields that tend to get lost."""
    return [
        SystemMessage("You are terse.", id="s-1"),
        HumanMessage("What is 6 x 7?", name="alice", additional_kwargs={"lang": "en"}),
        AIMessage(
            "",
            id="ai-1",
            tool_calls=[{"name": "multiply", "args": {"a": 6, "b": 7}, "id": "call-1"}],
            response_metadata={"model_name": "fake", "finish_reason": "tool_calls"},
            usage_metadata={"input_tokens": 10, "output_tokens": 3, "total_tokens": 13},
        ),
        ToolMessage("42", tool_call_id="call-1", name="multiply", artifact={"raw": [6, 7]}),
        AIMessage([{"type": "text", "text": "It is 42."}], name="calc-bot"),
        ChatMessage(content="noted", role="critic"),
        FunctionMessage(content="{}", name="legacy_fn"),
        AIMessageChunk(content="partial"),
    ]


def test_every_message_type_round_trips_through_a_new_history(
    memory: OracleAgentMemory,
) -> None:
    original = conversation()
    OAMChatMessageHistory(memory, "t1", user_id="alice").add_messages(original)
    back = OAMChatMessageHistory(memory, "t1").messages
    assert back == original
    assert [type(m) for m in back] == [type(m) for m in original]
    assert back[2].tool_calls[0]["id"] == "call-1"  # type: ignore[attr-defined]
    assert back[2].tool_calls[0]["args"] == {"a": 6, "b": 7}  # type: ignore[attr-defined]
    assert back[3].tool_call_id == "call-1"  # type: ignore[attr-defined]
    assert back[3].artifact == {"raw": [6, 7]}  # type: ignore[attr-defined]
    assert back[1].additional_kwargs == {"lang": "en"} and back[1].name == "alice"
    assert back[4].content == [{"type": "text", "text": "It is 42."}]


def test_oam_sees_roles_and_text_langchain_sees_no_oam_keys(memory: OracleAgentMemory) -> None:
    OAMChatMessageHistory(memory, "t1").add_messages(conversation()[:5])
    stored = memory.store.list_thread_messages("t1")
    assert [r.role for r in stored] == ["system", "user", "assistant", "tool", "assistant"]
    assert stored[4].content == "It is 42."  # list content stored as its text
    assert stored[3].metadata is not None
    assert stored[3].metadata["$message"]["tool_call_id"] == "call-1"
    for message in OAMChatMessageHistory(memory, "t1").messages:
        assert not any(k.startswith("$") for k in message.additional_kwargs)
        assert not any(k.startswith("$") for k in message.response_metadata)


def test_plain_oam_messages_map_back_by_role(memory: OracleAgentMemory) -> None:
    thread = memory.create_thread(thread_id="plain", user_id="u")
    thread.add_messages(
        [
            {"role": "user", "content": "hi", "metadata": {"src": "import"}},
            {"role": "assistant", "content": "hello"},
            {"role": "system", "content": "be kind"},
            {"role": "tool", "content": "1", "metadata": {"$message": {"tool_call_id": "c9"}}},
            {"role": "narrator", "content": "meanwhile"},
        ]
    )
    back = OAMChatMessageHistory(memory, "plain").messages
    assert [type(m) for m in back] == [
        HumanMessage,
        AIMessage,
        SystemMessage,
        ToolMessage,
        ChatMessage,
    ]
    assert back[0].additional_kwargs == {}  # the oam metadata is not passed on
    assert back[3].tool_call_id == "c9"  # type: ignore[attr-defined]
    assert back[4].role == "narrator"  # type: ignore[attr-defined]


def test_order_is_insertion_order_over_many_calls(memory: OracleAgentMemory) -> None:
    history = OAMChatMessageHistory(memory, "t1")
    expected: list[BaseMessage] = []
    for i in range(40):
        batch: list[BaseMessage] = [HumanMessage(f"q{i}"), AIMessage(f"a{i}")]
        history.add_messages(batch)
        expected.extend(batch)
    assert [m.content for m in history.messages] == [m.content for m in expected]


def test_thousand_message_thread_is_returned_whole_and_in_order(
    memory: OracleAgentMemory,
) -> None:
    history = OAMChatMessageHistory(memory, "long")
    msgs: list[BaseMessage] = [
        HumanMessage(f"user {i}") if i % 2 == 0 else AIMessage(f"assistant {i}")
        for i in range(1000)
    ]
    history.add_messages(msgs)  # one call, one transaction
    got = history.messages
    assert len(got) == 1000
    assert [m.content for m in got] == [
        f"{'user' if i % 2 == 0 else 'assistant'} {i}" for i in range(1000)
    ]
    assert memory.store.count_thread_messages("long") == 1000


def test_add_messages_is_one_store_write(memory: OracleAgentMemory, monkeypatch: Any) -> None:
    calls: list[int] = []
    original = memory.store.add
    original_thread_write = thread_store(memory.store).add_to_thread

    def counting_add(contents: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(len(contents))
        return original(contents, *args, **kwargs)

    def counting_thread_write(thread_id: str, batches: Any, **kwargs: Any) -> Any:
        calls.extend(len(b.texts) for b in batches)
        return original_thread_write(thread_id, batches, **kwargs)

    monkeypatch.setattr(memory.store, "add", counting_add)
    monkeypatch.setattr(thread_store(memory.store), "add_to_thread", counting_thread_write)
    OAMChatMessageHistory(memory, "t1").add_messages(conversation())
    assert calls == [len(conversation())]


def test_async_trio_matches_sync(memory: OracleAgentMemory) -> None:
    sync_h = OAMChatMessageHistory(memory, "sync")
    async_h = OAMChatMessageHistory(memory, "async")
    sync_h.add_messages(conversation())

    async def run() -> tuple[list[BaseMessage], list[BaseMessage]]:
        await async_h.aadd_messages(conversation())
        before = await async_h.aget_messages()
        await async_h.aclear()
        return before, await async_h.aget_messages()

    before, after = asyncio.run(run())
    assert before == sync_h.messages == conversation()
    assert after == []
    sync_h.clear()
    assert sync_h.messages == []


def test_async_methods_are_real_coroutines_not_the_executor_default() -> None:
    for name in ("aget_messages", "aadd_messages", "aclear"):
        assert getattr(OAMChatMessageHistory, name) is not getattr(BaseChatMessageHistory, name)


def test_two_histories_on_one_thread_interleave(memory: OracleAgentMemory) -> None:
    a = OAMChatMessageHistory(memory, "shared", user_id="alice")
    b = OAMChatMessageHistory(memory, "shared", user_id="alice")
    a.add_user_message("one")
    b.add_ai_message("two")
    a.add_user_message("three")
    assert [m.content for m in a.messages] == ["one", "two", "three"]
    assert a.messages == b.messages
    assert len(memory.list_threads(user_id="alice")) == 1


def test_thread_created_on_first_write_with_scope(memory: OracleAgentMemory) -> None:
    history = OAMChatMessageHistory(memory, "new", user_id="alice", agent_id="bot")
    assert history.messages == []
    assert memory.get_thread_row("new") is None  # reads never create it
    history.add_user_message("hello")
    thread = memory.get_thread("new")
    assert (thread.user_id, thread.agent_id) == ("alice", "bot")


def test_existing_thread_of_another_user_is_refused(memory: OracleAgentMemory) -> None:
    memory.create_thread(thread_id="bobs", user_id="bob")
    with pytest.raises(ValueError, match="bob"):
        OAMChatMessageHistory(memory, "bobs", user_id="alice").add_user_message("hi")
    assert memory.store.list_thread_messages("bobs") == []


def test_clear_removes_messages_keeps_thread_row_and_memories(memory: OracleAgentMemory) -> None:
    history = OAMChatMessageHistory(memory, "t1", user_id="alice")
    history.add_messages(conversation())
    thread = memory.get_thread("t1")
    memory_id = thread.add_memory("Alice likes arithmetic.")
    other = OAMChatMessageHistory(memory, "t2", user_id="alice")
    other.add_user_message("untouched")
    history.clear()
    assert history.messages == []
    assert memory.get_thread_row("t1") is not None
    assert memory.store.get("memory", memory_id) is not None
    assert [m.content for m in other.messages] == ["untouched"]
    hits = memory.store.search("What is 6 x 7?", k=10, thread_id="t1", exact_thread_match=True)
    assert [r.record_type for r, _ in hits] == ["memory"]  # no message rows left
    history.add_user_message("after clear")
    assert [m.content for m in history.messages] == ["after clear"]


def test_bad_input_is_rejected_before_writing(memory: OracleAgentMemory) -> None:
    history = OAMChatMessageHistory(memory, "t1")
    with pytest.raises(ValueError, match="BaseMessage"):
        history.add_messages([HumanMessage("ok"), "not a message"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="JSON"):
        history.add_messages([ToolMessage("x", tool_call_id="c", artifact=object())])
    assert history.messages == []
    with pytest.raises(ValueError, match="thread_id"):
        OAMChatMessageHistory(memory, "  ")
    history.add_messages([])
    assert memory.get_thread_row("t1") is None


# -------------------------------------------------------- RunnableWithMessageHistory

# langchain-core 1.x deprecates RunnableWithMessageHistory in favour of LangGraph
# persistence, but it is still shipped and the issue asks for it: only that one
# deprecation warning is ignored, only in the tests that construct it.
LEGACY_RUNNABLE = pytest.mark.filterwarnings(
    "ignore:RunnableWithMessageHistory is deprecated"
    ":langchain_core._api.deprecation.LangChainDeprecationWarning"
)


def _chain_with_keys(memory: OracleAgentMemory, replies: list[str]) -> RunnableWithMessageHistory:
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You are a helpful assistant."),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )
    return RunnableWithMessageHistory(
        prompt | FakeListChatModel(responses=replies),
        lambda session_id: OAMChatMessageHistory(memory, session_id, user_id="alice"),
        input_messages_key="question",
        history_messages_key="history",
    )


def _chain_messages_in(memory: OracleAgentMemory, replies: list[str]) -> RunnableWithMessageHistory:
    return RunnableWithMessageHistory(
        FakeListChatModel(responses=replies),
        lambda session_id: OAMChatMessageHistory(memory, session_id),
    )


@LEGACY_RUNNABLE
def test_runnable_with_history_key_sync(memory: OracleAgentMemory) -> None:
    chain = _chain_with_keys(memory, ["Hi Alice.", "Your name is Alice."])
    cfg: Any = {"configurable": {"session_id": "s1"}}
    assert chain.invoke({"question": "I'm Alice."}, cfg).content == "Hi Alice."
    # A new chain object (a new session of the app) sees the same history.
    chain2 = _chain_with_keys(memory, ["Your name is Alice."])
    assert chain2.invoke({"question": "Who am I?"}, cfg).content == "Your name is Alice."
    assert [m.content for m in OAMChatMessageHistory(memory, "s1").messages] == [
        "I'm Alice.",
        "Hi Alice.",
        "Who am I?",
        "Your name is Alice.",
    ]


@LEGACY_RUNNABLE
def test_runnable_with_history_key_async(memory: OracleAgentMemory) -> None:
    chain = _chain_with_keys(memory, ["A", "B"])
    cfg: Any = {"configurable": {"session_id": "s2"}}

    async def run() -> None:
        await chain.ainvoke({"question": "one"}, cfg)
        await chain.ainvoke({"question": "two"}, cfg)

    asyncio.run(run())
    history = OAMChatMessageHistory(memory, "s2").messages
    assert [(type(m), m.content) for m in history] == [
        (HumanMessage, "one"),
        (AIMessage, "A"),
        (HumanMessage, "two"),
        (AIMessage, "B"),
    ]


@LEGACY_RUNNABLE
def test_runnable_messages_in_messages_out_sync_and_async(memory: OracleAgentMemory) -> None:
    chain = _chain_messages_in(memory, ["first", "second"])
    cfg: Any = {"configurable": {"session_id": "s3"}}
    chain.invoke([HumanMessage("hello")], cfg)
    asyncio.run(chain.ainvoke([HumanMessage("again")], cfg))
    assert [m.content for m in OAMChatMessageHistory(memory, "s3").messages] == [
        "hello",
        "first",
        "again",
        "second",
    ]


def test_client_refusing_the_thread_raises_its_own_error(tmp_path: Any) -> None:
    # extraction on and no LLM: create_thread's ValueError reaches the caller
    strict = OracleAgentMemory(connection=str(tmp_path / "x.db"))
    with pytest.raises(ValueError, match=r"(?i)llm"):
        OAMChatMessageHistory(strict, "t").add_user_message("hi")
    assert strict.get_thread_row("t") is None
    strict.close()


def test_two_histories_racing_to_create_one_thread(memory: OracleAgentMemory) -> None:
    import threading

    barrier = threading.Barrier(4)
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        history = OAMChatMessageHistory(memory, "race", user_id="alice")
        barrier.wait()
        try:
            for i in range(10):
                history.add_user_message(f"w{n}-{i}")
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
    contents = [m.content for m in OAMChatMessageHistory(memory, "race").messages]
    assert sorted(contents) == sorted(f"w{n}-{i}" for n in range(4) for i in range(10))
    for n in range(4):  # each writer's messages keep their order
        mine = [c for c in contents if isinstance(c, str) and c.startswith(f"w{n}-")]
        assert mine == [f"w{n}-{i}" for i in range(10)]
    assert len(memory.list_threads(user_id="alice")) == 1


def test_context_card_window_never_starts_with_a_tool_result(memory: OracleAgentMemory) -> None:
    """C05 (docs/failure-modes.md#c05) through the history: the window drops the orphan tool result (it
    joins the summary with its call), and the call is shown by name and arguments."""
    history = OAMChatMessageHistory(memory, "tools", user_id="u", agent_id="a")
    history.add_messages(
        [
            HumanMessage("Weather in Paris?"),
            AIMessage(
                "", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}]
            ),
            ToolMessage("22C sunny", tool_call_id="c1"),
            AIMessage("It is 22C and sunny."),
        ]
    )
    thread = memory.get_thread("tools")
    card = thread.get_context_card(max_recent_messages=2, max_relevant_results=0)
    assert [(m.role, m.content) for m in card.recent_messages] == [
        ("assistant", "It is 22C and sunny.")
    ]
    lines = card.summary.splitlines()
    assert [line.split(" (")[0] for line in lines] == ["user", "assistant", "tool"]
    assert lines[1].endswith('): tool call: get_weather({"city": "Paris"})')
    assert lines[2].endswith("): 22C sunny")
    # A window holding the call keeps the pair, and renders the call.
    card = thread.get_context_card(max_recent_messages=3, max_relevant_results=0)
    assert [m.role for m in card.recent_messages] == ["assistant", "tool", "assistant"]
    assert '<content>tool call: get_weather({"city": "Paris"})</content>' in card.content


def test_the_older_function_call_form_is_shown_and_round_trips(memory: OracleAgentMemory) -> None:
    """An ``AIMessage`` with ``additional_kwargs["function_call"]`` (LangChain's older
    form) and its ``FunctionMessage``: the card shows the call, the history gives both
    back exactly."""
    call = AIMessage(
        "",
        additional_kwargs={
            "function_call": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
        },
    )
    sent = [HumanMessage("Weather in Oslo?"), call, FunctionMessage("-3C", name="get_weather")]
    history = OAMChatMessageHistory(memory, "fn", user_id="u", agent_id="a")
    history.add_messages([*sent, AIMessage("It is -3C.")])
    assert history.messages[1].additional_kwargs == call.additional_kwargs
    assert isinstance(history.messages[2], FunctionMessage)
    card = memory.get_thread("fn").get_context_card(max_recent_messages=3, max_relevant_results=0)
    assert '<content>tool call: get_weather({"city": "Oslo"})</content>' in card.content
