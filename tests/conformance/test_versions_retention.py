"""A new version keeps its memory's retention (docs/versions.md#superseding-and-invalidating,
docs/store.md#ttl-and-retention): ``update_memory`` (the inspector's Correct, ``oam
memories update``, MCP ``update_memory``) and the extraction pass's ``UPDATE`` give the
new version the old one's ``expires_at``, never the store's default TTL counted from
the correction; an expired memory is unknown to every version operation.

Time comes from the conformance ``clock`` fixture (start 2026-03-01T12:00:00Z).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any

import anyio
import pytest
from _fixtures import ScriptedLlm

from oam_core.errors import NotFoundError
from oam_core.memory.client import OracleAgentMemory
from oam_core.store.options import MemoryRetentionConfig, SearchStrategy

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
"""The conformance ``clock`` fixture's start time."""
SCOPE = {"user_id": "alice", "agent_id": "helper"}


def _client(make_store: Any, **retention: int) -> OracleAgentMemory:
    store = make_store(
        search_strategy=SearchStrategy.KEYWORD,
        memory_retention_config=MemoryRetentionConfig(**retention),
    )
    return OracleAgentMemory(store=store, extract_memories=False)


def _expiry(mem: OracleAgentMemory, memory_id: str) -> datetime | None:
    record = mem.store.get("memory", memory_id)
    assert record is not None
    return None if record.expires_at is None else datetime.fromisoformat(record.expires_at)


def test_a_correction_keeps_never_expiring_and_the_same_expiry_under_a_default_ttl(
    make_store: Any, clock: Any
) -> None:
    mem = _client(make_store, default_ttl_days=30)
    keep = mem.add_memory("Alice is allergic to penicillin", **SCOPE, ttl_days=None)
    brief = mem.add_memory("Alice is at the airport today", **SCOPE, ttl_days=1)
    assert _expiry(mem, keep) is None
    assert _expiry(mem, brief) == START + timedelta(days=1)
    clock.advance(hours=1)
    keep2 = mem.update_memory(keep, "Alice is allergic to penicillin and latex", reason="more")
    brief2 = mem.update_memory(brief, "Alice is at the airport today, gate B4", reason="gate")
    assert _expiry(mem, keep2) is None
    assert _expiry(mem, brief2) == START + timedelta(days=1)
    assert mem.store.get("memory", keep2).valid_from is not None  # a real new version

    clock.advance(days=31)  # past the default TTL counted from the correction
    found = [r.id for r, _ in mem.search("Alice allergic airport", user_id="alice", k=5)]
    assert found == [keep2]
    assert mem.store.purge_expired() == 2  # the 1-day memory's two versions
    assert [r.id for r in mem.get_memory_history(keep2)] == [keep, keep2]


def test_a_correction_without_a_retention_config_keeps_a_finite_expiry(
    make_store: Any, clock: Any
) -> None:
    mem = _client(make_store)
    brief = mem.add_memory("Alice is at the airport today", **SCOPE, ttl_days=1)
    forever = mem.add_memory("Alice was born in Porto", **SCOPE)
    clock.advance(hours=2)
    brief2 = mem.update_memory(brief, "Alice is at the airport today, gate B4")
    forever2 = mem.update_memory(forever, "Alice was born in Porto, in 1990")
    assert _expiry(mem, brief2) == START + timedelta(days=1)
    assert _expiry(mem, forever2) is None
    clock.advance(days=1)
    assert mem.store.get("memory", brief2) is None
    assert mem.store.get("memory", forever2) is not None


def test_a_correction_keeps_the_expiry_of_a_planned_version_and_of_a_chain(
    make_store: Any, clock: Any
) -> None:
    mem = _client(make_store, default_ttl_days=30, max_ttl_days=400)
    first = mem.add_memory("Ana lives in Lisbon", **SCOPE, ttl_days=200)
    clock.advance(days=1)
    later = mem.update_memory(first, "Ana lives in Berlin", valid_from=START + timedelta(days=90))
    clock.advance(days=1)
    fixed = mem.update_memory(
        later, "Ana lives in Berlin, Mitte", valid_from=START + timedelta(days=91)
    )
    for version in (first, later, fixed):
        assert _expiry(mem, version) == START + timedelta(days=200)


