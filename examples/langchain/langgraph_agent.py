"""A LangGraph agent whose long-term memory is oam (OAMStore).

The graph has one node: it recalls the user's memories from the store (semantic
search in the namespace ``("memories", user_id)``), saves a new one when the user
says "Remember that ...", and answers with langchain-core's FakeListChatModel (no
network), given the recalled memories in its system prompt. Conversations are kept
per LangGraph thread by the checkpointer; memories live in the oam store and are
shared by every thread of the user, and oam sees them as the user's memory records.

Run:  python examples/langchain/langgraph_agent.py
"""

from __future__ import annotations

import uuid
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_oam import OAMStore
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from oam_core import OracleAgentMemory
from oam_core.embedders.hashing import HashingEmbedder


def build_agent(
    memory: OracleAgentMemory, replies: list[str], seen: list[list[BaseMessage]]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The one-node memory agent, compiled with an OAMStore over ``memory``."""
    model = FakeListChatModel(responses=replies)

    def agent(state: MessagesState, config: RunnableConfig, *, store: BaseStore) -> dict[str, Any]:
        user_id = config["configurable"]["user_id"]
        namespace = ("memories", user_id)
        last = str(state["messages"][-1].content)
        if last.lower().startswith("remember that "):
            store.put(namespace, str(uuid.uuid4()), {"text": last[len("remember that ") :]})
        recalled = store.search(namespace, query=last, limit=3)
        notes = "\n".join(f"- {item.value['text']}" for item in recalled)
        prompt: list[BaseMessage] = [
            SystemMessage(f"What you know about the user:\n{notes}"),
            *state["messages"],
        ]
        seen.append(prompt)
        return {"messages": [model.invoke(prompt)]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    store = OAMStore(memory, index={"fields": ["text"]}, user_index=1)
    return graph.compile(checkpointer=InMemorySaver(), store=store)


def main() -> dict[str, Any]:
    """Two threads of one user; return what the agent knew and said in the second."""
    memory = OracleAgentMemory(
        connection=":memory:", embedder=HashingEmbedder(256), extract_memories=False
    )
    seen: list[list[BaseMessage]] = []
    agent = build_agent(memory, ["Got it.", "Your favourite colour is green."], seen)

    def ask(thread: str, text: str) -> str:
        config: Any = {"configurable": {"thread_id": thread, "user_id": "alice"}}
        out = agent.invoke({"messages": [HumanMessage(text)]}, config)
        return str(out["messages"][-1].content)

    print("thread 1:", ask("thread-1", "Remember that my favourite colour is green."))
    answer = ask("thread-2", "What is my favourite colour?")
    print("thread 2:", answer)
    print("system prompt in thread 2:", seen[-1][0].content)
    oam_view = memory.store.search("favourite colour", k=5, user_id="alice", exact_user_match=True)
    memory.close()
    return {
        "answer": answer,
        "system_prompt": str(seen[-1][0].content),
        "thread_2_messages": [m.content for m in seen[-1][1:]],
        "oam_records": [r.content for r, _ in oam_view],
    }


if __name__ == "__main__":
    main()
