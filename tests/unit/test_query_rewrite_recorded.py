"""Query rewriting against recorded real model traffic
(docs/context-card.md#query-rewriting).

SmolLM2-135M-Instruct served by llama.cpp (``scripts/record_cassettes.py``) answered
the rewrite prompt once; the cassettes in
``tests/cassettes/test_query_rewrite_recorded/`` replay it. The model is tiny, so
these tests do not judge its query: they check the mechanism. The card asks once,
with the last user message as the question and the messages before it as context;
a usable reply is searched with and fused with the card's own results; a reply cut
off by the token limit falls back to the card without the option, with a warning.
Inputs (the store clock, the embedder, ids) are fixed so that every request body is
reproducible.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.apis.llm import ILlm
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.memory.contextcard import OracleContextCard, relevant_steps
from oam_core.memory.diagnostics import MemoryPipelineWarning
from oam_core.memory.queryrewrite import fuse_results, parse_rewrite_reply, rewrite_schema
from oam_core.memory.thread import OracleThread
from oam_core.steps import run_sync

FIXED_NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
LLM_OPTIONS: dict[str, Any] = {"max_tokens": 100, "timeout": 1800.0, "max_retries": 0}
"""``timeout`` (seconds) is generous for recording on a busy machine; it is not part
of the request body, so replay does not depend on it."""
K = 3
CHAT = [
    {"role": "user", "content": "I'm flying to Lisbon in May for a conference."},
    {"role": "assistant", "content": "Lovely! How can I help you prepare?"},
    {"role": "user", "content": "What should I eat there?"},
]
MEMORIES = {
    "allergy": "Ana is allergic to peanuts",
    "vinyl": "Ana collects vinyl records",
    "veg": "Ana prefers vegetarian food",
    "run": "Ana runs every morning",
}


class Spy(ILlm):
    """Delegates to a recorded LLM and keeps ``(prompt, schema, reply)`` per call."""

    def __init__(self, inner: ILlm) -> None:
        self.inner = inner
        self.calls: list[tuple[str, dict[str, Any] | None, str]] = []

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        reply = self.inner.generate(prompt, response_json_schema=response_json_schema)
        self.calls.append((prompt, response_json_schema, reply))
        return reply

    async def generate_async(
        self, prompt: str, *, response_json_schema: dict[str, Any] | None = None
    ) -> str:
        reply = await self.inner.generate_async(prompt, response_json_schema=response_json_schema)
        self.calls.append((prompt, response_json_schema, reply))
        return reply


def _threads(tmp_path: Path, llm: ILlm) -> tuple[OracleThread, OracleThread]:
    """The same stored thread opened without and with ``query_rewrite``."""
    store = SQLiteMemoryStore(
        str(tmp_path / "recorded.db"), embedder=HashingEmbedder(64), clock=lambda: FIXED_NOW
    )
    client = OracleAgentMemory(store=store, llm=llm, extract_memories=False)
    thread = client.create_thread(thread_id="trip", user_id="ana", agent_id="concierge")
    for memory_id, text in MEMORIES.items():
        thread.add_memory(text, memory_id=memory_id)
    for n, message in enumerate(CHAT):
        thread.add_messages([{**message, "id": f"m{n}"}])
    return client.get_thread("trip"), client.get_thread("trip", query_rewrite=True)


def _check_used(plain: OracleContextCard, card: OracleContextCard, spy: Spy, store: Any) -> None:
    """One call with the question and its context; the card fuses the card's own
    results with those of the query the model wrote."""
    assert len(spy.calls) == 1
    prompt, schema, reply = spy.calls[0]
    assert "Question: What should I eat there?" in prompt
    assert "user: I'm flying to Lisbon in May for a conference." in prompt
    assert "assistant: Lovely! How can I help you prepare?" in prompt
    assert schema == rewrite_schema()
    query = parse_rewrite_reply(reply)  # the recorded reply is usable
    shown = {f"m{n}" for n in range(len(CHAT))}
    found = run_sync(relevant_steps(store, query, K, shown, ("trip", "ana", "concierge")))
    expected = fuse_results(plain.relevant_results, found, K)  # type: ignore[arg-type]
    assert card.relevant_results == expected
    assert len(card.relevant_results) == K
    assert card.summary == plain.summary  # only the relevant part changes


def test_recorded_rewrite_is_searched_and_fused(tmp_path: Path, recorded_llm: Any) -> None:
    spy = Spy(recorded_llm("rewrite_sync", **LLM_OPTIONS))
    plain_thread, thread = _threads(tmp_path, spy)
    plain = plain_thread.get_context_card(max_relevant_results=K)
    assert spy.calls == []  # off: no call
    card = thread.get_context_card(max_relevant_results=K)
    _check_used(plain, card, spy, thread.store)
    thread.store.close()


def test_recorded_rewrite_async(tmp_path: Path, recorded_llm: Any) -> None:
    spy = Spy(recorded_llm("rewrite_async", **LLM_OPTIONS))
    plain_thread, thread = _threads(tmp_path, spy)
    plain = plain_thread.get_context_card(max_relevant_results=K)
    card = anyio.run(lambda: thread.get_context_card_async(max_relevant_results=K))
    _check_used(plain, card, spy, thread.store)
    thread.store.close()


def test_recorded_reply_cut_off_falls_back(tmp_path: Path, recorded_llm: Any) -> None:
    """Three tokens cannot hold ``{"query": "..."}``: the reply is unusable, the card
    is the one without the option, and one warning says so."""
    spy = Spy(recorded_llm("rewrite_cut_off", **{**LLM_OPTIONS, "max_tokens": 3}))
    plain_thread, thread = _threads(tmp_path, spy)
    plain = plain_thread.get_context_card(max_relevant_results=K)
    with pytest.warns(MemoryPipelineWarning, match="query_rewrite") as caught:
        card = thread.get_context_card(max_relevant_results=K)
    assert len(spy.calls) == 1 and len(spy.calls[0][2]) < len('{"query": "x"}')
    assert len(caught) == 1
    assert card == plain
    assert card.relevant_results == plain.relevant_results
    thread.store.close()
