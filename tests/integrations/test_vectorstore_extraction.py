"""The chat's extraction pass never changes a document of a framework vector store
(trial 42 f12; docs/memory-pipeline.md#records-managed-by-their-writer): a LangChain or
LlamaIndex ``OAMVectorStore`` scoped to the user and agent that the same client's chat
writes turns for holds its documents as memories the pass shows to its model; their
managed mark keeps an ``UPDATE`` from replacing one (the new text is stored beside
it) and a ``DELETE`` from ending it, on a SQLite file and on PostgreSQL. The LLM is
``tests/integrations/_deciding.py``'s hand-written reply (the decision rule is what is
tested).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.messages import AIMessage, HumanMessage
from langchain_oam import OAMChatMessageHistory
from langchain_oam import OAMVectorStore as LangChainStore
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index_oam import OAMVectorStore as LlamaIndexStore

from oam_core import OracleAgentMemory
from oam_core.memory.diagnostics import MemoryPipelineWarning
from tests.integrations._deciding import DecidingLlm

DOC_ID = "handbook-p1"
DOC = "Holiday allowance is 25 days per year."
NEW = "Holiday allowance is 30 days"
SCOPE = {"user_id": "ada", "agent_id": "helper"}


def _langchain(memory: OracleAgentMemory) -> Callable[[], list[tuple[str, str, dict]]]:
    vs = LangChainStore(DeterministicFakeEmbedding(size=64), store=memory.store, **SCOPE)
    vs.add_texts([DOC], metadatas=[{"source": "handbook.pdf"}], ids=[DOC_ID])

    def read() -> list[tuple[str, str, dict]]:
        return [(d.id or "", d.page_content, d.metadata) for d in vs.get_by_ids([DOC_ID])]

    return read


def _llama_index(memory: OracleAgentMemory) -> Callable[[], list[tuple[str, str, dict]]]:
    vs = LlamaIndexStore(memory.store, **SCOPE)
    vs.add([TextNode(id_=DOC_ID, text=DOC, metadata={"source": "handbook.pdf"})])

    def read() -> list[tuple[str, str, dict]]:
        return [(n.node_id, n.get_content(), n.metadata) for n in vs.get_nodes([DOC_ID])]

    return read


@pytest.fixture(params=["UPDATE", "DELETE"])
def llm(request: pytest.FixtureRequest) -> DecidingLlm:
    return DecidingLlm(request.param, DOC_ID, NEW)


@pytest.fixture
def memory(url: str, llm: DecidingLlm) -> Iterator[OracleAgentMemory]:
    with llm.client(url) as client:
        yield client


@pytest.mark.parametrize("adapter", [_langchain, _llama_index], ids=["langchain", "llama_index"])
def test_a_chat_turn_never_changes_or_ends_a_vector_store_document(
    memory: OracleAgentMemory,
    llm: DecidingLlm,
    adapter: Callable[[OracleAgentMemory], Callable[[], list[tuple[str, str, dict]]]],
) -> None:
    read = adapter(memory)
    before = read()
    assert [(i, t) for i, t, _ in before] == [(DOC_ID, DOC)]
    assert before[0][2]["source"] == "handbook.pdf"
    history = OAMChatMessageHistory(memory, "session-1", **SCOPE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MemoryPipelineWarning)
        history.add_messages(
            [
                HumanMessage("My manager says the holiday allowance is now 30 days."),
                AIMessage("Ok."),
            ]
        )
        assert memory.wait_for_memory_extraction(30)
    assert any(DOC in p for p in llm.prompts)
    said = [str(w.message) for w in caught if w.category is MemoryPipelineWarning]
    assert said == [llm.outcome]
    assert read() == before
    assert [r.id for r in memory.get_memory_history(DOC_ID)] == [DOC_ID]
    found = memory.search("holiday allowance", k=10, record_types={"memory"}, **SCOPE)
    new = [NEW] if llm.decision == "UPDATE" else []
    assert sorted(r.content for r, _ in found) == sorted([DOC, *new])


def test_the_llama_index_store_reads_nodes_without_the_mark(tmp_path: Path) -> None:
    with OracleAgentMemory.open(
        f"sqlite:///{tmp_path / 'n.db'}", embedder="hashing/64", extract_memories=False
    ) as memory:
        vs = LlamaIndexStore(memory.store, **SCOPE)
        vs.add([TextNode(id_=DOC_ID, text=DOC, metadata={"source": "handbook.pdf"})])
        (node,) = vs.get_nodes([DOC_ID])
        assert node.metadata == {"source": "handbook.pdf"}
        vector = memory.store.embedder.embed([DOC], is_query=True)[0].tolist()
        hits = vs.query(VectorStoreQuery(query_embedding=vector, similarity_top_k=1)).nodes
        assert hits is not None and [n.metadata for n in hits] == [{"source": "handbook.pdf"}]
        stored = memory.store.get("memory", DOC_ID)
        assert stored is not None and stored.metadata["$agent_memory"] == {"managed": True}
