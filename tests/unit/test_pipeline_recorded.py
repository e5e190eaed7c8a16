"""The LLM pipeline against recorded real model traffic (docs/memory-pipeline.md#what-a-pass-does).

SmolLM2-135M-Instruct served by llama.cpp (``scripts/record_cassettes.py``) answered
these prompts once; the cassettes in ``tests/cassettes/test_pipeline_recorded/`` replay
them. The model is tiny, so these tests do not judge extraction quality: they check
that real replies flow through the adapter, the JSON repair and the pipeline into the
store exactly as parsed, sync and async. Inputs (message times, the store clock, the
embedder) are fixed so that every prompt, and so every request body, is reproducible.
"""

from __future__ import annotations

import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.apis.llm import ILlm
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.memory.decisions import resolve_decisions
from oam_core.memory.diagnostics import MemoryPipelineWarning
from oam_core.memory.extraction import EXTRACTION_PROMPT, parse_extraction_reply
from oam_core.memory.runningsummary import parse_summary_reply
from oam_core.memory.thread import OracleThread
from oam_core.store.versions import memory_versions

FIXED_NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
MEMORY_TYPES = ("fact", "guideline", "memory", "preference")
LLM_OPTIONS: dict[str, Any] = {"max_tokens": 400, "timeout": 1800.0, "max_retries": 0}
"""``timeout`` (seconds) is generous for recording on a busy 2-core machine; it is not
part of the request body, so replay does not depend on it."""
CHAT = [
    {
        "role": "user",
        "content": "Hi, I'm Ana. I live in Porto and I'm allergic to peanuts.",
        "timestamp": "2024-03-01T09:00:00+00:00",
    },
    {
        "role": "assistant",
        "content": "Nice to meet you, Ana! I'll keep the peanut allergy in mind.",
        "timestamp": "2024-03-01T09:00:05+00:00",
    },
    {
        "role": "user",
        "content": "Next month I'm flying to Lisbon for a conference.",
        "timestamp": "2024-03-01T09:01:00+00:00",
        "metadata": {"channel": "web"},
    },
]


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


def _thread(tmp_path: Path, llm: ILlm, **options: Any) -> OracleThread:
    store = SQLiteMemoryStore(
        str(tmp_path / "recorded.db"), embedder=HashingEmbedder(64), clock=lambda: FIXED_NOW
    )
    client = OracleAgentMemory(store=store, llm=llm)
    return client.create_thread(thread_id="trip", user_id="ana", agent_id="concierge", **options)


def _memories(thread: OracleThread) -> list[Any]:
    return [r for kind in MEMORY_TYPES for r in thread.store.list(kind)]


def _check_extraction(thread: OracleThread, spy: Spy, ids: list[str]) -> None:
    (prompt, schema, reply) = spy.calls[-1]
    assert schema is not None and "memories" in schema["properties"]
    assert "Next month I&#x27;m flying" in prompt or "Next month I'm flying" in prompt
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryPipelineWarning)
        expected = [
            d.memory for d in resolve_decisions(parse_extraction_reply(reply), []) if d.stores
        ]
    assert expected, "the recorded reply holds at least one memory"
    stored = _memories(thread)
    assert sorted((m.record_type, m.content) for m in stored) == sorted(
        (m.record_type, m.text) for m in expected
    )
    for record in stored:
        assert (record.thread_id, record.user_id, record.agent_id) == ("trip", "ana", "concierge")
        assert record.metadata["$agent_memory"]["source_message_ids"] == ids
        assert record.metadata["channel"] == "web"
    card = thread.get_context_card(max_relevant_results=10).content
    assert all(m.content in card for m in stored)


EXTRACTION_OPTIONS = {**LLM_OPTIONS, "max_tokens": 1000}
"""Three messages allow nine items (``ITEMS_ASKED_PER_MESSAGE``), and the model fills them."""


def test_recorded_extraction_sync(tmp_path: Path, recorded_llm: Any) -> None:
    spy = Spy(recorded_llm("extraction_sync", **EXTRACTION_OPTIONS))
    thread = _thread(tmp_path, spy)
    ids = thread.add_messages(CHAT)
    assert len(spy.calls) == 1
    _check_extraction(thread, spy, ids)


