"""langchain-tests' standard suites against the adapters (issues 4 and 13).

``VectorStoreIntegrationTests`` runs over: the default in-memory store (the store
embeds with the suite's ``DeterministicFakeEmbedding``), a real SQLite file whose
store has no embedder (the adapter embeds and passes vectors), a KEYWORD store and a
HYBRID store on SQLite files, and a PostgreSQL store opened with ``connection=`` on a
fresh database. ``RetrieversIntegrationTests`` runs over a memory client on SQLite
(VECTOR, KEYWORD and HYBRID) and on PostgreSQL. Nothing is overridden or marked
xfail; on the KEYWORD store the tests that expect documents without a query term in
common to be ranked are skipped (``KEYWORD_SKIPS``, with the reason), by the
collection hook in ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import _pg  # the conformance suite's PostgreSQL server (tests/integrations/conftest.py)
import pytest
from langchain_core.vectorstores import VectorStore
from langchain_oam import OAMRetriever, OAMVectorStore
from langchain_oam.embeddings import LangChainEmbedder
from langchain_tests.integration_tests import (
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder

KEYWORD_REASON = (
    "a KEYWORD store ranks text by its terms (BM25): a document sharing no term with "
    "the query is never a result, while this test expects it ranked below the match"
)
KEYWORD_SKIPS = {
    f"TestOAMVectorStoreKeyword::{name}": KEYWORD_REASON
    for name in (
        "test_add_documents",
        "test_add_documents_async",
        "test_add_documents_by_id_with_mutation",
        "test_add_documents_by_id_with_mutation_async",
        "test_add_documents_with_ids_is_idempotent",
        "test_add_documents_with_ids_is_idempotent_async",
        "test_deleting_documents",
        "test_deleting_documents_async",
        "test_deleting_bulk_documents",
        "test_deleting_bulk_documents_async",
    )
}
"""Standard tests skipped on the KEYWORD store: node id -> reason."""


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


class TestOAMVectorStoreKeyword(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, tmp_path: Path) -> Iterator[VectorStore]:
        db = SQLiteMemoryStore(tmp_path / "kw.db", search_strategy="KEYWORD")
        store = OAMVectorStore(self.get_embeddings(), store=db)
        try:
            yield store
        finally:
            db.close()


class TestOAMVectorStoreHybrid(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, tmp_path: Path) -> Iterator[VectorStore]:
        db = SQLiteMemoryStore(
            tmp_path / "hy.db",
            embedder=LangChainEmbedder(self.get_embeddings()),
            search_strategy="HYBRID",
        )
        store = OAMVectorStore(self.get_embeddings(), store=db)
        try:
            yield store
        finally:
            db.close()


class TestOAMVectorStorePostgres(VectorStoreIntegrationTests):
    @pytest.fixture
    def vectorstore(self, pg_url: str) -> Iterator[VectorStore]:
        store = OAMVectorStore(self.get_embeddings(), connection=pg_url)
        try:
            yield store
        finally:
            store.close()


_MEMORY: OracleAgentMemory | None = None


FACTS = (
    "Alice's dog is called Biscuit.",
    "Alice flies to Lisbon in May.",
    "Alice prefers tea over coffee.",
    "Alice works as a nurse.",
    "Alice's sister lives in Oslo.",
)


def _filled(client: OracleAgentMemory) -> OracleAgentMemory:
    for text in FACTS:
        client.add_memory(text, user_id="u1")
    return client


def _memory() -> OracleAgentMemory:
    """One client with five memories of user u1, shared by the retriever suite."""
    global _MEMORY
    if _MEMORY is None:
        store = SQLiteMemoryStore(":memory:", embedder=HashingEmbedder(64))
        _MEMORY = _filled(OracleAgentMemory(store=store, extract_memories=False))
    return _MEMORY


class _RetrieverSuite(RetrieversIntegrationTests):
    """The retriever suite over the client ``client()`` gives (properties only: the
    standard tests themselves are never overridden)."""

    def client(self) -> OracleAgentMemory:
        return _memory()

    @property
    def retriever_constructor(self) -> type[OAMRetriever]:
        return OAMRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        return {"memory": self.client(), "user_id": "u1"}

    @property
    def retriever_query_example(self) -> str:
        return "What is Alice's dog called?"


class TestOAMRetrieverStandard(_RetrieverSuite):
    pass


_CLIENTS: dict[str, OracleAgentMemory] = {}


def _client(kind: str) -> OracleAgentMemory:
    """A client per configuration holding ``FACTS`` (made once per session)."""
    if kind not in _CLIENTS:
        if kind == "postgres":
            url = _pg.conninfo_for(_pg.new_schema())
            client = OracleAgentMemory(
                connection=url,
                embedder=HashingEmbedder(64),
                extract_memories=False,
                schema_policy="CREATE_IF_NECESSARY",
            )
        else:
            store = SQLiteMemoryStore(
                ":memory:", embedder=HashingEmbedder(64), search_strategy=kind.upper()
            )
            client = OracleAgentMemory(store=store, extract_memories=False)
        _CLIENTS[kind] = _filled(client)
    return _CLIENTS[kind]


class TestOAMRetrieverKeyword(_RetrieverSuite):
    def client(self) -> OracleAgentMemory:
        return _client("keyword")


class TestOAMRetrieverHybrid(_RetrieverSuite):
    def client(self) -> OracleAgentMemory:
        return _client("hybrid")


class TestOAMRetrieverPostgres(_RetrieverSuite):
    def client(self) -> OracleAgentMemory:
        try:
            return _client("postgres")
        except _pg.ServerUnavailable as exc:
            pytest.skip(str(exc))
