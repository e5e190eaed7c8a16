"""The chat's extraction pass never changes a LangGraph item (trial 42 f11;
docs/memory-pipeline.md#records-managed-by-their-writer): ``OAMStore`` with
``agent_index`` puts items as memories of the user and agent that the same client's
chat history writes turns for, so the pass shows them to its model; the item's
managed mark keeps an ``UPDATE`` from replacing it (the new text is stored beside it)
and a ``DELETE`` from ending it. ``store.get`` and ``search`` still return the item
as the graph put it, on a SQLite file and on PostgreSQL.

The LLM is a hand-written ``ILlm`` that answers ``UPDATE`` or ``DELETE`` on the
item, as a model does for "My favourite colour is blue now." when shown the item:
what is tested is the decision rule applied to such a reply (no cassette: a small
model's choice of decision is not what this test is about).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_oam import OAMChatMessageHistory, OAMStore
from langchain_oam.store import record_id

from oam_core import OracleAgentMemory
from oam_core.apis.llm import ILlm
from oam_core.memory.diagnostics import MemoryPipelineWarning

NS = ("memories", "alice", "helper")
GREEN = {"text": "Alice's favourite colour is green"}
ITEM_ID = record_id(NS, "colour")


class DecidingLlm(ILlm):
    """Answers the extraction prompt with one ``decision`` on the item's record
    (asserting the prompt offered it as a target) and anything else with a summary."""

    def __init__(self, decision: str) -> None:
        self.decision = decision
        self.prompts: list[str] = []

    def generate(self, prompt: str, *, response_json_schema: dict[str, Any] | None = None) -> str:
        self.prompts.append(prompt)
        properties = (response_json_schema or {}).get("properties", {})
        if "memories" not in properties:
            return json.dumps({"summary": "Alice talked about colours.", "topics": ["colour"]})
        shapes = properties["memories"]["items"]["anyOf"]
        assert ITEM_ID in shapes[0]["properties"]["target_id"]["enum"]
        text = "Alice's favourite colour is blue" if self.decision == "UPDATE" else ""
        item = {
            "reason": "the colour changed",
            "decision": self.decision,
            "target_id": ITEM_ID,
            "text": text,
            "record_type": "memory",
            "timestamp": None,
            "valid_from": None,
        }
        return json.dumps({"memories": [item]})


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'lg-chat.db'}"
    found: str = request.getfixturevalue("pg_url")
    return found


@pytest.fixture(params=["UPDATE", "DELETE"])
def llm(request: pytest.FixtureRequest) -> DecidingLlm:
    return DecidingLlm(request.param)


@pytest.fixture
def memory(url: str, llm: DecidingLlm) -> Iterator[OracleAgentMemory]:
    client = OracleAgentMemory.open(url, embedder="hashing/64", llm=llm, extract_memories=True)
    try:
        yield client
    finally:
        client.close()


def test_a_chat_turn_never_changes_or_ends_a_langgraph_item(
    memory: OracleAgentMemory, llm: DecidingLlm
) -> None:
    store = OAMStore(memory, index={"fields": ["text"]}, user_index=1, agent_index=2)
    store.put(NS, "colour", GREEN)
    history = OAMChatMessageHistory(memory, "session-1", user_id="alice", agent_id="helper")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MemoryPipelineWarning)
        history.add_messages(
            [HumanMessage("My favourite colour is blue now."), AIMessage("Noted!")]
        )
        assert memory.wait_for_memory_extraction(30)
    said = [str(w.message) for w in caught if w.category is MemoryPipelineWarning]
    # the prompt showed the item, so the model knows the fact ...
    assert any("Alice's favourite colour is green" in p for p in llm.prompts)
    # ... and its decision on the item was refused, naming why
    if llm.decision == "UPDATE":
        label, outcome = repr("Alice's favourite colour is blue"), "stored as a new memory (ADD)"
    else:
        label, outcome = "without text", "ignored"
    assert said == [
        f"extraction reply item {label}: {llm.decision} names target_id {ITEM_ID!r}, "
        "which is managed by the application that wrote it; " + outcome
    ]
    item = store.get(NS, "colour")
    assert item is not None and item.value == GREEN
    assert [(i.key, i.value) for i in store.search(NS)] == [("colour", GREEN)]
    ranked = store.search(NS, query="favourite colour")
    assert [(i.key, i.value) for i in ranked] == [("colour", GREEN)]
    # never superseded nor ended: its history is itself
    assert [r.id for r in memory.get_memory_history(ITEM_ID)] == [ITEM_ID]
    found = memory.search(
        "favourite colour", user_id="alice", agent_id="helper", k=10, record_types={"memory"}
    )
    new = ["Alice's favourite colour is blue"] if llm.decision == "UPDATE" else []
    assert sorted(r.content for r, _ in found) == sorted([GREEN["text"], *new])
