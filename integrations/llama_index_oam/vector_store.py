"""``OAMVectorStore``: a LlamaIndex vector store over an ``oam`` memory store.

Nodes are memory-like records of one ``record_type`` in an optional user / agent /
thread scope (docs/store.md#scopes); search is the store's own ``search`` (docs/store.md#search-strategies) with the
LlamaIndex filters translated by ``filters.py`` to the ``oam`` filter language
(docs/filters.md), so the store filters before the top-k cut.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.indices.query.embedding_utils import get_top_k_mmr_embeddings
from llama_index.core.schema import BaseNode, MetadataMode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from llama_index_oam.filters import Json, and_filters, to_oam_filter
from llama_index_oam.nodes import REF_DOC_KEY, check_rows, node_to_row, record_to_node
from oam_core import (
    NOT_SET,
    OracleAgentMemory,
    OracleMemoryStore,
    PendingRecordBatch,
    Record,
    SchemaPolicy,
    SearchStrategy,
)
from oam_core.apis.metadatajson import managed
from oam_core.apis.records import MEMORY_TYPES, matches_filter
from oam_core.checks import (
    MAX_ROWS,
    check_int,
    check_list,
    check_optional_int,
    check_scope,
    shown,
    strategy_of,
)
from oam_core.errors import ConfigurationError, InvalidArgumentError
from oam_core.steps import in_worker_thread

_FETCH_GROWTH = 4
_MMR_PREFETCH_FACTOR = 4
"""Candidates fetched for MMR per result, as LlamaIndex's vector stores default."""
_HYBRID_MODES = (VectorStoreQueryMode.HYBRID, VectorStoreQueryMode.SEMANTIC_HYBRID)
_ALPHA_IGNORED = (
    "VectorStoreQuery.alpha={alpha!r} is ignored: a HYBRID store fuses its vector and "
    "keyword rankings by reciprocal rank, both lists weighted alike (its FusionConfig "
    "sets the RRF constant rrf_k and the list_weight they share), not by a dense/sparse "
    "ratio; sparse_top_k and hybrid_top_k are ignored as well. To rank by vectors only "
    "(alpha=1) or keywords only (alpha=0), query inside "
    '`with store.searching_with("VECTOR")` (or "KEYWORD"), or open the store with '
    "that search_strategy (docs/llama_index.md#left-out-and-why). Warned once per "
    "vector store."
)


