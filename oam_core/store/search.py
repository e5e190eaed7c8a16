"""``OracleMemoryStore.search``: check the query, rank candidates with the store's
strategy (or the back end's native ranking), fuse, rerank and load the best records
(docs/store.md#searching, docs/retrieval.md).

``search`` below is the body of the public method, moved here unchanged but for
``self`` -> ``store``; the ranking helpers that were private methods of the store
follow it.
"""

from __future__ import annotations

import builtins
import warnings
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import numpy as np

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.records import Record
from oam_core.errors import ConfigurationError
from oam_core.rerankers import IReranker
from oam_core.store import planning
from oam_core.store.args import filter_arg, findable, scope_arg, types_arg
from oam_core.store.backend import Predicate
from oam_core.store.chunking import chunk_text
from oam_core.store.options import SearchStrategy
from oam_core.store.ranking import normalized_distances, rrf, rrf_distance
from oam_core.store.runtime import StoreRuntime
from oam_core.store.signals import POOL, passage_text, signal_lists
from oam_core.store.text import query_terms

__all__ = ["HYBRID_DEPTH", "search"]

HYBRID_DEPTH = 50
"""Candidates each list of a HYBRID search ranks at least, before fusion."""


def search(
    store: StoreRuntime,
    query: str | None,
    k: int,
    *,
    strategy: SearchStrategy,
    reranker: IReranker | None,
    query_vector: Any,
    thread_id: Maybe[str | None],
    user_id: Maybe[str | None],
    agent_id: Maybe[str | None],
    exact_user_match: bool,
    exact_agent_match: bool,
    exact_thread_match: bool,
    record_types: Iterable[str] | None,
    metadata_filter: Maybe[dict[str, Any] | None],
) -> builtins.list[tuple[Record, float]]:
    """The body of ``OracleMemoryStore.search`` (same arguments, result and errors),
    on the store's runtime, with the strategy of this call and the store's reranker."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an int >= 1, got {k!r}")
    k = planning.clamp_count(k)
    if (query is None) == (query_vector is None):
        raise ValueError("give exactly one of query and query_vector")
    if query is not None and (not isinstance(query, str) or not query.strip()):
        raise ValueError(f"query must be a non-blank string, got {query!r}")
    if query is not None:
        planning.check_text(query, "query")
    if query is not None and store.embedder is None and strategy is not SearchStrategy.KEYWORD:
        # Before anything runs: HYBRID would otherwise rank by keywords alone, silently.
        raise ConfigurationError(
            f"{strategy.name} search of a text query needs an embedder, and this store "
            "has none (embedder=None): configure one, pass query_vector, or use "
            "search_strategy=KEYWORD"
        )
    qvec = None
    if query_vector is not None:
        if strategy is SearchStrategy.KEYWORD:
            raise ValueError("KEYWORD search ranks text; query_vector is not accepted")
        qvec = planning.to_vector(query_vector, "query_vector")
        if not qvec.any():
            raise ValueError(
                "query_vector is all zeros: a vector without a direction has no cosine "
                "distance to anything; pass a non-zero vector"
            )
        if store.vector_dim is not None and qvec.shape[0] != store.vector_dim:
            raise ValueError(
                f"query_vector dimension {qvec.shape[0]} does not match the store's "
                f"dimension {store.vector_dim}"
            )
    types = types_arg(record_types)
    pred = Predicate(
        record_types=types,
        now=store.now(),
        thread_id=scope_arg(thread_id, "thread_id") if exact_thread_match else NOT_SET,
        user_id=scope_arg(user_id, "user_id") if exact_user_match else NOT_SET,
        agent_id=scope_arg(agent_id, "agent_id") if exact_agent_match else NOT_SET,
        metadata=filter_arg(metadata_filter),
    )
    if not findable(pred):
        return []
    # A reranker re-scores the first stage's best ``candidates``: rank that deep.
    depth = k if reranker is None or query is None else max(k, reranker.candidates)
    loaded: dict[Hashable, Record] | None = None
    backend = store.backend
    native = backend.native_search(query, qvec, depth, pred)
    if native is not None:
        ranked = native
    elif qvec is not None:
        ranked = _vector_ranking(store, [qvec], depth, pred, fused=False)
    elif strategy is SearchStrategy.KEYWORD:
        ranked = _keyword_ranking(store, _query_parts(store, query or ""), depth, pred)
    else:
        parts = _query_parts(store, query or "")
        vectors = _query_vectors(store, parts, strategy)
        if strategy is SearchStrategy.VECTOR:
            ranked = _vector_ranking(store, vectors, depth, pred, fused=len(parts) > 1)
        else:
            depth = max(depth, HYBRID_DEPTH)
            v_lists, kw_lists = backend.rank_hybrid(
                vectors, [query_terms(p) for p in parts], depth, pred
            )
            lists = [[key for key, _ in lst] for lst in (*v_lists, *kw_lists)]
            ranked, loaded = _hybrid_ranking(store, query or "", lists, k, pred)
    if reranker is not None and query is not None:
        ranked, loaded = _reranked(store, reranker, query, ranked, k, loaded)
    return _materialize(store, ranked, k, loaded)


def _hybrid_ranking(
    store: StoreRuntime,
    query: str,
    lists: Sequence[Sequence[Hashable]],
    k: int,
    pred: Predicate,
) -> tuple[builtins.list[tuple[Hashable, float]], dict[Hashable, Record]]:
    """Fuse the text lists, then the query's speaker and date lists over the fused
    head (store/signals.py). Returns ``(key, distance)`` pairs from the final fused
    scores, and the head's loaded records."""
    fused = sorted(store.backend.fuse(lists), key=lambda kv: -kv[1])
    pool = [key for key, _ in fused[: max(POOL, k)]]
    records = store.backend.load(pool)
    weights = [1.0] * len(lists)
    extra = signal_lists(query, pool, records, pred.now)
    if extra:
        lists = [*lists, *(keys for keys, _ in extra)]
        weights += [weight for _, weight in extra]
        fused = builtins.list(rrf(lists, weights=weights).items())
    return [(key, rrf_distance(s, sum(weights))) for key, s in fused], records


