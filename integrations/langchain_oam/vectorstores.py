"""``OAMVectorStore``: a LangChain ``VectorStore`` over an ``oam`` memory store.

Each LangChain document is one ``oam`` record of a memory-like type (``memory`` by
default), scoped to the vector store's user, agent and thread; the document's text is
the record's content, its metadata the record's metadata (exactly what the caller
stored), its id the record id. Search, filters, scope and TTL are the store's
(docs/store.md, docs/filters.md); this module only translates types.
"""

from __future__ import annotations

import collections
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from langchain_oam._search import (
    DistanceKind,
    SearchScope,
    check_metadata,
    check_threshold,
    current_at,
    distance_kind,
    mmr_steps,
    relevance,
    search_steps,
    to_document,
)
from langchain_oam.embeddings import LangChainEmbedder
from oam_core import (
    OracleAgentMemory,
    OracleMemoryStore,
    Record,
    SchemaPolicy,
    SearchStrategy,
    SQLiteMemoryStore,
)
from oam_core.apis.metadatajson import managed
from oam_core.checks import check_list, check_texts, shown
from oam_core.errors import ConfigurationError, InvalidArgumentError
from oam_core.steps import Steps, call, paired, run_async, run_sync
from oam_core.store.planning import name_ids

__all__ = ["OAMVectorStore"]

MEMORY_LIKE = ("memory", "guideline", "fact", "preference")


