"""langchain-tests' standard suites against the adapters (issue 4, item 5).

``VectorStoreIntegrationTests`` runs twice: over the default in-memory store (the
store embeds with the suite's ``DeterministicFakeEmbedding``) and over a real SQLite
file whose store has no embedder (the adapter embeds and passes vectors).
``RetrieversIntegrationTests`` runs over a memory client holding a few memories.
Nothing is overridden, skipped or marked xfail.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.vectorstores import VectorStore
from langchain_oam import OAMRetriever, OAMVectorStore
from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder


class TestOAMVectorStoreInMemory(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self) -> Iterator[VectorStore]:
        store = OAMVectorStore(self.get_embeddings())
        try:
            yield store
        finally:
            store.close()


class TestOAMVectorStoreSQLiteFile(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, tmp_path: Path) -> Iterator[VectorStore]:
        db = SQLiteMemoryStore(tmp_path / "vs.db")
        store = OAMVectorStore(self.get_embeddings(), store=db, user_id="u1")
        try:
            yield store
        finally:
            db.close()


_MEMORY: OracleAgentMemory | None = None


def _memory() -> OracleAgentMemory:
    """One client with five memories of user u1, shared by the retriever suite."""
    global _MEMORY
    if _MEMORY is None:
        store = SQLiteMemoryStore(":memory:", embedder=HashingEmbedder(64))
        client = OracleAgentMemory(store=store, extract_memories=False)
        for text in (
            "Alice's dog is called Biscuit.",
            "Alice flies to Lisbon in May.",
            "Alice prefers tea over coffee.",
            "Alice works as a nurse.",
            "Alice's sister lives in Oslo.",
        ):
            client.add_memory(text, user_id="u1")
        _MEMORY = client
    return _MEMORY


class TestOAMRetrieverStandard(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[OAMRetriever]:
        return OAMRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": _memory(), "user_id": "u1"}

    @property
    def retriever_query_example(self) -> str:
        return "What is Alice's dog called?"
