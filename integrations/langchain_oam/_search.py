"""Shared search plumbing of the vector store and the retriever (no framework state).

Maps ``oam`` records to LangChain ``Document`` objects, decides how a query reaches
the store (text ranked by the store, or a vector from a LangChain model), converts
distances to relevance scores and runs maximal marginal relevance. Every function that
does I/O is a step generator (``_steps``), so sync and async share it.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import numpy as np
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores.utils import maximal_marginal_relevance

from oam_core import OracleMemoryStore, Record, SearchStrategy
from oam_core.apis.metadatajson import check_stored_json
from oam_core.checks import check_int, check_json_text
from oam_core.errors import ConfigurationError, InvalidArgumentError, InvalidFilterError
from oam_core.filters import parse_filter
from oam_core.steps import Steps, call, paired

INTERNAL_KEYS = frozenset({"$agent_memory", "$message"})
"""Metadata keys ``oam`` reserves for itself; never shown to LangChain, never accepted
from it."""

DistanceKind = Literal["cosine", "normalized"]
"""``cosine``: cosine distance in [0, 2]; ``normalized``: ``1 - score`` in [0, 1]
(KEYWORD, HYBRID, a query searched in parts, a reranked search;
docs/store.md#search-strategies)."""


def distance_kind(distance: float) -> DistanceKind:
    """What a distance of ``store.search`` measures, read from the distance itself
    (its ``kind``, docs/store.md#search-strategies): ``cosine`` for a cosine distance,
    ``normalized`` for the others. A plain float (a store of another library) is
    taken as a cosine distance."""
    kind = getattr(distance, "kind", None)
    return "cosine" if kind is None or kind == "cosine" else "normalized"


def relevance(distance: float, kind: DistanceKind) -> float:
    """A distance as the frameworks' relevance score, 1 = best (C12, C29 in docs/failure-modes.md).

    ``1 - d`` for both kinds, as langchain-core's cosine convention
    (``VectorStore._cosine_relevance_score_fn``, used by PGVector) and LangGraph's
    stores give it: for a cosine distance ``d`` in [0, 2] that is the cosine
    similarity (identical = 1, orthogonal = 0, opposite = -1, as InMemoryVectorStore
    and InMemoryStore report it); for a normalized KEYWORD/HYBRID distance in [0, 1],
    the normalized score. ``kind`` is kept for callers that know which one they hold.
    """
    del kind  # the same formula for both kinds (docs/langchain.md)
    # Rounded to 6 places: float32 vectors put an identical text at 0.99999994.
    return round(1.0 - distance, 6)


def check_threshold(value: object, name: str = "score_threshold") -> float | None:
    """A relevance threshold (``score_threshold``): None, or a number in [-1, 1], the
    range of ``relevance`` (a cosine similarity, or a normalized score in [0, 1]).

    Raises:
        InvalidArgumentError: naming ``name`` and the value for anything else (a
            string, a bool, NaN, a number past the range, which no result reaches).
    """
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not -1 <= float(value) <= 1
    ):
        raise InvalidArgumentError(f"{name} must be a number in [-1, 1] or None, got {value!r}")
    return float(value)