def _scope_id(value: object, name: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidArgumentError(f"{name} must be a non-empty str or None, got {value!r}")
    return value


def _document_fields(
    documents: object, kwargs: dict[str, Any]
) -> tuple[list[str], list[dict[str, Any]]]:
    """The texts and metadatas of ``add_documents``' documents; sets ``kwargs["ids"]``
    to their ids unless the caller gave ``ids=``.

    Raises:
        InvalidArgumentError: naming ``documents`` for a bare string or a non-list,
            ``documents[i]`` for an entry that is not a ``Document``.
    """
    docs = check_list(documents, "documents", "Document objects")
    for i, doc in enumerate(docs):
        if not isinstance(doc, Document):
            raise InvalidArgumentError(f"documents[{i}] must be a Document, got {shown(doc)}")
    if kwargs.get("ids") is None:
        kwargs["ids"] = [d.id for d in docs]
    return [d.page_content for d in docs], [d.metadata for d in docs]


class OAMVectorStore(VectorStore):
    """LangChain ``VectorStore`` over an ``OracleMemoryStore`` (docs/langchain.md#vector-store;
    the adapter stays thin).

    Example::

        >>> from langchain_core.embeddings import DeterministicFakeEmbedding
        >>> vs = OAMVectorStore(DeterministicFakeEmbedding(size=8))
        >>> vs.add_texts(["apples", "pears"], ids=["a", "p"])
        ['a', 'p']
        >>> vs.similarity_search("apples", k=1)[0].id
        'a'

    Args:
        embedding: LangChain embedding model. With neither ``store`` nor
            ``connection`` it becomes the embedder (``LangChainEmbedder``) of a new
            in-memory SQLite store of its dimension. With a store that has its own
            embedder, that embedder embeds writes and text queries, and
            ``embedding`` serves ``*_by_vector`` queries and MMR, so both must
            produce the same vectors; with a store without embedder, this model
            embeds everything and the vectors are passed to the store.
        store: An existing store (not closed by ``close``).
        connection: A database for a new store, as ``OracleAgentMemory(connection=)``
            takes it (a SQLite path, ``":memory:"``, a ``sqlite:///`` or
            ``postgresql://`` URL, a pool), embedded with ``embedding``; closed by
            ``close``.
        schema_policy: With ``connection``: how to treat the database schema
            (``SchemaPolicy`` or its name); the default creates the store's tables
            on a fresh database, as PGVector creates its collection tables.
        search_strategy: With ``connection``: the new store's ``SearchStrategy``
            (omitted: VECTOR).
        record_type: The memory-like record type of the documents: ``memory``,
            ``guideline``, ``fact`` or ``preference``.
        user_id, agent_id, thread_id: Scope. Given: every document is written with
            it, and reads, searches and deletes see only records with exactly that
            id. None: documents are written unscoped in that dimension and reads
            are not constrained by it.
        allow_embedder_change: With ``connection``: open a database whose vectors
            were recorded with another embedder of the same dimension, as the
            store's option of that name (docs/store.md#embedder-identity).

    Raises:
        ValueError: naming the argument, for both ``store`` and ``connection``, a
            non-store ``store``, a record type that is not memory-like, a blank
            scope id, or ``search_strategy`` or ``allow_embedder_change`` without
            ``connection``.
        EmbedderMismatchError: (a ValueError) for a database written with another
            embedder, unless ``allow_embedder_change``.
    """

    def __init__(
        self,
        embedding: Embeddings,
        *,
        store: OracleMemoryStore | None = None,
        connection: Any = None,
        schema_policy: SchemaPolicy | str = SchemaPolicy.CREATE_IF_NECESSARY,
        search_strategy: SearchStrategy | str | None = None,
        record_type: str = "memory",
        user_id: str | None = None,
        agent_id: str | None = None,
        thread_id: str | None = None,
        allow_embedder_change: bool = False,
    ) -> None:
        if not isinstance(embedding, Embeddings):
            raise InvalidArgumentError(
                f"embedding must be a LangChain Embeddings, got {type(embedding).__name__}"
            )
        if record_type not in MEMORY_LIKE:
            raise ConfigurationError(
                f"record_type must be one of {list(MEMORY_LIKE)}, got {record_type!r}"
            )
        if store is not None and connection is not None:
            raise ConfigurationError("pass at most one of store and connection, got both")
        if search_strategy is not None and connection is None:
            raise ConfigurationError("search_strategy applies to connection=, not to a given store")
        if not isinstance(allow_embedder_change, bool):
            raise ConfigurationError(
                f"allow_embedder_change must be a bool, got {allow_embedder_change!r}"
            )
        if allow_embedder_change and store is not None:
            raise ConfigurationError(
                "allow_embedder_change applies to connection=; a given store keeps its own"
            )
        self._embedding = embedding
        self.record_type = record_type
        self.user_id = _scope_id(user_id, "user_id")
        self.agent_id = _scope_id(agent_id, "agent_id")
        self.thread_id = _scope_id(thread_id, "thread_id")
        self._owns_store = store is None
        if store is not None:
            if not isinstance(store, OracleMemoryStore):
                raise InvalidArgumentError(
                    f"store must be an OracleMemoryStore, got {type(store).__name__}"
                )
            self.store = store
        elif connection is not None:
            # A vector store ranks by vector similarity (LangChain's scores); the
            # stores' own default is HYBRID (docs/store.md#search-strategies).
            client = OracleAgentMemory(
                connection=connection,
                embedder=LangChainEmbedder(embedding),
                extract_memories=False,
                schema_policy=schema_policy,
                search_strategy=search_strategy or SearchStrategy.VECTOR,
                allow_embedder_change=allow_embedder_change,
            )
            self.store = client.store
        else:
            self.store = SQLiteMemoryStore(
                ":memory:",
                embedder=LangChainEmbedder(embedding),
                search_strategy=SearchStrategy.VECTOR,
            )
        self._scope = SearchScope(
            record_types=frozenset({record_type}),
            user_id=self.user_id,
            agent_id=self.agent_id,
            thread_id=self.thread_id,
        )

    @property
    def embeddings(self) -> Embeddings:
        """The LangChain embedding model."""
        return self._embedding

    @property
    def _scoped(self) -> bool:
        return any(v is not None for v in (self.user_id, self.agent_id, self.thread_id))

    def close(self) -> None:
        """Close the store if this vector store opened it."""
        if self._owns_store:
            self.store.close()

    # ------------------------------------------------------------------ writes

    def _add_steps(
        self,
        texts: Iterable[str],
        metadatas: Sequence[Mapping[str, Any] | None] | None,
        ids: Sequence[str | None] | None,
        kwargs: Mapping[str, Any],
    ) -> Steps[list[str]]:
        texts = check_list(texts, "texts", "texts")
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InvalidArgumentError(f"texts[{i}] must be a str, got {text!r}")
        if metadatas is not None and len(metadatas) != len(texts):
            raise InvalidArgumentError(f"got {len(metadatas)} metadatas for {len(texts)} texts")
        if ids is not None:
            ids = check_list(ids, "ids", "ids")
            if len(ids) != len(texts):
                raise InvalidArgumentError(f"got {len(ids)} ids for {len(texts)} texts")
        unknown = set(kwargs) - {"ttl_days", "ttl_anchor", "timestamps", "batch_size"}
        if unknown:
            raise TypeError(f"unexpected keyword arguments: {sorted(unknown)}")
        metadata = [
            managed(check_metadata(m, f"metadatas[{i}]"))
            for i, m in enumerate(metadatas or [None] * len(texts))
        ]
        record_ids = [
            i if i is not None else str(uuid.uuid4()) for i in (ids or [None] * len(texts))
        ]
        for i, rid in enumerate(record_ids):
            if not isinstance(rid, str) or not rid:
                raise InvalidArgumentError(f"ids[{i}] must be a non-empty str, got {rid!r}")
        # NUL and lone surrogates named as the caller's texts[i] / ids[i], before the
        # store (which would name its own contents[i]) or the embedder sees them
        check_texts(texts, "texts")
        check_texts(record_ids, "ids")
        if len(set(record_ids)) != len(record_ids):
            twice = [rid for rid, n in collections.Counter(record_ids).items() if n > 1]
            raise InvalidArgumentError(f"duplicate ids in one call: {name_ids(twice)}")
        if not texts:
            return []
        # An id names one record of the memory family in the whole store (docs/concepts.md#ids-and-times):
        # never let this vector store replace a record it cannot see (another type,
        # or another user/agent/thread).
        for rid in record_ids:
            for record_type in MEMORY_LIKE:
                existing = yield from call(self.store.get, record_type, rid)
                if existing is not None and not self._scope.holds(existing):
                    raise InvalidArgumentError(
                        f"id {rid!r} belongs to a {existing.record_type} record outside "
                        "this vector store"
                    )
        extra: dict[str, Any] = dict(kwargs)
        if self.store.embedder is None:
            vectors = iter(
                (
                    yield from call(
                        paired(self._embedding.embed_documents, self._embedding.aembed_documents),
                        texts,
                    )
                )
                or []
            )
            # one vector per text; an empty text has no search row, so no vector
            extra["embeddings"] = [next(vectors) if t else [] for t in texts]
        ids_out: list[str] = yield from call(
            self.store.upsert,
            texts,
            self.record_type,
            record_ids=record_ids,
            user_ids=self.user_id,
            agent_ids=self.agent_id,
            thread_ids=self.thread_id,
            metadata=metadata,
            # timestamps are the event time: a document is read and found at once,
            # never "valid from" a future timestamp (docs/langchain.md#vector-store)
            valid_from=None,
            **extra,
        )
        return list(ids_out)

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Add or replace documents, in one store transaction.

        Args:
            texts: The texts.
            metadatas: One JSON-compatible dict (or None) per text.
            ids: One id per text; a None entry gets a uuid4. A text whose id is
                already stored replaces that record (upsert).
            **kwargs: ``ttl_days``, ``ttl_anchor``, ``timestamps`` as in
                ``OracleMemoryStore.add`` (docs/store.md#ttl-and-retention); ``batch_size`` (rows per
                database round trip, as LangChain's indexing API passes it).

        Returns:
            The ids, in input order.

        Raises:
            ValueError: for misaligned lists, duplicate ids, non-JSON metadata, a
                reserved metadata key, a NUL or lone surrogate in a text, id or
                metadata (naming ``texts[i]``, ``ids[i]``, ``metadatas[i]['key']``),
                or an id held by a record outside this vector store's scope;
                nothing is written.
            TypeError: for an unknown keyword argument.
        """
        return run_sync(self._add_steps(texts, metadatas, ids, kwargs))

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Async twin of ``add_texts`` (same semantics)."""
        return await run_async(self._add_steps(texts, metadatas, ids, kwargs))

    def add_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Add or replace documents; ``ids=`` beats each ``Document.id``.

        Raises:
            ValueError: as ``add_texts``, or naming ``documents`` (``documents[i]``)
                for a bare string or an entry that is not a ``Document``.
        """
        texts, metadatas = _document_fields(documents, kwargs)
        return self.add_texts(texts, metadatas, **kwargs)

    async def aadd_documents(self, documents: list[Document], **kwargs: Any) -> list[str]:
        """Async twin of ``add_documents``."""
        texts, metadatas = _document_fields(documents, kwargs)
        return await self.aadd_texts(texts, metadatas, **kwargs)

    def _delete_steps(self, ids: Sequence[str] | None) -> Steps[bool]:
        if ids is None:
            raise InvalidArgumentError(
                "delete(ids=None) would delete every document; pass the ids to delete"
            )
        ids = check_list(ids, "ids", "ids")
        for i, rid in enumerate(ids):
            if not isinstance(rid, str) or not rid:
                raise InvalidArgumentError(f"ids[{i}] must be a non-empty str, got {rid!r}")
        if self._scoped:
            records = yield from self._get_steps(ids)
            ids = [r.id for r in records]
        if ids:
            yield from call(self.store.delete_records, self.record_type, ids)
        return True

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete the documents with these ids (unknown ids are skipped), in one
        transaction; a scoped vector store only deletes records in its scope.

        Returns:
            True.

        Raises:
            ValueError: for ``ids=None`` (never "delete everything", C15) or a
                non-string id; nothing is deleted.
        """
        return run_sync(self._delete_steps(ids))

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Async twin of ``delete``."""
        return await run_async(self._delete_steps(ids))

    # ------------------------------------------------------------------- reads

    def _get_steps(self, ids: Sequence[str]) -> Steps[list[Record]]:
        out = []
        for rid in dict.fromkeys(ids):
            record = yield from call(self.store.get, self.record_type, rid)
            if record is not None and self._scope.holds(record):
                out.append(record)
        return out

    def _get_docs_steps(self, ids: Sequence[str]) -> Steps[list[Document]]:
        records = yield from self._get_steps(check_list(ids, "ids", "ids"))
        now = self.store.clock_now()
        return [to_document(r) for r in records if current_at(r, now)]

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The stored documents with these ids, in the order of ``ids``; unknown ids,
        ids outside this store's scope and versions that no longer hold
        (docs/langchain.md#versions-of-a-memory) are skipped."""
        return run_sync(self._get_docs_steps(ids))

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Async twin of ``get_by_ids``."""
        return await run_async(self._get_docs_steps(ids))

    # ----------------------------------------------------------------- search

    def _search_steps(
        self,
        k: int,
        *,
        query: str | None = None,
        vector: Sequence[float] | None = None,
        filter: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Steps[list[tuple[Document, float, DistanceKind]]]:
        if kwargs:
            raise TypeError(f"unexpected keyword arguments: {sorted(kwargs)}")
        hits = yield from search_steps(
            self.store,
            self._scope,
            k,
            query=query,
            vector=vector,
            embedding=self._embedding,
            metadata_filter=filter,
        )
        return [(to_document(r), d, kind) for r, d, kind in hits]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """The ``k`` documents nearest to ``query``, best first.

        Args:
            query: The query text.
            k: Maximum results (>= 1); fewer when the store holds fewer.
            **kwargs: ``filter``: a metadata filter in the ``oam`` filter language
                (docs/filters.md), applied before the top-k cut.

        Raises:
            ValueError: for k < 1, a blank query or an invalid filter.
        """
        return [d for d, _ in self.similarity_search_with_score(query, k, **kwargs)]

    async def asimilarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """Async twin of ``similarity_search``."""
        return [d for d, _ in await self.asimilarity_search_with_score(query, k, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """As ``similarity_search``, with each document's distance (lower is nearer):
        cosine distance in [0, 2] for VECTOR search, ``1 - normalized score`` in
        [0, 1] for KEYWORD and HYBRID stores (docs/store.md#search-strategies)."""
        hits = run_sync(self._search_steps(k, query=query, **kwargs))
        return [(d, dist) for d, dist, _ in hits]

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Async twin of ``similarity_search_with_score``."""
        hits = await run_async(self._search_steps(k, query=query, **kwargs))
        return [(d, dist) for d, dist, _ in hits]

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents nearest to a query vector (cosine), best first.

        Raises:
            ValueError: for a vector of the wrong dimension, k < 1, an invalid
                filter, or a KEYWORD-only store.
        """
        hits = run_sync(self._search_steps(k, vector=embedding, **kwargs))
        return [d for d, _, _ in hits]

    async def asimilarity_search_by_vector(
        self, embedding: list[float], k: int = 4, **kwargs: Any
    ) -> list[Document]:
        """Async twin of ``similarity_search_by_vector``."""
        hits = await run_async(self._search_steps(k, vector=embedding, **kwargs))
        return [d for d, _, _ in hits]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        """Distance of a text query -> relevance in [0, 1] (see ``relevance``)."""
        return lambda distance: relevance(distance, distance_kind(distance))

    def similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """As ``similarity_search``, with relevance ``1 - distance`` (the cosine
        similarity, or the normalized score of a KEYWORD/HYBRID store); with
        ``score_threshold``, only documents whose relevance is at least that.

        Raises:
            ValueError: as ``similarity_search``, or naming ``score_threshold`` when
                it is not a number in [-1, 1] (or None).
        """
        check_threshold(kwargs.get("score_threshold"))
        return super().similarity_search_with_relevance_scores(query, k, **kwargs)

    async def asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Async twin of ``similarity_search_with_relevance_scores``."""
        check_threshold(kwargs.get("score_threshold"))
        return await super().asimilarity_search_with_relevance_scores(query, k, **kwargs)

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        hits = run_sync(self._search_steps(k, query=query, **kwargs))
        return [(d, relevance(dist, kind)) for d, dist, kind in hits]

    async def _asimilarity_search_with_relevance_scores(
        self, query: str, k: int = 4, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        hits = await run_async(self._search_steps(k, query=query, **kwargs))
        return [(d, relevance(dist, kind)) for d, dist, kind in hits]

    def _mmr_steps(
        self,
        query: str | None,
        vector: Sequence[float] | None,
        k: int,
        fetch_k: int,
        lambda_mult: float,
        filter: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> Steps[list[Document]]:
        if kwargs:
            raise TypeError(f"unexpected keyword arguments: {sorted(kwargs)}")
        records = yield from mmr_steps(
            self.store,
            self._scope,
            query=query,
            vector=vector,
            k=k,
            fetch_k=fetch_k,
            lambda_mult=lambda_mult,
            embedding=self._embedding,
            metadata_filter=filter,
        )
        return [to_document(r) for r in records]

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """Documents picked by maximal marginal relevance among the ``fetch_k``
        nearest (``lambda_mult``: 1 = relevance only, 0 = diversity only).

        The candidates are re-embedded from their text with ``embedding`` (the store
        does not return stored vectors). ``filter`` as in ``similarity_search``.

        Raises:
            ValueError: for k or fetch_k < 1, ``lambda_mult`` outside [0, 1], or an
                invalid filter.
        """
        return run_sync(self._mmr_steps(query, None, k, fetch_k, lambda_mult, **kwargs))

    async def amax_marginal_relevance_search(
        self,
        query: str,
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """Async twin of ``max_marginal_relevance_search``."""
        return await run_async(self._mmr_steps(query, None, k, fetch_k, lambda_mult, **kwargs))

    def max_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """As ``max_marginal_relevance_search``, from a query vector."""
        return run_sync(self._mmr_steps(None, embedding, k, fetch_k, lambda_mult, **kwargs))

    async def amax_marginal_relevance_search_by_vector(
        self,
        embedding: list[float],
        k: int = 4,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        **kwargs: Any,
    ) -> list[Document]:
        """Async twin of ``max_marginal_relevance_search_by_vector``."""
        return await run_async(self._mmr_steps(None, embedding, k, fetch_k, lambda_mult, **kwargs))

    # ----------------------------------------------------------- constructors

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> OAMVectorStore:
        """A new vector store (``kwargs`` go to the constructor) holding ``texts``.

        Raises:
            ValueError: as the constructor and ``add_texts``.
        """
        store = cls(embedding, **kwargs)
        store.add_texts(texts, metadatas, ids=ids)
        return store

    @classmethod
    async def afrom_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> OAMVectorStore:
        """Async twin of ``from_texts``."""
        store = cls(embedding, **kwargs)
        await store.aadd_texts(texts, metadatas, ids=ids)
        return store