def test_the_store_update_still_changes_a_corrected_memory_s_ttl(
    make_store: Any, clock: Any
) -> None:
    mem = _client(make_store, default_ttl_days=30)
    keep = mem.add_memory("Alice likes tea", **SCOPE, ttl_days=None)
    keep2 = mem.update_memory(keep, "Alice likes green tea")
    assert mem.store.update("memory", keep2, ttl_days=5) == 1
    assert _expiry(mem, keep2) == START + timedelta(days=5)


_SHOWN = re.compile(r'<memory id="([^"]+)" type="(\w+)"[^>]*>([^<]*)</memory>')


def _update_reply(prompt: str, schema: Any) -> str:
    """Replace the shown "Ana lives in Lisbon" (UPDATE) and add a new memory (ADD)."""
    ids = {text: memory_id for memory_id, _, text in _SHOWN.findall(prompt)}
    common = {"record_type": "fact", "timestamp": None, "valid_from": None, "reason": "moved"}
    return json.dumps(
        {
            "memories": [
                {
                    **common,
                    "decision": "UPDATE",
                    "target_id": ids["Ana lives in Lisbon"],
                    "text": "Ana lives in Berlin",
                },
                {**common, "decision": "ADD", "target_id": None, "text": "Ana has a cat"},
            ]
        }
    )


@pytest.mark.parametrize("kept", [None, 3], ids=["never-expires", "3-days"])
def test_an_extraction_update_keeps_its_target_s_expiry_and_an_add_takes_the_default(
    make_store: Any, clock: Any, kept: int | None
) -> None:
    store = make_store(memory_retention_config=MemoryRetentionConfig(default_ttl_days=30))
    client = OracleAgentMemory(store=store, llm=ScriptedLlm(extraction=[_update_reply]))
    lisbon = client.add_memory(
        "Ana lives in Lisbon", user_id="ana", agent_id="helper", ttl_days=kept
    )
    clock.advance(hours=1)
    thread = client.create_thread(thread_id="t1", user_id="ana", agent_id="helper")
    thread.add_messages([{"role": "user", "content": "I moved to Berlin and got a cat"}])
    client.wait_for_memory_extraction(timeout=30)
    stored = {r.content: r for r in store.list("fact")}
    berlin, cat = stored["Ana lives in Berlin"], stored["Ana has a cat"]
    assert berlin.metadata["$agent_memory"]["supersedes"] == [lisbon]
    expected = None if kept is None else START + timedelta(days=kept)
    assert (berlin.expires_at and datetime.fromisoformat(berlin.expires_at)) == expected
    assert cat.expires_at is not None
    assert datetime.fromisoformat(cat.expires_at) == START + timedelta(hours=1, days=30)


def test_an_expired_memory_is_unknown_to_invalidate_update_and_history(
    make_store: Any, clock: Any
) -> None:
    mem = _client(make_store)
    gone = mem.add_memory("Alice is at the airport today", **SCOPE, ttl_days=1)
    clock.advance(days=2)
    for call in (
        lambda: mem.invalidate_memory(gone, reason="left"),
        lambda: mem.invalidate_memory(gone, valid_until=START + timedelta(days=3)),
        lambda: mem.update_memory(gone, "Alice is home"),
        lambda: mem.get_memory_history(gone),
    ):
        with pytest.raises(NotFoundError, match="no memory has id"):
            call()
    # nothing was written: refreshing its TTL shows it unchanged (docs/store.md#ttl-and-retention)
    assert mem.store.update("memory", gone, ttl_days=10) == 1
    record = mem.store.get("memory", gone)
    assert record is not None and record.valid_until is None
    assert "$agent_memory" not in (record.metadata or {})
    assert mem.invalidate_memory(gone, reason="left") is True
    assert mem.invalidate_memory(gone) is False
    assert mem.delete_memory(gone) == 1


def test_invalidate_async_of_an_expired_memory_raises_not_found(
    make_store: Any, clock: Any
) -> None:
    mem = _client(make_store)
    gone = mem.add_memory("Alice is at the airport today", **SCOPE, ttl_days=1)
    clock.advance(days=1)  # the expiry instant itself: expired

    async def scenario() -> None:
        with pytest.raises(NotFoundError):
            await mem.invalidate_memory_async(gone)

    anyio.run(scenario)
