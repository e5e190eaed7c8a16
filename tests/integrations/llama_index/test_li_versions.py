"""The LlamaIndex adapters read current memories only (docs/versions.md,
docs/llama_index.md#versions-of-a-memory): a memory replaced by ``update_memory`` or
ended by ``invalidate_memory`` is not returned by ``OAMVectorStore.query`` nor shown
in ``OAMMemoryBlock``'s card, and k results come back when k current ones exist."""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET

from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index_oam import OAMMemoryBlock, OAMVectorStore

from oam_core import OracleAgentMemory


def _memory() -> OracleAgentMemory:
    return OracleAgentMemory(connection=":memory:", embedder="hashing/64", extract_memories=False)


def test_a_vector_store_query_returns_k_current_nodes() -> None:
    with _memory() as memory:
        old = memory.add_memory("The office is in Lisbon near the river")
        for n in range(6):
            old = memory.update_memory(old, f"The office is in Lisbon near the river, floor {n}")
        current = memory.update_memory(old, "The office is in Porto", reason="moved")
        cafe = memory.add_memory("The cafe near the river in Lisbon")
        vs = OAMVectorStore(memory.store)
        query = VectorStoreQuery(query_str="office in Lisbon near the river", similarity_top_k=2)
        found = vs.query(query)
        assert found.ids is not None and sorted(found.ids) == sorted([current, cafe])
        memory.invalidate_memory(cafe, reason="closed")
        again = asyncio.run(vs.aquery(query))
        assert again.ids == [current]


def test_the_memory_block_card_shows_no_superseded_memory() -> None:
    with _memory() as memory:
        block = OAMMemoryBlock(memory, user_id="u1", agent_id="a1", max_relevant_results=2)
        asyncio.run(block.aput([ChatMessage(role="user", content="hello")], session_id="s1"))
        old = memory.add_memory("The user's dog is called Rex", user_id="u1", agent_id="a1")
        new = memory.update_memory(old, "The user's dog is called Max", reason="new dog")
        question = [ChatMessage(role="user", content="what is my dog called, Rex?")]
        card = asyncio.run(block.aget(question, session_id="s1"))
        relevant = [
            e.findtext("content") for e in ET.fromstring(card).find("relevant_information") or []
        ]
        assert "The user's dog is called Max" in relevant
        assert "The user's dog is called Rex" not in relevant
        assert memory.get_memory_history(new)[0].id == old