def clean_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The caller's metadata of a record, without ``oam``'s internal keys."""
    return {k: v for k, v in (metadata or {}).items() if k not in INTERNAL_KEYS}


def check_metadata(metadata: object, where: str) -> dict[str, Any] | None:
    """Validate one caller metadata dict (None/empty allowed) before writing it.

    Raises:
        ValueError: for a non-dict, a key ``oam`` reserves for itself, or a value
            JSON cannot hold as stored (``metadatajson.check_stored_json``), naming ``where``.
    """
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping):
        raise InvalidArgumentError(f"{where} must be a dict or None, got {metadata!r}")
    reserved = sorted(set(metadata) & INTERNAL_KEYS)
    if reserved:
        raise InvalidArgumentError(f"{where} uses keys reserved by oam: {reserved}")
    check_stored_json(metadata, where)
    return dict(metadata)


def to_document(record: Record) -> Document:
    """An ``oam`` record as a LangChain ``Document`` (id, content, caller metadata)."""
    return Document(
        id=record.id,
        page_content=record.content if record.content is not None else "",
        metadata=clean_metadata(record.metadata),
    )


RECORD_KEY = "oam"
"""Metadata key of a retriever document holding the record's facts (see
``to_retrieved_document``)."""


def to_retrieved_document(record: Record, score: float | None = None) -> Document:
    """A record as a retriever's document: ``to_document``, plus under
    ``metadata["oam"]`` the record's ``record_type``, ``timestamp``, ``created_at``,
    ``thread_id``, ``user_id``, ``agent_id`` and relevance ``score`` (None for MMR).
    Caller metadata that already holds an ``"oam"`` key keeps it (nothing is added).
    """
    doc = to_document(record)
    doc.metadata.setdefault(
        RECORD_KEY,
        {
            "record_type": record.record_type,
            "score": score,
            "timestamp": record.timestamp,
            "created_at": record.created_at,
            "thread_id": record.thread_id,
            "user_id": record.user_id,
            "agent_id": record.agent_id,
        },
    )
    return doc


def current_at(record: Record, now: datetime) -> bool:
    """Whether ``record``'s validity window holds at ``now`` (the store clock's): a
    version that ``update_memory`` replaced or ``invalidate_memory`` ended is read
    by no adapter, by id no more than by search (docs/langchain.md#versions-of-a-memory)."""
    start, end = record.valid_from, record.valid_until
    if start is not None and datetime.fromisoformat(start) > now:
        return False
    return end is None or datetime.fromisoformat(end) > now


def filter_dict(value: object, name: str) -> dict[str, Any]:
    """``value`` as a filter in the ``oam`` language (docs/filters.md): a copy of a
    mapping, checked here so that errors name the caller's ``name`` and the path in
    it (``filter['v'].$bogus``), not where the adapter puts it in the store's filter.

    Raises:
        InvalidFilterError: (a ``ValueError``) naming ``name`` for anything else, such
            as ``InMemoryVectorStore``'s callable filter, or a filter outside the
            language.
        InvalidArgumentError: naming the path for an operand with a NUL or a lone
            surrogate.
    """
    if not isinstance(value, Mapping):
        kind = "a function" if callable(value) else f"{type(value).__name__} {value!r}"
        raise InvalidFilterError(
            f"{name} must be a dict in the oam filter language (docs/filters.md), got {kind}"
        )
    parse_filter(value, name)
    check_json_text(value, name)
    return dict(value)


@dataclass(frozen=True)
class SearchScope:
    """Which records a search sees: scope ids (None = unconstrained), record types and
    a metadata filter in the ``oam`` filter language (docs/filters.md; None = no filter)."""

    record_types: frozenset[str] | None = None
    user_id: str | None = None
    agent_id: str | None = None
    thread_id: str | None = None

    def kwargs(self, metadata_filter: Mapping[str, Any] | None) -> dict[str, Any]:
        """The ``store.search`` keyword arguments of this scope and filter."""
        out: dict[str, Any] = {}
        if self.record_types is not None:
            out["record_types"] = set(self.record_types)
        for name in ("user", "agent", "thread"):
            value = getattr(self, f"{name}_id")
            if value is not None:
                out[f"{name}_id"] = value
                out[f"exact_{name}_match"] = True
        if metadata_filter is not None:
            out["metadata_filter"] = filter_dict(metadata_filter, "filter")
        return out

    def holds(self, record: Record) -> bool:
        """Whether ``record`` lies in this scope (types and ids; not the filter)."""
        if self.record_types is not None and record.record_type not in self.record_types:
            return False
        return all(
            getattr(self, f"{n}_id") is None
            or getattr(record, f"{n}_id") == getattr(self, f"{n}_id")
            for n in ("user", "agent", "thread")
        )


def store_ranks_text(store: OracleMemoryStore) -> bool:
    """Whether ``store.search(query=...)`` ranks a text query fully by itself (a HYBRID
    store without an embedder would rank by keywords alone: embed the query instead)."""
    return store.embedder is not None or store.search_strategy is SearchStrategy.KEYWORD


def embed_query_steps(
    store: OracleMemoryStore, embedding: Embeddings | None, text: str
) -> Steps[Any]:
    """Embed a query: with the LangChain model if given, else the store's embedder.

    Raises:
        ValueError: when neither exists.
    """
    if embedding is not None:
        return (yield from call(paired(embedding.embed_query, embedding.aembed_query), text))
    if store.embedder is not None:
        return (yield from call(store.embedder.embed, [text], is_query=True))
    raise ConfigurationError(
        "this search needs query vectors: give an embedding model or a store embedder"
    )


def embed_documents_steps(
    store: OracleMemoryStore, embedding: Embeddings | None, texts: list[str]
) -> Steps[Any]:
    """Embed document texts (as ``embed_query_steps``)."""
    if embedding is not None:
        return (
            yield from call(paired(embedding.embed_documents, embedding.aembed_documents), texts)
        )
    if store.embedder is not None:
        return (yield from call(store.embedder.embed, texts))
    raise ConfigurationError(
        "this search needs vectors: give an embedding model or a store embedder"
    )


def _vector(result: Any) -> list[float]:
    arr = np.asarray(result, dtype=np.float32)
    return [float(x) for x in (arr[0] if arr.ndim == 2 else arr)]


def search_steps(
    store: OracleMemoryStore,
    scope: SearchScope,
    k: int,
    *,
    query: str | None = None,
    vector: Sequence[float] | None = None,
    embedding: Embeddings | None = None,
    metadata_filter: Mapping[str, Any] | None = None,
) -> Steps[list[tuple[Record, float, DistanceKind]]]:
    """Search the store; returns ``(record, distance, kind)`` best first.

    A ``vector`` is searched as is (cosine). A text ``query`` is ranked by the store
    when it can (its embedder, or a KEYWORD/HYBRID strategy), else embedded with
    ``embedding`` and searched by vector.

    Raises:
        ValueError: for k < 1, an invalid filter, or a text query that neither the
            store nor ``embedding`` can turn into a ranking.
    """
    check_int(k, "k", minimum=1)
    kwargs = scope.kwargs(metadata_filter)
    if vector is None and query is not None and store_ranks_text(store):
        hits = yield from call(store.search, query, k, **kwargs)
    else:
        if vector is None:
            if embedding is None:
                raise ConfigurationError(
                    "the store has no embedder and VECTOR search: pass an embedding model"
                )
            if query is None:
                raise InvalidArgumentError("search needs a query or a vector")
            vector = _vector(
                (yield from call(paired(embedding.embed_query, embedding.aembed_query), query))
            )
        hits = yield from call(store.search, None, k, query_vector=list(vector), **kwargs)
    return [(record, float(distance), distance_kind(distance)) for record, distance in hits]


def mmr_steps(
    store: OracleMemoryStore,
    scope: SearchScope,
    *,
    query: str | None,
    vector: Sequence[float] | None,
    k: int,
    fetch_k: int,
    lambda_mult: float,
    embedding: Embeddings | None,
    metadata_filter: Mapping[str, Any] | None,
) -> Steps[list[Record]]:
    """Maximal marginal relevance: fetch the ``fetch_k`` best records, then pick ``k``
    of them (all of them when ``fetch_k < k``, as LangChain's stores do) that balance relevance and diversity (``lambda_mult`` 1 = relevance only, 0 =
    diversity only), with langchain-core's ``maximal_marginal_relevance``.

    Candidates are the nearest by vector, or, on a KEYWORD store (which ranks text
    only), the best ranked by the text ``query``. Their vectors are the embeddings
    of their stored text (the store does not hand out stored vectors), made by
    ``embedding`` or the store's embedder.

    Raises:
        ValueError: for k or fetch_k < 1, ``lambda_mult`` outside [0, 1], no
            embedding model, or a vector-only query on a KEYWORD store.
    """
    check_int(k, "k", minimum=1)
    check_int(fetch_k, "fetch_k", minimum=1)
    if isinstance(lambda_mult, bool) or not isinstance(lambda_mult, (int, float)):
        raise InvalidArgumentError(f"lambda_mult must be a number in [0, 1], got {lambda_mult!r}")
    if not 0.0 <= float(lambda_mult) <= 1.0:
        raise InvalidArgumentError(f"lambda_mult must be in [0, 1], got {lambda_mult!r}")
    keyword = store.search_strategy is SearchStrategy.KEYWORD
    if keyword and query is None:
        raise ConfigurationError(
            "MMR by vector on a KEYWORD store: the store ranks text only; search by query text"
        )
    if vector is None:
        vector = _vector((yield from embed_query_steps(store, embedding, query or "")))
    hits = yield from search_steps(
        store,
        scope,
        fetch_k,  # as InMemoryVectorStore and PGVector: at most fetch_k come back
        query=query if keyword else None,
        vector=None if keyword else vector,
        metadata_filter=metadata_filter,
    )
    if not hits:
        return []
    records = [record for record, _, _ in hits]
    texts = [r.content or "" for r in records]
    rows = yield from embed_documents_steps(store, embedding, texts)
    matrix = np.asarray(rows, dtype=np.float32).tolist()
    picked = maximal_marginal_relevance(
        np.asarray(vector, dtype=np.float32), matrix, lambda_mult=float(lambda_mult), k=k
    )
    return [records[i] for i in picked]
