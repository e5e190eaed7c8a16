"""A thread written through one framework's adapter reads through the other's: tool
calls, tool results and names travel through the framework-neutral ``$message``
fields (docs/context-card.md#tool-calls), in LangChain's or OpenAI's shape. Real
SQLite file."""

from __future__ import annotations

import asyncio
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_oam import OAMChatMessageHistory
from llama_index.core.base.llms.types import ChatMessage
from llama_index_oam import OAMChatStore, OAMDBChatStore

from oam_core import OracleAgentMemory

OPENAI_CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'},
}
LC_CALL = {"name": "get_weather", "args": {"city": "Lisbon"}, "id": "c1", "type": "tool_call"}


def _client(tmp_path: Path) -> OracleAgentMemory:
    return OracleAgentMemory(
        connection=str(tmp_path / "m.db"), embedder="hashing/8", extract_memories=False
    )


def test_langchain_reads_tool_calls_in_openais_shape(tmp_path: Path) -> None:
    with _client(tmp_path) as client:
        client.create_thread("plain", user_id="ana").add_messages(
            [
                {"role": "user", "content": "Weather in Lisbon?"},
                {
                    "role": "assistant",
                    "content": "",
                    "metadata": {"$message": {"tool_calls": [OPENAI_CALL, {"id": "c2"}]}},
                },
                {
                    "role": "tool",
                    "content": "19C",
                    "metadata": {"$message": {"tool_call_id": "c1"}},
                },
            ]
        )
        asyncio.run(
            OAMDBChatStore(client, user_id="ana").add_messages(
                "li",
                [
                    ChatMessage(role="user", content="Weather in Lisbon?"),
                    ChatMessage(
                        role="assistant",
                        content="",
                        additional_kwargs={"tool_calls": [OPENAI_CALL]},
                    ),
                    ChatMessage(
                        role="tool", content="19C", additional_kwargs={"tool_call_id": "c1"}
                    ),
                ],
            )
        )
        plain = OAMChatMessageHistory(client, "plain", user_id="ana").messages
        assert [type(m).__name__ for m in plain] == ["HumanMessage", "AIMessage", "ToolMessage"]
        ai = plain[1]
        assert isinstance(ai, AIMessage) and ai.tool_calls == [LC_CALL]
        assert [(c["id"], c["error"]) for c in ai.invalid_tool_calls] == [
            ("c2", "not a tool call in LangChain's or OpenAI's shape")
        ]
        assert isinstance(plain[2], ToolMessage) and plain[2].tool_call_id == "c1"
        written_by_llama = OAMChatMessageHistory(client, "li", user_id="ana").messages
        assert isinstance(written_by_llama[1], AIMessage)
        assert written_by_llama[1].tool_calls == [LC_CALL]


def test_llama_index_reads_what_langchain_wrote(tmp_path: Path) -> None:
    with _client(tmp_path) as client:
        OAMChatMessageHistory(client, "lc", user_id="ana").add_messages(
            [
                HumanMessage("Weather in Lisbon?", name="bob"),
                AIMessage("", tool_calls=[LC_CALL]),
                ToolMessage("19C", tool_call_id="c1"),
            ]
        )
        got = OAMChatStore(client, user_id="ana").get_messages("lc")
        assert [(m.role.value, m.additional_kwargs) for m in got] == [
            ("user", {"name": "bob"}),
            ("assistant", {"tool_calls": [OPENAI_CALL]}),
            ("tool", {"tool_call_id": "c1"}),
        ]