class OAMVectorStore(BasePydanticVectorStore):
    """LlamaIndex ``BasePydanticVectorStore`` backed by an ``OracleMemoryStore``.

    Every node is one record of ``record_type`` (``stores_text=True``: the text lives in
    the record, so ``VectorStoreIndex.from_vector_store(store)`` needs no docstore).
    A node's own ``embedding`` is stored as given (one vector for its whole retrieval
    text, docs/store.md#what-is-stored-and-what-is-searched); a node without one is embedded by the store's embedder. Adding a
    node whose id is stored replaces it, as LlamaIndex's vector stores do, so running
    an ``IngestionPipeline`` twice is safe. Similarities are those LlamaIndex's vector
    stores report: ``1 - distance``, the cosine similarity for VECTOR search and the
    normalized score for KEYWORD and HYBRID (docs/llama_index.md).

    Args:
        store: The store to use (not closed by ``close``).
        connection: Instead of ``store``: where to open one, as
            ``OracleAgentMemory(connection=...)`` accepts (a SQLite path,
            ``":memory:"``, ``sqlite:///`` or ``postgresql://`` URL, a pool, ...);
            opened without an embedder, so nodes must carry embeddings, and closed
            by ``close``.
        schema_policy: With ``connection``: how to treat the database schema
            (``SchemaPolicy`` or its name); the default creates the store's tables
            on a fresh database and upgrades old ones.
        search_strategy: With ``connection``: the new store's ``SearchStrategy``
            (omitted: the back end's default, VECTOR).
        record_type: ``memory``, ``guideline``, ``fact`` or ``preference``.
        user_id, agent_id, thread_id: Scope: written on every added node and, where
            given, required (exact match) by every read, search and delete; ``None``
            leaves that dimension unscoped on writes and unconstrained on reads.
        embed_model: The LlamaIndex embedding model the nodes were embedded with;
            used by MMR queries to embed their candidates (the store does not return
            stored vectors) when the store has no embedder of its own.

    Raises:
        ValueError: when both or neither of ``store`` and ``connection`` are given,
            ``store`` is not an ``OracleMemoryStore``, ``record_type`` is not
            memory-like, a scope id is not a non-blank string, ``embed_model`` is not
            a ``BaseEmbedding``, or a store option is given with ``store``.
    """

    stores_text: bool = True
    flat_metadata: bool = False
    record_type: str = "memory"
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None

    _store: OracleMemoryStore = PrivateAttr()
    _opened: OracleAgentMemory | None = PrivateAttr(default=None)
    _embed_model: BaseEmbedding | None = PrivateAttr(default=None)
    _alpha_warned: bool = PrivateAttr(default=False)

    def __init__(
        self,
        store: OracleMemoryStore | None = None,
        *,
        connection: Any = None,
        schema_policy: SchemaPolicy | str = SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy: SearchStrategy | str | None = None,
        record_type: str = "memory",
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        embed_model: BaseEmbedding | None = None,
    ) -> None:
        if (store is None) == (connection is None):
            raise ConfigurationError("give exactly one of store and connection")
        if store is not None and not isinstance(store, OracleMemoryStore):
            raise ConfigurationError(
                f"store must be an OracleMemoryStore, got {type(store).__name__}"
            )
        if store is not None and search_strategy is not None:
            raise ConfigurationError("search_strategy applies to connection=, not to a given store")
        if record_type not in MEMORY_TYPES:
            raise InvalidArgumentError(
                f"record_type must be one of {sorted(MEMORY_TYPES)}, got {record_type!r}"
            )
        if embed_model is not None and not isinstance(embed_model, BaseEmbedding):
            raise InvalidArgumentError(
                f"embed_model must be a LlamaIndex BaseEmbedding, got {type(embed_model).__name__}"
            )
        fields: dict[str, Any] = {
            "stores_text": True,
            "record_type": record_type,
            "user_id": check_scope(user_id, "user_id", kind="a non-blank str"),
            "agent_id": check_scope(agent_id, "agent_id", kind="a non-blank str"),
            "thread_id": check_scope(thread_id, "thread_id", kind="a non-blank str"),
        }
        super().__init__(**fields)
        if store is None:
            options: dict[str, Any] = {"schema_policy": schema_policy}
            if search_strategy is not None:
                options["search_strategy"] = search_strategy
            self._opened = OracleAgentMemory(
                connection=connection, extract_memories=False, **options
            )
            store = self._opened.store
        self._store = store
        self._embed_model = embed_model
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
        """Store ``nodes`` in one transaction; return their ids in order. A node whose
        id is already stored (in this store's id family, docs/concepts.md#ids-and-times) replaces that
        record with its search rows, in the same transaction.

        Args:
            nodes: Nodes with or without ``embedding``.
            **add_kwargs: Store write options (``batch_size``), passed to
                ``OracleMemoryStore.upsert_batches``.

        Raises:
            ValueError: for ``nodes`` not a list of nodes (naming ``nodes[i]``), a
                node id repeated in ``nodes``, an id held by a record
                outside this store's type or scope, a node without embedding when
                the store has no embedder and searches by vector, vectors of the
                wrong dimension, non-JSON metadata, or a NUL or lone surrogate in a
                node's id, text or metadata (named by node: ``node 'n1' text``,
                ``node 'n1' metadata['m']``); nothing is written then.
        """
        nodes = check_list(nodes, "nodes", "nodes")
        for i, n in enumerate(nodes):
            if not isinstance(n, BaseNode):
                raise InvalidArgumentError(f"nodes[{i}] must be a LlamaIndex node, got {shown(n)}")
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
            raise ConfigurationError(
                f"node {without[0].node_id!r} has no embedding and the store has no "
                "embedder, so vector search could never find it: give nodes embeddings "
                "(e.g. through VectorStoreIndex's embed_model) or configure the store's embedder"
            )
        row_list = [node_to_row(n) for n in nodes]
        check_rows(nodes, row_list)  # ids, texts, metadata, before anything is read
        rows = {id(n): row for n, row in zip(nodes, row_list, strict=True)}
        for node in nodes:
            self._check_replaceable(node.node_id)
        batches = []
        if with_vec:
            batches.append(self._batch(with_vec, rows, with_embeddings=True))
        if without:
            batches.append(self._batch(without, rows, with_embeddings=False))
        store.upsert_batches(batches, **add_kwargs)
        return [n.node_id for n in nodes]

    def _check_replaceable(self, node_id: str) -> None:
        """Refuse to replace a record this vector store cannot see (another memory-like
        type, or another user/agent/thread): an id names one record per family."""
        for record_type in sorted(MEMORY_TYPES):
            existing = self._store.get(record_type, node_id)
            if existing is not None and not self._in_scope(existing):
                raise InvalidArgumentError(
                    f"node id {node_id!r} belongs to a {existing.record_type} record outside "
                    "this vector store (another record type or scope)"
                )

    def _batch(
        self,
        nodes: list[BaseNode],
        by_node: Mapping[int, tuple[str, str, dict[str, Any]]],
        *,
        with_embeddings: bool,
    ) -> PendingRecordBatch:
        """The store batch writing ``nodes``, whose ``node_to_row`` are ``by_node[id(node)]``."""
        rows = [by_node[id(n)] for n in nodes]
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
            metadata=[managed(meta) for _, _, meta in rows],
        )

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of this store's scope whose source document is ``ref_doc_id``.

        Raises:
            ValueError: for a non-string or blank ``ref_doc_id``.
        """
        if not isinstance(ref_doc_id, str) or not ref_doc_id.strip():
            raise InvalidArgumentError(f"ref_doc_id must be a non-blank str, got {ref_doc_id!r}")
        self._delete_records(self._select(None, {REF_DOC_KEY: ref_doc_id}))

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete the nodes that have one of ``node_ids`` (if given) and match ``filters``.

        ``node_ids=[]`` is no id restriction, as in ``get_nodes``; but a call that would
        select everything (no ids and no filter) deletes nothing: ``[]`` deletes
        nothing, and ``None`` with no filter is an error (use ``clear``).

        Raises:
            ValueError: when neither ``node_ids`` nor a filter is given, for a bare
                string as ``node_ids`` (never read as one id per character), or for a
                filter that cannot be translated (``UnsupportedFilterError``);
                nothing is deleted then.
        """
        node_ids = _id_list(node_ids, "node_ids")
        flt = to_oam_filter(filters)
        if not node_ids and flt is None:
            if node_ids is None:
                raise InvalidArgumentError(
                    "delete_nodes needs node_ids or a non-empty filter; call clear() to "
                    "delete every node"
                )
            return
        self._delete_records(self._select(node_ids or None, flt))

    def clear(self) -> None:
        """Delete every node of this store's record type and scope."""
        self._delete_records(self._select(None, None))

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
            ValueError: for a bare string as ``node_ids``, or a filter that cannot be
                translated (``UnsupportedFilterError``).
        """
        node_ids = _id_list(node_ids, "node_ids")
        records = self._select(node_ids or None, to_oam_filter(filters))
        return [record_to_node(r) for r in records]

    def _select(self, node_ids: list[str] | None, flt: dict[str, Json] | None) -> list[Record]:
        if node_ids is not None:
            if flt is not None:
                matches_filter(None, flt)  # an invalid filter fails before any read
            found = (self._store.get(self.record_type, i) for i in dict.fromkeys(node_ids))
            return [
                r
                for r in found
                if r is not None
                and self._in_scope(r)
                and (flt is None or matches_filter(r.metadata, flt))
            ]
        return self._store.list(
            self.record_type,
            limit=None,
            metadata_filter=flt if flt is not None else NOT_SET,
            **self._scope(),
        )

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Top ``similarity_top_k`` nodes for the query.

        Query modes: DEFAULT ranks by the store's ``search_strategy`` (docs/store.md#search-strategies):
        VECTOR uses ``query_embedding`` (else ``query_str``, embedded by the store);
        KEYWORD uses ``query_str``; HYBRID uses ``query_str`` when the store has an
        embedder (else ``query_embedding``, vector ranking only). HYBRID and
        SEMANTIC_HYBRID need a HYBRID store; TEXT_SEARCH a KEYWORD store. MMR picks
        among ``mmr_prefetch_k`` (default ``4 * similarity_top_k``) candidates with
        LlamaIndex's ``get_top_k_mmr_embeddings`` (``mmr_threshold`` from
        ``vector_store_kwargs``); its similarities are the MMR scores, as in
        ``SimpleVectorStore``.

        ``query.mode`` may be the enum or its string (``"mmr"``).
        ``similarity_top_k=None`` returns every match, as ``SimpleVectorStore``.
        ``query.filters``, ``doc_ids`` and ``node_ids`` (``[]`` = no restriction)
        restrict the candidates before the top-k cut.

        Raises:
            ValueError: for a query mode the store cannot serve (named in the
                message), a query with neither embedding nor text, an untranslatable
                filter, MMR without a way to embed candidates, or whatever the store
                rejects (wrong vector dimension, text query without embedder, ...).
            InvalidArgumentError: (a ``ValueError``) naming the argument and value
                for a ``similarity_top_k`` that is not an int, a bare string as
                ``node_ids`` or ``doc_ids``, or an ``mmr_prefetch_k`` (an int >= 1)
                or ``mmr_prefetch_factor`` (a number > 0) of another kind.
        """
        mode = _mode(query.mode)
        k = _top_k(query.similarity_top_k)
        node_ids = _id_list(query.node_ids, "query.node_ids")
        doc_ids = _id_list(query.doc_ids, "query.doc_ids")
        flt = to_oam_filter(query.filters)
        if doc_ids:
            flt = and_filters(flt, {REF_DOC_KEY: {"$in": doc_ids}})
        if k < 1:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        wanted = set(node_ids) if node_ids else None
        if mode is VectorStoreQueryMode.MMR:
            return self._mmr(query, k, flt, wanted, kwargs)
        target = self._target(query, mode)
        self._warn_alpha(query.alpha)
        ranked = self._search(flt, k, wanted, target)
        return VectorStoreQueryResult(
            nodes=[record_to_node(r) for r, _ in ranked],
            similarities=[1.0 - d for _, d in ranked],
            ids=[r.id for r, _ in ranked],
        )

    def _target(self, query: VectorStoreQuery, mode: VectorStoreQueryMode) -> dict[str, Any]:
        """``query_vector=`` or ``query=`` for ``search``, by mode and strategy."""
        text = query.query_str if query.query_str and query.query_str.strip() else None
        vector = list(query.query_embedding) if query.query_embedding is not None else None
        strategy = self._store.search_strategy
        if mode in _HYBRID_MODES or mode == VectorStoreQueryMode.TEXT_SEARCH:
            needed = (
                SearchStrategy.KEYWORD
                if mode == VectorStoreQueryMode.TEXT_SEARCH
                else (SearchStrategy.HYBRID)
            )
            if strategy is not needed:
                raise ConfigurationError(
                    f"query mode {mode.value!r} needs a store opened with "
                    f"search_strategy={needed.name}; this store ranks by {strategy.name} "
                    "(use the default mode, or open the store with that strategy)"
                )
            if text is None:
                raise ConfigurationError(f"query mode {mode.value!r} needs a non-blank query_str")
            if self._store.embedder is None and strategy is SearchStrategy.HYBRID:
                raise ConfigurationError(
                    f"query mode {mode.value!r}: the HYBRID store has no embedder to embed "
                    "query_str; configure one"
                )
            return {"query": text}
        if mode != VectorStoreQueryMode.DEFAULT:
            raise InvalidArgumentError(
                f"query mode {mode.value!r} is not supported by OAMVectorStore (supported: "
                "default, mmr, hybrid and semantic_hybrid on a HYBRID store, text_search on "
                "a KEYWORD store)"
            )
        if strategy is SearchStrategy.KEYWORD or (
            strategy is SearchStrategy.HYBRID and self._store.embedder is not None
        ):
            if text is None and strategy is SearchStrategy.KEYWORD:
                raise InvalidArgumentError(
                    "a KEYWORD store ranks text: the query needs a query_str"
                )
            if text is not None:
                return {"query": text}
        if vector is not None:
            return {"query_vector": vector}
        if text is not None:
            return {"query": text}
        raise InvalidArgumentError("the query needs a query_embedding or a non-blank query_str")

    def _warn_alpha(self, alpha: float | None) -> None:
        """Warn (once per vector store) that a HYBRID search ignores ``alpha``: users of
        LlamaIndex's hybrid stores (PGVector, Qdrant, Weaviate) pass it, and it is
        not refused, so their queries keep working with the store's fusion. Inside
        ``store.searching_with("VECTOR")`` (what the warning advises) nothing is fused."""
        if (
            alpha is None
            or self._alpha_warned
            or strategy_of(self._store) is not SearchStrategy.HYBRID
        ):
            return
        self._alpha_warned = True
        warnings.warn(_ALPHA_IGNORED.format(alpha=alpha), UserWarning, stacklevel=3)

    def _search(
        self,
        flt: dict[str, Json] | None,
        k: int,
        wanted: set[str] | None,
        target: dict[str, Any],
    ) -> list[tuple[Record, float]]:
        """The top k in scope and filter; searches deeper while ``wanted`` (node ids,
        not a metadata field) rejects rows."""
        scope: dict[str, Any] = dict(self._scope())
        scope.update({f"exact_{name.removesuffix('_id')}_match": True for name in self._scope()})
        fetch = k
        while True:
            rows = self._store.search(
                k=fetch,
                record_types={self.record_type},
                metadata_filter=flt if flt is not None else NOT_SET,
                **target,
                **scope,
            )
            if wanted is None:
                return rows
            kept = [(r, d) for r, d in rows if r.id in wanted]
            if len(kept) >= k or len(rows) < fetch:
                return kept[:k]
            fetch *= _FETCH_GROWTH

    def _mmr(
        self,
        query: VectorStoreQuery,
        k: int,
        flt: dict[str, Json] | None,
        wanted: set[str] | None,
        kwargs: dict[str, Any],
    ) -> VectorStoreQueryResult:
        prefetch = _mmr_prefetch(k, kwargs)
        text = query.query_str if query.query_str and query.query_str.strip() else None
        vector = list(query.query_embedding) if query.query_embedding is not None else None
        if vector is None:
            if text is None:
                raise InvalidArgumentError(
                    "an MMR query needs a query_embedding or a non-blank query_str"
                )
            vector = self._embed([text], is_query=True)[0]
        if self._store.search_strategy is SearchStrategy.KEYWORD:
            if text is None:
                raise InvalidArgumentError(
                    "MMR on a KEYWORD store ranks its candidates by query_str"
                )
            target: dict[str, Any] = {"query": text}
        else:
            target = {"query_vector": vector}
        candidates = [r for r, _ in self._search(flt, prefetch, wanted, target)]
        if not candidates:
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        nodes = {r.id: record_to_node(r) for r in candidates}
        texts = [nodes[r.id].get_content(metadata_mode=MetadataMode.EMBED) for r in candidates]
        scores, ids = get_top_k_mmr_embeddings(
            vector,
            self._embed(texts, is_query=False),
            similarity_top_k=k,
            embedding_ids=[r.id for r in candidates],
            mmr_threshold=kwargs.get("mmr_threshold"),
        )
        return VectorStoreQueryResult(
            nodes=[nodes[i] for i in ids], similarities=list(scores), ids=list(ids)
        )

    def _embed(self, texts: list[str], *, is_query: bool) -> list[list[float]]:
        """Vectors for MMR: the store's embedder, else ``embed_model``."""
        if self._store.embedder is not None:
            rows = self._store.embedder.embed(texts, is_query=is_query)
            return [[float(x) for x in row] for row in rows]
        if self._embed_model is not None:
            if is_query:
                return [self._embed_model.get_query_embedding(t) for t in texts]
            return self._embed_model.get_text_embedding_batch(texts)
        raise ConfigurationError(
            "MMR needs the candidates' vectors and the store does not return stored ones: "
            "give OAMVectorStore(embed_model=...) the model the nodes were embedded with, "
            "or use a store with an embedder"
        )

    # -- async twins: the sync methods in a worker thread (docs/concepts.md#sync-and-async)

    async def async_add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Async twin of ``add``."""
        return await in_worker_thread(self.add, nodes, **add_kwargs)

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Async twin of ``delete``."""
        await in_worker_thread(self.delete, ref_doc_id, **delete_kwargs)

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Async twin of ``delete_nodes``."""
        await in_worker_thread(self.delete_nodes, node_ids, filters, **delete_kwargs)

    async def aclear(self) -> None:
        """Async twin of ``clear``."""
        await in_worker_thread(self.clear)

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """Async twin of ``get_nodes``."""
        return await in_worker_thread(self.get_nodes, node_ids, filters)

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Async twin of ``query``."""
        return await in_worker_thread(self.query, query, **kwargs)


