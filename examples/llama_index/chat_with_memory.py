"""A LlamaIndex chat engine whose long-term memory is an ``oam`` thread.

``Memory`` keeps the short-term queue in ``oam`` threads (``OAMDBChatStore``); when the
queue outgrows its token budget, the oldest turns flush into ``OAMMemoryBlock``,
which puts the thread's context card (summary plus relevant memories) into the
system prompt. The chat engine and its memory are rebuilt from the database in a
second "process", and still know what was said early on.

The LLM is a small offline fake (``NotesLLM``) that answers from its prompt, so the
example runs anywhere: swap in any LlamaIndex LLM (e.g. ``OpenAI(model=...)``) and an
``oam`` client with ``llm=`` to get memory extraction as well.

Run: ``python examples/llama_index/chat_with_memory.py [path/to/chat.db]``
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import (
    CompletionResponse,
    CompletionResponseGen,
    CustomLLM,
    LLMMetadata,
)
from llama_index.core.memory import Memory
from llama_index.core.storage.chat_store.base_db import MessageStatus
from llama_index_oam import OAMDBChatStore, OAMMemoryBlock

from oam_core import OracleAgentMemory
from oam_core.embedders.hashing import HashingEmbedder

WORD = re.compile(r"[a-z]+")


class NotesLLM(CustomLLM):
    """Fake LLM: says "Noted." to statements and answers a question with the user
    message in the prompt's context card that shares the most words with it."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="notes-llm")

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        question = prompt.rsplit("user:", 1)[-1].removesuffix("assistant: ").strip()
        if not question.endswith("?"):
            return CompletionResponse(text="Noted.")
        card = prompt.split("</context_card>", 1)[0]
        remembered = [
            line.strip()
            for line in re.findall(r"<role>user</role>\s*<content>(.*?)</content>", card, re.S)
            if line.strip() != question
        ]
        wanted = set(WORD.findall(question.lower())) - {"what", "am", "i", "is", "my", "the"}

        def overlap(line: str) -> int:
            return len(wanted & set(WORD.findall(line.lower())))

        best = max(remembered, key=overlap, default="")
        if best and overlap(best) > 0:
            return CompletionResponse(text=f"You told me: {best}")
        return CompletionResponse(text="I don't know yet.")

    def stream_complete(
        self, prompt: str, formatted: bool = False, **kwargs: Any
    ) -> CompletionResponseGen:
        yield self.complete(prompt, formatted, **kwargs)


def open_engine(client: OracleAgentMemory, session: str) -> tuple[SimpleChatEngine, Memory]:
    """A chat engine and its ``Memory``, both living in ``client``'s database."""
    memory = Memory.from_defaults(
        session_id=session,
        chat_store=OAMDBChatStore(client, user_id="ada", agent_id="helper"),
        memory_blocks=[OAMMemoryBlock(client, user_id="ada", agent_id="helper")],
        token_limit=120,  # tiny, to flush quickly; use your model's context size
        chat_history_token_ratio=0.5,
        token_flush_size=20,
    )
    return SimpleChatEngine.from_defaults(llm=NotesLLM(), memory=memory), memory


def main(db_path: str | Path) -> list[str]:
    """Chat, "restart", and ask about something only the long-term memory still holds.

    Returns the engine's answers, in order.
    """
    answers = []
    client = OracleAgentMemory(
        connection=str(db_path), embedder=HashingEmbedder(256), extract_memories=False
    )
    engine, _ = open_engine(client, "ada-chat")
    for line in [
        "I am allergic to peanuts, please remember that.",
        "Today I want to plan a trip to Lisbon.",
        "Which museums are open on Mondays?",
        "And where can I find good pastries?",
        "Also I need a hotel near the river.",
    ]:
        answers.append(str(engine.chat(line)))
    client.close()

    client = OracleAgentMemory(  # a new process: everything comes from the database
        connection=str(db_path), embedder=HashingEmbedder(256), extract_memories=False
    )
    engine, memory = open_engine(client, "ada-chat")
    queue = memory.get_all(status=MessageStatus.ACTIVE)
    assert not any("peanuts" in (m.content or "") for m in queue), "should have been flushed"
    answers.append(str(engine.chat("What am I allergic to?")))
    client.close()
    for answer in answers:
        print(answer)
    return answers


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp) / "chat.db")