def _reranked(
    store: StoreRuntime,
    reranker: IReranker,
    query: str,
    ranked: Sequence[tuple[Hashable, float]],
    k: int,
    loaded: dict[Hashable, Record] | None,
) -> tuple[builtins.list[tuple[Hashable, float]], dict[Hashable, Record]]:
    """The first stage's best ``max(k, reranker.candidates)`` records, re-scored:
    distance ``1 - sigmoid(score)`` (docs/retrieval.md)."""
    head = [key for key, _ in sorted(ranked, key=lambda kv: kv[1])]
    head = head[: max(k, reranker.candidates)]
    records = dict(loaded or {})
    missing = [key for key in head if key not in records]
    if missing:
        records.update(store.backend.load(missing))
    head = [key for key in head if key in records]
    if not head:
        return [], records
    scores = np.asarray(
        reranker.score(query, [passage_text(records[key]) for key in head]), dtype=np.float64
    )
    if scores.shape != (len(head),) or not np.isfinite(scores).all():
        raise ValueError(
            f"reranker {reranker!r} returned scores of shape {scores.shape}, expected "
            f"{len(head)} finite values"
        )
    distances = 1.0 / (1.0 + np.exp(np.clip(scores, -60.0, 60.0)))
    return [(key, float(d)) for key, d in zip(head, distances, strict=True)], records


def _query_vectors(
    store: StoreRuntime, parts: Sequence[str], strategy: SearchStrategy
) -> builtins.list[Any]:
    """The query embeddings of ``parts`` (none without an embedder)."""
    if store.embedder is None:
        return []
    _warn_unembedded_once(store, strategy)
    return list(store.embed(parts, is_query=True))


