"""A chat chain that remembers across sessions: RunnableWithMessageHistory + oam.

Session 1 and session 2 are two separate processes' worth of objects (a new client,
a new chain) over the same SQLite file; the second one sees the first one's messages
in its prompt. The chat model is langchain-core's FakeListChatModel (no network);
a small tap records the prompt the model received, so you can see what it was given.

Run:  python examples/langchain/chat_with_history.py [path/to/chat.db]
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage
from langchain_core.prompt_values import PromptValue
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_oam import OAMChatMessageHistory

from oam_core import OracleAgentMemory


def make_chain(
    memory: OracleAgentMemory, replies: list[str], seen: list[list[BaseMessage]]
) -> RunnableWithMessageHistory:
    """prompt (system + history + question) -> tap -> fake model, with oam history."""
    prompt = ChatPromptTemplate.from_messages(
        [
            ("system", "You are a friendly assistant."),
            MessagesPlaceholder("history"),
            ("human", "{question}"),
        ]
    )

    def tap(value: PromptValue) -> PromptValue:
        seen.append(value.to_messages())
        return value

    chain = prompt | RunnableLambda(tap) | FakeListChatModel(responses=replies)
    with warnings.catch_warnings():
        # langchain-core 1.x marks RunnableWithMessageHistory deprecated (LangGraph
        # persistence is the new way; see langgraph_agent.py); it still works.
        warnings.simplefilter("ignore", DeprecationWarning)
        return RunnableWithMessageHistory(
            chain,
            lambda session_id: OAMChatMessageHistory(memory, session_id, user_id="alice"),
            input_messages_key="question",
            history_messages_key="history",
        )


def main(db_path: str | Path | None = None) -> dict[str, Any]:
    """Run two sessions; return what the model saw and answered in the second one."""
    if db_path is None:
        db_path = Path(tempfile.mkdtemp()) / "chat.db"
    config: Any = {"configurable": {"session_id": "alice-chat"}}
    seen: list[list[BaseMessage]] = []

    # Session 1
    with OracleAgentMemory.open(
        f"sqlite:///{db_path}", embedder="hashing/64", extract_memories=False
    ) as memory:
        chain = make_chain(memory, ["Nice to meet you, Alice!"], seen)
        first = chain.invoke({"question": "Hi, I'm Alice and I love sailing."}, config)
        print("session 1:", first.content)

    # Session 2: new client, new chain, same database file
    with OracleAgentMemory.open(
        f"sqlite:///{db_path}", embedder="hashing/64", extract_memories=False
    ) as memory:
        chain = make_chain(memory, ["You told me you love sailing."], seen)
        second = chain.invoke({"question": "What do I love?"}, config)
        print("session 2:", second.content)
        history = OAMChatMessageHistory(memory, "alice-chat").messages

    print("prompt of session 2:")
    for message in seen[-1]:
        print(f"  {message.type}: {message.content}")
    return {
        "answer": second.content,
        "prompt": [(m.type, m.content) for m in seen[-1]],
        "history": [(m.type, m.content) for m in history],
    }


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