def _mode(mode: object) -> VectorStoreQueryMode:
    """``VectorStoreQuery.mode`` as the enum. The query is a plain dataclass, so a
    caller may give the mode's string (``"text_search"``), which LlamaIndex's own
    stores compare with ``==``, as the enum.

    Raises:
        InvalidArgumentError: naming the mode when it is no ``VectorStoreQueryMode``.
    """
    try:
        return VectorStoreQueryMode(mode)
    except ValueError:
        known = [m.value for m in VectorStoreQueryMode]
        raise InvalidArgumentError(f"query mode {mode!r} is not one of {known}") from None


def _top_k(value: object) -> int:
    """``VectorStoreQuery.similarity_top_k`` as a count: None is every match, as in
    ``SimpleVectorStore``.

    Raises:
        InvalidArgumentError: naming ``similarity_top_k`` for anything but an int or None.
    """
    return MAX_ROWS if value is None else check_int(value, "similarity_top_k")


def _id_list(value: object, name: str) -> list[Any] | None:
    """``node_ids`` / ``doc_ids`` as a list (None stays None): a bare string would be
    read as one id per character (``checks.check_list``)."""
    return None if value is None else check_list(value, name, "ids")


def _mmr_prefetch(k: int, kwargs: Mapping[str, Any]) -> int:
    """Candidates an MMR query fetches: ``mmr_prefetch_k``, else ``k`` times
    ``mmr_prefetch_factor`` (4 without one); never fewer than ``k``.

    Raises:
        InvalidArgumentError: naming ``mmr_prefetch_k`` unless it is an int >= 1 or
            None, or ``mmr_prefetch_factor`` unless it is a finite number > 0 or None.
    """
    given = check_optional_int(kwargs.get("mmr_prefetch_k"), "mmr_prefetch_k", minimum=1)
    if given is not None:
        return max(given, k)
    factor = kwargs.get("mmr_prefetch_factor")
    if factor is None:
        return k * _MMR_PREFETCH_FACTOR
    if (
        isinstance(factor, bool)
        or not isinstance(factor, (int, float))
        or not math.isfinite(factor)
        or factor <= 0
    ):
        raise InvalidArgumentError(
            f"mmr_prefetch_factor must be a finite number > 0 or None, got {factor!r}"
        )
    return max(k, math.ceil(k * factor))


__all__ = ["OAMVectorStore"]