def test_recorded_extraction_async(tmp_path: Path, recorded_llm: Any) -> None:
    spy = Spy(recorded_llm("extraction_async", **EXTRACTION_OPTIONS))
    thread = _thread(tmp_path, spy)
    ids = anyio.run(thread.add_messages_async, CHAT)
    assert len(spy.calls) == 1
    _check_extraction(thread, spy, ids)


def test_recorded_running_summary_feeds_summary_and_card(tmp_path: Path, recorded_llm: Any) -> None:
    spy = Spy(recorded_llm("summary", **LLM_OPTIONS))
    thread = _thread(tmp_path, spy, extract_memories=False, enable_context_summary=True)
    thread.add_messages(CHAT)
    (prompt, schema, reply) = spy.calls[0]
    assert "Lisbon for a conference" in prompt and "running summary" in prompt
    assert schema is not None and schema["properties"]["topics"]["maxItems"] == 8
    expected = parse_summary_reply(reply)
    assert thread.get_summary().content == expected.summary
    card = thread.get_context_card()
    assert card.summary == expected.summary
    assert tuple(card.topics) == expected.topics
    assert all(t == t.strip().lower() for t in card.topics) and len(card.topics) <= 8


def test_recorded_shortening_condenses_the_prompt_copy_only(
    tmp_path: Path, recorded_llm: Any
) -> None:
    spy = Spy(recorded_llm("shortening", **LLM_OPTIONS))
    thread = _thread(tmp_path, spy, max_message_token_length=40)
    story = (
        "Let me tell you about my dog Moose. He is a three year old golden retriever who "
        "loves the beach, steals socks, and is terrified of the vacuum cleaner. "
    ) * 6
    with warnings.catch_warnings(record=True) as caught:
        # The recorded model loops on this input until max_tokens, so its extraction
        # reply is cut off: the pass is skipped with a warning and the message stays.
        warnings.simplefilter("always", MemoryPipelineWarning)
        [message_id] = thread.add_messages(
            [{"role": "user", "content": story, "timestamp": "2024-03-02T10:00:00+00:00"}]
        )
    if _memories(thread) == []:
        assert any("cut off" in str(w.message) for w in caught)
    shorten_prompt, shorten_schema, condensed = spy.calls[0]
    assert shorten_schema is None and "Moose" in shorten_prompt
    extraction_prompt = spy.calls[1][0]
    assert story not in extraction_prompt
    shown = extraction_prompt.split("<content>")[1].split("</content>")[0]
    assert round(len(shown) / 3.5) <= 40
    assert shown.strip()[:20] in condensed.strip() or condensed.strip() in shown
    assert thread.get_messages()[0].content == story
    assert thread.get_messages()[0].id == message_id


# -- update decisions (docs/memory-pipeline.md#update-decisions) ------------------------------
# Each scenario seeds one current memory (fixed id, so every prompt is reproducible) and
# sends one message that moves, changes or repeats it. The tiny model decides what it
# decides; the tests check that whatever it recorded is applied exactly once, with the
# right windows, and that nothing else changes.

SCENARIOS: dict[str, tuple[str, str, str]] = {
    # name: (record type, seeded memory, the new message)
    "decision_move": (
        "fact",
        "Ana lives in Lisbon",
        "I moved to Berlin last week, I live there now.",
    ),
    "decision_job": (
        "fact",
        "Ana works as a nurse at Santa Maria hospital",
        "I quit the hospital. Since Monday I work as a software developer at Fintech Co.",
    ),
    "decision_preference": (
        "preference",
        "Ana loves spicy food",
        "I can't eat spicy food anymore, I prefer mild dishes now.",
    ),
    "decision_repeat": ("fact", "Ana is allergic to peanuts", "Remember, I'm allergic to peanuts."),
}
SAID_AT = "2024-06-01T09:00:00+00:00"
SEEDED_AT = "2024-01-01T00:00:00+00:00"


def _when(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value).astimezone(timezone.utc)


