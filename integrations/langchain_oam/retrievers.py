"""``OAMRetriever``: a LangChain ``BaseRetriever`` over an ``oam`` client or store.

It ranks records with the store's own search (docs/store.md#search-strategies), scoped to a user, agent or
thread, filtered with the ``oam`` filter language (docs/filters.md), and returns them
as ``Document`` objects: id, content, the caller's metadata, and under
``metadata["oam"]`` the record type, timestamps, scope and relevance score.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field, ValidationInfo, field_validator, model_validator

from langchain_oam._search import (
    SearchScope,
    check_threshold,
    mmr_steps,
    relevance,
    search_steps,
    to_retrieved_document,
)
from oam_core import OracleAgentMemory, OracleMemoryStore
from oam_core.checks import check_int
from oam_core.errors import ConfigurationError, InvalidArgumentError
from oam_core.steps import Steps, run_async, run_sync

__all__ = ["OAMRetriever"]

SearchType = Literal["similarity", "similarity_score_threshold", "mmr"]


class OAMRetriever(BaseRetriever):
    """Retrieve ``oam`` records as LangChain documents (docs/langchain.md#retriever).

    Example::

        >>> from oam_core import OracleAgentMemory
        >>> memory = OracleAgentMemory(connection=":memory:", embedder="hashing/64",
        ...                            extract_memories=False)
        >>> _ = memory.add_memory("Alice's dog is called Biscuit.", user_id="alice")
        >>> retriever = OAMRetriever(memory, k=2, user_id="alice")
        >>> retriever.invoke("dog")[0].page_content
        "Alice's dog is called Biscuit."

    Args:
        memory: An ``OracleAgentMemory`` or an ``OracleMemoryStore`` to search
            (positional, or by name ``memory`` / ``store``).
        k: Documents per query (>= 1); ``invoke(query, k=...)`` overrides it for
            one call.
        user_id, agent_id, thread_id: Only records with exactly this scope id (None:
            unconstrained). Profiles carry their own id as their user/agent scope.
        record_types: Record types searched (default: messages, memory-like records
            and profiles, docs/store.md#scopes).
        search_type: ``"similarity"`` (nearest k), ``"similarity_score_threshold"``
            (nearest k with relevance >= ``score_threshold``) or
            ``"mmr"`` (maximal marginal relevance over ``fetch_k`` candidates,
            diversity set by ``lambda_mult``; needs the store's embedder).
            Relevance is langchain-core's cosine convention (docs/langchain.md).
        filter: Metadata filter in the ``oam`` language (docs/filters.md); per call too.
        score_threshold, fetch_k, lambda_mult: See ``search_type``.

    Raises:
        ValueError: (pydantic ``ValidationError`` is one) for both or neither of
            memory/store, an invalid option, or ``"similarity_score_threshold"``
            without ``score_threshold``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    store: OracleMemoryStore
    k: int = 4
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None
    record_types: frozenset[str] | None = None
    search_type: SearchType = "similarity"
    filter: dict[str, Any] | None = None
    score_threshold: float | None = None
    fetch_k: int = 20
    lambda_mult: float = Field(default=0.5, ge=0.0, le=1.0)

    def __init__(
        self,
        memory: OracleAgentMemory | OracleMemoryStore | None = None,
        /,
        **kwargs: Any,
    ) -> None:
        if memory is None:
            memory = kwargs.pop("memory", None)
        elif "memory" in kwargs:
            raise ConfigurationError("memory given twice (positionally and by name)")
        if memory is not None and "store" in kwargs:
            raise ConfigurationError("pass one of memory and store, not both")
        if memory is not None:
            kwargs["store"] = memory.store if isinstance(memory, OracleAgentMemory) else memory
        if kwargs.get("store") is None:
            raise ConfigurationError(
                "OAMRetriever needs an OracleAgentMemory or an OracleMemoryStore"
            )
        super().__init__(**kwargs)

    @model_validator(mode="after")
    def _threshold_given(self) -> OAMRetriever:
        # As langchain-core's VectorStoreRetriever: the threshold search needs one.
        if self.search_type == "similarity_score_threshold" and self.score_threshold is None:
            raise ConfigurationError(
                "search_type='similarity_score_threshold' needs score_threshold "
                "(a float, relevance >= it is kept)"
            )
        return self

    @field_validator("k", "fetch_k")
    @classmethod
    def _positive(cls, value: int, info: ValidationInfo) -> int:
        # Named by its own field: a bad fetch_k says "fetch_k" (LangChain's
        # retrievers report field errors as pydantic's ValidationError, a ValueError).
        return check_int(value, str(info.field_name), minimum=1)

    @field_validator("score_threshold", mode="before")
    @classmethod
    def _threshold(cls, value: object) -> float | None:
        # The check a per-call score_threshold gets too (no "0.5" coerced here only).
        return check_threshold(value)

    @field_validator("store", mode="before")
    @classmethod
    def _store(cls, value: object) -> object:
        if isinstance(value, OracleAgentMemory):
            return value.store
        if not isinstance(value, OracleMemoryStore):
            raise InvalidArgumentError(
                f"store must be an OracleAgentMemory or OracleMemoryStore, got {type(value).__name__}"
            )
        return value

    def _steps(self, query: str, options: Mapping[str, Any]) -> Steps[list[Document]]:
        unknown = set(options) - {"k", "filter", "score_threshold", "fetch_k", "lambda_mult"}
        if unknown:
            raise TypeError(f"unexpected keyword arguments: {sorted(unknown)}")
        k = check_int(options.get("k", self.k), "k", minimum=1)
        threshold = check_threshold(options.get("score_threshold", self.score_threshold))
        metadata_filter = options.get("filter", self.filter)
        scope = SearchScope(
            record_types=self.record_types,
            user_id=self.user_id,
            agent_id=self.agent_id,
            thread_id=self.thread_id,
        )
        if self.search_type == "mmr":
            records = yield from mmr_steps(
                self.store,
                scope,
                query=query,
                vector=None,
                k=k,
                fetch_k=options.get("fetch_k", self.fetch_k),
                lambda_mult=options.get("lambda_mult", self.lambda_mult),
                embedding=None,
                metadata_filter=metadata_filter,
            )
            return [to_retrieved_document(r) for r in records]
        hits = yield from search_steps(
            self.store, scope, k, query=query, metadata_filter=metadata_filter
        )
        scored = [(r, relevance(d, kind)) for r, d, kind in hits]
        if self.search_type == "similarity_score_threshold" and threshold is not None:
            scored = [(r, s) for r, s in scored if s >= threshold]
        return [to_retrieved_document(r, s) for r, s in scored]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return run_sync(self._steps(query, kwargs))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return await run_async(self._steps(query, kwargs))
