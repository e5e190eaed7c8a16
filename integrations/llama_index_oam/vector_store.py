"""``OAMVectorStore``: a LlamaIndex vector store over an ``oam`` memory store.

Nodes are memory-like records of one ``record_type`` in an optional user / agent /
thread scope (SPEC §2-§3); search is the store's own ``search`` (SPEC §3.5) with the
LlamaIndex filters compiled by ``filters.py`` onto the SPEC §4 language.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from llama_index_oam._util import check_scope_id, in_thread
from llama_index_oam.filters import Branch, CompiledFilter, compile_filters, equals_any
from llama_index_oam.nodes import REF_DOC_KEY, node_to_row, record_to_node
from oam_core import NOT_SET, OracleAgentMemory, OracleMemoryStore, PendingRecordBatch, Record
from oam_core.apis.records import MEMORY_TYPES
from oam_core.store.options import SearchStrategy

_FETCH_GROWTH = 4


class OAMVectorStore(BasePydanticVectorStore):
    """LlamaIndex ``BasePydanticVectorStore`` backed by an ``OracleMemoryStore``.

    Every node is one record of ``record_type`` (``stores_text=True``: the text lives in
    the record, so ``VectorStoreIndex.from_vector_store(store)`` needs no docstore).
    A node's own ``embedding`` is stored as given (one vector for its whole retrieval
    text, SPEC §3.1); a node without one is embedded by the store's embedder. Scores
    are ``1 - distance``: cosine similarity for VECTOR search, the normalized score for
    KEYWORD and HYBRID (SPEC §3.5).

    Args:
        store: The store to use (not closed by ``close``).
        connection: Instead of ``store``: where to open one, as
            ``OracleAgentMemory(connection=...)`` accepts (a SQLite path,
            ``":memory:"``, a ``sqlite:///`` URL, ...); opened without an embedder, so
            nodes must carry embeddings, and closed by ``close``.
        record_type: ``memory``, ``guideline``, ``fact`` or ``preference``.
        user_id, agent_id, thread_id: Scope: written on every added node and, where
            given, required (exact match) by every read, search and delete; ``None``
            leaves that dimension unscoped on writes and unconstrained on reads.

    Raises:
        ValueError: when both or neither of ``store`` and ``connection`` are given,
            ``store`` is not an ``OracleMemoryStore``, ``record_type`` is not
            memory-like, or a scope id is not a non-blank string.
    """

    stores_text: bool = True
    flat_metadata: bool = False
    record_type: str = "memory"
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None

    _store: OracleMemoryStore = PrivateAttr()
    _opened: OracleAgentMemory | None = PrivateAttr(default=None)

    def __init__(
        self,
        store: OracleMemoryStore | None = None,
        *,
        connection: Any = None,
        record_type: str = "memory",
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
    ) -> None:
        if (store is None) == (connection is None):
            raise ValueError("give exactly one of store and connection")
        if store is not None and not isinstance(store, OracleMemoryStore):
            raise ValueError(f"store must be an OracleMemoryStore, got {type(store).__name__}")
        if record_type not in MEMORY_TYPES:
            raise ValueError(
                f"record_type must be one of {sorted(MEMORY_TYPES)}, got {record_type!r}"
            )
        fields: dict[str, Any] = {
            "stores_text": True,
            "record_type": record_type,
            "user_id": check_scope_id("user_id", user_id),
            "agent_id": check_scope_id("agent_id", agent_id),
            "thread_id": check_scope_id("thread_id", thread_id),
        }
        super().__init__(**fields)
        if store is None:
            self._opened = OracleAgentMemory(connection=connection, extract_memories=False)
            store = self._opened.store
        self._store = store
        # A KEYWORD store ranks query text: LlamaIndex then needs no embed model.
        self.is_embedding_query = store.search_strategy is not SearchStrategy.KEYWORD

    @classmethod
    def class_name(cls) -> str:
        """The LlamaIndex component name."""
        return "OAMVectorStore"

    @property
    def client(self) -> OracleMemoryStore:
        """The underlying ``OracleMemoryStore``."""
        return self._store

    def close(self) -> None:
        """Close the store if this object opened it (``connection=``)."""
        if self._opened is not None:
            self._opened.close()

    # -- scope --------------------------------------------------------------------

    def _scope(self) -> dict[str, str]:
        return {
            name: value
            for name, value in (
                ("thread_id", self.thread_id),
                ("user_id", self.user_id),
                ("agent_id", self.agent_id),
            )
            if value is not None
        }

    def _in_scope(self, record: Record) -> bool:
        return record.record_type == self.record_type and all(
            getattr(record, name) == value for name, value in self._scope().items()
        )

    # -- writes -------------------------------------------------------------------

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Store ``nodes`` in one transaction; return their ids in order.

        Args:
            nodes: Nodes with or without ``embedding``; ids must be new.
            **add_kwargs: Store write options (``ttl_days``, ``ttl_anchor``,
                ``batch_size``), passed to ``OracleMemoryStore.add_batches``.

        Raises:
            ValueError: for a node id already stored or repeated (SPEC §2), a node
                without embedding when the store has no embedder and searches by
                vector, vectors of the wrong dimension, or non-JSON metadata;
                nothing is written then.
        """
        nodes = list(nodes)
        if not nodes:
            return []
        store = self._store
        with_vec = [n for n in nodes if n.embedding is not None]
        without = [n for n in nodes if n.embedding is None]
        if (
            without
            and store.embedder is None
            and store.search_strategy is not SearchStrategy.KEYWORD
        ):
            raise ValueError(
                f"node {without[0].node_id!r} has no embedding and the store has no "
                "embedder, so vector search could never find it: give nodes embeddings "
                "(e.g. through VectorStoreIndex's embed_model) or configure the store's embedder"
            )
        batches = []
        if with_vec:
            batches.append(self._batch(with_vec, with_embeddings=True))
        if without:
            batches.append(self._batch(without, with_embeddings=False))
        store.add_batches(batches, **add_kwargs)
        return [n.node_id for n in nodes]

    def _batch(self, nodes: list[BaseNode], *, with_embeddings: bool) -> PendingRecordBatch:
        rows = [node_to_row(n) for n in nodes]
        scope = self._scope()
        return PendingRecordBatch(
            texts=[content for content, _, _ in rows],
            record_type=self.record_type,
            index_texts=[retrieval for _, retrieval, _ in rows],
            embeddings=[list(n.embedding or []) for n in nodes] if with_embeddings else NOT_SET,
            record_ids=[n.node_id for n in nodes],
            thread_ids=scope.get("thread_id", NOT_SET),
            user_ids=scope.get("user_id", NOT_SET),
            agent_ids=scope.get("agent_id", NOT_SET),
            metadata=[meta for _, _, meta in rows],
        )

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of this store's scope whose source document is ``ref_doc_id``.

        Raises:
            ValueError: for a non-string or blank ``ref_doc_id``.
        """
        if not isinstance(ref_doc_id, str) or not ref_doc_id.strip():
            raise ValueError(f"ref_doc_id must be a non-blank str, got {ref_doc_id!r}")
        self._delete_records(self._select(None, equals_any(REF_DOC_KEY, [ref_doc_id])))

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete the nodes that have one of ``node_ids`` (if given) and match ``filters``.

        ``node_ids=[]`` is no id restriction, as in ``get_nodes``; but a call that would
        select everything (no ids and no effective filter) deletes nothing: ``[]``
        deletes nothing, and ``None`` with no filter is an error (use ``clear``).

        Raises:
            ValueError: when neither ``node_ids`` nor a filter is given, or for a filter
                that cannot be compiled (``UnsupportedFilterError``).
        """
        compiled = compile_filters(filters)
        if not node_ids and compiled.is_unfiltered:
            if node_ids is None:
                raise ValueError(
                    "delete_nodes needs node_ids or a non-empty filter; call clear() to "
                    "delete every node"
                )
            return
        self._delete_records(self._select(node_ids or None, compiled))

    def clear(self) -> None:
        """Delete every node of this store's record type and scope."""
        self._delete_records(self._select(None, CompiledFilter.everything()))

    def _delete_records(self, records: list[Record]) -> None:
        """Delete ``records`` (all of this store's type) in one transaction."""
        self._store.delete_records(self.record_type, [r.id for r in records])

    # -- reads --------------------------------------------------------------------

    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """Nodes of this store's scope with one of ``node_ids`` (``None`` or ``[]``: any
        id) that match ``filters``; in ``node_ids`` order, else oldest first.

        Raises:
            ValueError: for a filter that cannot be compiled (``UnsupportedFilterError``).
        """
        records = self._select(node_ids or None, compile_filters(filters))
        return [record_to_node(r) for r in records]

    def _select(self, node_ids: list[str] | None, compiled: CompiledFilter) -> list[Record]:
        if node_ids is not None:
            found = (self._store.get(self.record_type, i) for i in dict.fromkeys(node_ids))
            return [
                r
                for r in found
                if r is not None and self._in_scope(r) and compiled.matches(r.metadata)
            ]
        seen: dict[str, Record] = {}
        for branch in compiled.branches:
            rows = self._store.list(
                self.record_type,
                limit=None,
                metadata_filter=branch.pushed if branch.pushed else NOT_SET,
                **self._scope(),
            )
            for r in rows:
                if r.id not in seen and branch.matches(r.metadata):
                    seen[r.id] = r
        records = list(seen.values())
        if len(compiled.branches) > 1:
            records.sort(key=lambda r: r.created_at or "")
        return records

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Top ``similarity_top_k`` nodes for the query.

        What is ranked follows the store's ``search_strategy`` (SPEC §3.5): VECTOR
        uses ``query_embedding`` (else ``query_str``, embedded by the store); KEYWORD
        uses ``query_str``; HYBRID uses ``query_str`` when the store has an embedder
        (else ``query_embedding``, vector ranking only).

        ``query.filters``, ``doc_ids`` and ``node_ids`` (``[]`` = no restriction)
        restrict the candidates before the top-k cut. A filter with OR branches runs
        one search per branch and merges them by distance: exact for vector ranking,
        where a record's distance does not depend on the filter; for KEYWORD and
        HYBRID the distances are normalized per search, so the order *across*
        branches is approximate (each branch's own order is exact).

        Raises:
            ValueError: for a query mode other than DEFAULT (the store's
                ``search_strategy`` decides how text is ranked), a query with neither
                embedding nor text, an uncompilable filter, or whatever the store
                rejects (wrong vector dimension, text query without embedder, ...).
        """
        if query.mode != VectorStoreQueryMode.DEFAULT:
            raise ValueError(
                f"query mode {query.mode.value!r} is not supported; OAMVectorStore ranks with "
                "its store's search_strategy (VECTOR, KEYWORD or HYBRID) in DEFAULT mode"
            )
        k = query.similarity_top_k
        compiled = compile_filters(query.filters)
        if query.doc_ids:
            compiled = compiled.restrict(equals_any(REF_DOC_KEY, query.doc_ids))
        if k < 1 or not compiled.branches:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        target = self._target(query)
        wanted = set(query.node_ids) if query.node_ids else None
        best: dict[str, tuple[Record, float]] = {}
        for branch in compiled.branches:
            for record, distance in self._search_branch(branch, k, wanted, target):
                if record.id not in best or distance < best[record.id][1]:
                    best[record.id] = (record, distance)
        ranked = sorted(best.values(), key=lambda rd: (rd[1], rd[0].record_type, rd[0].id))[:k]
        return VectorStoreQueryResult(
            nodes=[record_to_node(r) for r, _ in ranked],
            similarities=[1.0 - d for _, d in ranked],
            ids=[r.id for r, _ in ranked],
        )

    def _target(self, query: VectorStoreQuery) -> dict[str, Any]:
        """``query_vector=`` or ``query=`` for ``search``, by the store's strategy."""
        text = query.query_str if query.query_str and query.query_str.strip() else None
        vector = list(query.query_embedding) if query.query_embedding is not None else None
        strategy = self._store.search_strategy
        if strategy is SearchStrategy.KEYWORD or (
            strategy is SearchStrategy.HYBRID and self._store.embedder is not None
        ):
            if text is None and strategy is SearchStrategy.KEYWORD:
                raise ValueError("a KEYWORD store ranks text: the query needs a query_str")
            if text is not None:
                return {"query": text}
        if vector is not None:
            return {"query_vector": vector}
        if text is not None:
            return {"query": text}
        raise ValueError("the query needs a query_embedding or a non-blank query_str")

    def _search_branch(
        self, branch: Branch, k: int, wanted: set[str] | None, target: dict[str, Any]
    ) -> list[tuple[Record, float]]:
        """The branch's top k; searches deeper while Python-side checks reject rows."""
        scope: dict[str, Any] = dict(self._scope())
        scope.update({f"exact_{name.removesuffix('_id')}_match": True for name in self._scope()})
        checked = bool(branch.residual) or wanted is not None
        fetch = k
        while True:
            rows = self._store.search(
                k=fetch,
                record_types={self.record_type},
                metadata_filter=branch.pushed if branch.pushed else NOT_SET,
                **target,
                **scope,
            )
            if not checked:
                return rows
            kept = [
                (r, d)
                for r, d in rows
                if (wanted is None or r.id in wanted) and branch.matches(r.metadata)
            ]
            if len(kept) >= k or len(rows) < fetch:
                return kept[:k]
            fetch *= _FETCH_GROWTH

    # -- async twins: the sync methods in a worker thread (SPEC §9) ---------------

    async def async_add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Async twin of ``add``."""
        return await in_thread(self.add, nodes, **add_kwargs)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Async twin of ``delete``."""
        await in_thread(self.delete, ref_doc_id, **delete_kwargs)

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Async twin of ``delete_nodes``."""
        await in_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

    async def aclear(self) -> None:
        """Async twin of ``clear``."""
        await in_thread(self.clear)

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """Async twin of ``get_nodes``."""
        return await in_thread(self.get_nodes, node_ids, filters)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Async twin of ``query``."""
        return await in_thread(self.query, query, **kwargs)


__all__ = ["OAMVectorStore"]
