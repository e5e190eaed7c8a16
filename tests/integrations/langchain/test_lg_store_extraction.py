"""The chat's extraction pass never changes a LangGraph item (trial 42 f11;
docs/memory-pipeline.md#records-managed-by-their-writer): ``OAMStore`` with
``agent_index`` puts items as memories of the user and agent that the same client's
chat history writes turns for, so the pass shows them to its model; the item's
managed mark keeps an ``UPDATE`` from replacing it (the new text is stored beside it)
and a ``DELETE`` from ending it. ``store.get`` and ``search`` still return the item
as the graph put it, on a SQLite file and on PostgreSQL.

The LLM is a hand-written ``ILlm`` (``tests/integrations/_deciding.py``) that answers
``UPDATE`` or ``DELETE`` on the item, as a model does for "My favourite colour is blue
now." when shown the item: what is tested is the decision rule applied to such a reply.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langchain_oam import OAMChatMessageHistory, OAMStore
from langchain_oam.store import record_id

from oam_core import OracleAgentMemory
from oam_core.memory.diagnostics import MemoryPipelineWarning
from tests.integrations._deciding import DecidingLlm

NS = ("memories", "alice", "helper")
GREEN = {"text": "Alice's favourite colour is green"}
ITEM_ID = record_id(NS, "colour")


@pytest.fixture(params=["UPDATE", "DELETE"])
def llm(request: pytest.FixtureRequest) -> DecidingLlm:
    return DecidingLlm(request.param, ITEM_ID, "Alice's favourite colour is blue")


@pytest.fixture
def memory(url: str, llm: DecidingLlm) -> Iterator[OracleAgentMemory]:
    with llm.client(url) as client:
        yield client


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
    assert said == [llm.outcome]
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