def _warn_unembedded_once(store: StoreRuntime, strategy: SearchStrategy) -> None:
    """Warn (once per store object) when records have search rows without a vector:
    vector search cannot see them until ``reindex`` embeds them."""
    if store.unembedded_checked:
        return
    store.unembedded_checked = True
    missing = store.backend.unembedded(None)
    if not missing:
        return
    family, record_id = missing[0]
    how = "by keywords only" if strategy is SearchStrategy.HYBRID else "not at all"
    warnings.warn(
        f"{len(missing)} record(s) of this store (e.g. {family} {record_id!r}) have "
        f"search rows without a vector, written without an embedder; "
        f"{strategy.name} search finds them {how} until store.reindex() "
        "(CLI: oam reindex) embeds them",
        UserWarning,
        stacklevel=6,
    )


def _query_parts(store: StoreRuntime, query: str) -> builtins.list[str]:
    return chunk_text(query, store.chunk_chars) or [query]


def _with_ties(
    rank: Callable[[int], builtins.list[tuple[Hashable, float]]], k: int
) -> builtins.list[tuple[Hashable, float]]:
    """``rank(n)`` (the ``n`` nearest ``(key, distance)``) deep enough to hold every
    result tied with the k-th: back ends cut a tie at any order, and the final sort
    breaks ties by record type and id (docs/store.md#searching), so ``search(k=1)``
    is the first result of ``search(k=3)``. One more than ``k`` is asked for, and
    twice as many while the last one still ties the k-th."""
    n = k + 1
    while True:
        ranked = rank(n)
        if len(ranked) < n or n >= planning.MAX_ROWS:
            return ranked
        distances = sorted(d for _, d in ranked)
        if distances[n - 1] != distances[k - 1]:
            return ranked
        n = min(2 * n, planning.MAX_ROWS)


def _vector_ranking(
    store: StoreRuntime, vectors: Sequence[Any], k: int, pred: Predicate, *, fused: bool
) -> builtins.list[tuple[Hashable, float]]:
    if not fused:
        return _with_ties(lambda n: store.backend.rank_vector(vectors, n, pred)[0], k)
    lists = store.backend.rank_vector(vectors, k, pred)
    scores = rrf([[key for key, _ in lst] for lst in lists])
    return [(key, rrf_distance(s, len(lists))) for key, s in scores.items()]


def _keyword_ranking(
    store: StoreRuntime, parts: Sequence[str], k: int, pred: Predicate
) -> builtins.list[tuple[Hashable, float]]:
    if len(parts) == 1:
        terms = query_terms(parts[0])
        return _with_ties(
            lambda n: normalized_distances(store.backend.rank_keyword(terms, n, pred)), k
        )
    lists = [store.backend.rank_keyword(query_terms(p), k, pred) for p in parts]
    scores = rrf([[key for key, _ in lst] for lst in lists])
    return [(key, rrf_distance(s, len(lists))) for key, s in scores.items()]


def _materialize(
    store: StoreRuntime,
    ranked: Sequence[tuple[Hashable, float]],
    k: int,
    loaded: dict[Hashable, Record] | None = None,
) -> builtins.list[tuple[Record, float]]:
    ordered = sorted(ranked, key=lambda kv: kv[1])
    limit = max(k * 2, k + 10)  # and every result tied with the k-th (``_with_ties``)
    kth = ordered[k - 1][1] if len(ordered) >= k else None
    best = [kv for i, kv in enumerate(ordered) if i < limit or (kth is not None and kv[1] <= kth)]
    loaded = loaded or {}
    records = {key: loaded[key] for key, _ in best if key in loaded}
    missing = [key for key, _ in best if key not in loaded]
    if missing:
        records.update(store.backend.load(missing))
    out = [(records[key], float(d)) for key, d in best if key in records]
    out.sort(key=lambda rd: (rd[1], rd[0].record_type, rd[0].id))
    return out[:k]