def _valid_now(record: Any) -> bool:
    start, end = _when(record.valid_from), _when(record.valid_until)
    return (start is None or start <= FIXED_NOW) and (end is None or end > FIXED_NOW)


def _run_scenario(tmp_path: Path, recorded_llm: Any, name: str) -> None:
    record_type, seeded_text, said = SCENARIOS[name]
    spy = Spy(recorded_llm(name, **LLM_OPTIONS))
    thread = _thread(tmp_path, spy)
    store = thread.store
    store.add(
        [seeded_text],
        record_type,
        record_ids=[f"seeded-{name}"],
        user_ids="ana",
        agent_ids="concierge",
        timestamps=SEEDED_AT,
    )
    (seeded,) = _memories(thread)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryPipelineWarning)
        [message_id] = thread.add_messages(
            [{"role": "user", "content": said, "timestamp": SAID_AT}]
        )
    assert len(spy.calls) == 1
    prompt, schema, reply = spy.calls[0]
    assert f'<memory id="{seeded.id}" type="{record_type}"' in prompt
    assert schema is not None
    for shape in schema["properties"]["memories"]["items"]["anyOf"]:
        assert shape["properties"]["target_id"]["enum"] == [seeded.id, None]

    # What the recorded reply must have done, decided by the library's own rules.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MemoryPipelineWarning)
        decisions = resolve_decisions(parse_extraction_reply(reply), [seeded])
    stored = {r.id: r for r in _memories(thread)}
    new = [r for r in stored.values() if r.id != seeded.id]
    assert sorted((r.record_type, r.content) for r in new) == sorted(
        (d.memory.record_type, d.memory.text) for d in decisions if d.stores
    ), "each stored decision is applied exactly once"
    for record in new:
        assert record.metadata["$agent_memory"]["source_message_ids"] == [message_id]
        assert record.metadata["$agent_memory"]["extraction_prompt"] == EXTRACTION_PROMPT
        decision = next(d for d in decisions if d.stores and d.memory.text == record.content)
        assert _when(record.valid_from) == _when(decision.memory.valid_from or SAID_AT)
        assert record.valid_until is None
    after = stored[seeded.id]
    reserved = after.metadata.get("$agent_memory", {}) if after.metadata else {}
    changes = [d for d in decisions if d.action in ("UPDATE", "DELETE")]
    assert len(changes) <= 1  # a target is changed once per reply
    if not changes:
        assert after.valid_until is None and "status" not in reserved
        assert len(memory_versions(store).get_memory_history(seeded.id)) == 1
    elif changes[0].action == "UPDATE":
        (successor,) = [r for r in new if r.content == changes[0].memory.text]
        assert reserved["status"] == "invalid" and reserved["superseded_by"] == successor.id
        assert successor.metadata["$agent_memory"]["supersedes"] == [seeded.id]
        assert _when(after.valid_until) == max(_when(successor.valid_from), _when(SEEDED_AT))
        history = memory_versions(store).get_memory_history(seeded.id)
        assert [r.id for r in history] == [seeded.id, successor.id]
    else:
        assert reserved["status"] == "invalid" and reserved["superseded_by"] is None
        ended = _when(changes[0].memory.valid_from or SAID_AT)
        assert _when(after.valid_until) == max(ended, _when(SEEDED_AT))
    current = {
        r.id
        for r, _ in store.search(seeded_text, k=10, user_id="ana", record_types=set(MEMORY_TYPES))
    }
    assert current == {r.id for r in stored.values() if _valid_now(r)}


def test_recorded_decision_move(tmp_path: Path, recorded_llm: Any) -> None:
    _run_scenario(tmp_path, recorded_llm, "decision_move")


def test_recorded_decision_job_change(tmp_path: Path, recorded_llm: Any) -> None:
    _run_scenario(tmp_path, recorded_llm, "decision_job")


def test_recorded_decision_preference_reversed(tmp_path: Path, recorded_llm: Any) -> None:
    _run_scenario(tmp_path, recorded_llm, "decision_preference")


def test_recorded_decision_fact_repeated(tmp_path: Path, recorded_llm: Any) -> None:
    _run_scenario(tmp_path, recorded_llm, "decision_repeat")
