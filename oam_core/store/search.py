"""``OracleMemoryStore.search``: check the query, rank candidates with the store's
strategy (or the back end's native ranking), fuse them once (``store/fusion.py``),
rerank and load the best records (docs/store.md#searching, docs/retrieval.md).

``search`` below is the body of the public method; the ranking helpers follow it.
Every distance it returns is a ``fusion.Distance``, which says what it measures.
"""

from __future__ import annotations

import builtins
import itertools
import math
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any, TypeVar

import numpy as np

from oam_core import checks
from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.records import Record
from oam_core.apis.thread import participant_name
from oam_core.checks import Vector, filter_arg, findable, scope_arg, types_arg
from oam_core.errors import ConfigurationError, InvalidArgumentError
from oam_core.rerankers import IReranker
from oam_core.store import advice
from oam_core.store.backend import Predicate
from oam_core.store.fusion import (
    DEFAULT_FUSION,
    HYBRID_DEPTH,
    DistanceKind,
    FusionConfig,
    Signal,
    asks_for_advice,
    distance_type,
    feedback_terms,
    fuse,
    list_weights,
    normalized_distances,
    query_signals,
    rrf_distance,
    signal_lists,
    speaker_names,
)
from oam_core.store.headtail import tied_ranks, with_tail
from oam_core.store.options import SearchStrategy
from oam_core.store.runtime import StoreRuntime
from oam_core.store.temporal import query_spans
from oam_core.store.text import chunk_text, query_terms
from oam_core.store.vectorlists import vector_lists

__all__ = ["HYBRID_DEPTH", "search", "tied_ranks"]

T = TypeVar("T")

Ranked = builtins.list[tuple[Hashable, float]]
"""``(record key, distance)`` pairs."""


def search(
    runtime: StoreRuntime,
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
    as_of: Maybe[str | datetime | None] = NOT_SET,
    fusion: FusionConfig = DEFAULT_FUSION,
) -> builtins.list[tuple[Record, float]]:
    """The body of ``OracleMemoryStore.search`` (same arguments, result and errors);
    ``fusion``: how HYBRID fuses its lists. Each distance is a ``fusion.Distance``."""
    k = checks.clamp_count(checks.check_int(k, "k", minimum=1))
    if (query is None) == (query_vector is None):
        raise InvalidArgumentError("give exactly one of query and query_vector")
    if query is not None and (not isinstance(query, str) or not query.strip()):
        raise InvalidArgumentError(f"query must be a non-blank string, got {query!r}")
    if query is not None:
        checks.check_text(query, "query")
    if query is not None and runtime.embedder is None and strategy is not SearchStrategy.KEYWORD:
        # Before anything runs: HYBRID would otherwise rank by keywords alone, silently.
        raise ConfigurationError(
            f"{strategy.name} search of a text query needs an embedder, and this store "
            "has none (embedder=None): configure one, pass query_vector, or use "
            "search_strategy=KEYWORD"
        )
    qvec = None if query_vector is None else _query_vector_arg(runtime, strategy, query_vector)
    types = types_arg(record_types)
    now = runtime.now()
    pred = Predicate(
        record_types=types,
        now=now,
        thread_id=_scope(thread_id, "thread_id", exact_thread_match),
        user_id=_scope(user_id, "user_id", exact_user_match),
        agent_id=_scope(agent_id, "agent_id", exact_agent_match),
        metadata=filter_arg(metadata_filter),
        valid_at=checks.as_of_arg(as_of, default=now),
    )
    if not findable(pred):
        return []
    # A reranker re-scores the first stage's best ``candidates``: rank that deep.
    depth = k if reranker is None or query is None else max(k, reranker.candidates)
    loaded: dict[Hashable, Record] | None = None
    kind = DistanceKind.COSINE
    native = _native_ranking(runtime, query, qvec, depth, pred, fusion)
    if native is not None:
        ranked, loaded, kind = native
    elif qvec is not None:
        ranked = _vector_ranking(runtime, [qvec], depth, pred)
    else:
        ranked, loaded, kind = _text_ranking(runtime, strategy, query or "", depth, pred, fusion)
    if reranker is not None and query is not None:
        ranked, loaded = _reranked(runtime, reranker, query, ranked, k, loaded)
        kind = DistanceKind.RERANKED
    return _materialize(runtime, ranked, k, kind, loaded)


def _native_ranking(
    runtime: StoreRuntime,
    query: str | None,
    qvec: Vector | None,
    depth: int,
    pred: Predicate,
    fusion: FusionConfig,
) -> tuple[Ranked, dict[Hashable, Record] | None, DistanceKind] | None:
    """The back end's own ranking (``Backend.native_search``: Oracle's hybrid index),
    or None to rank with the shared logic. For a text query, the query's signal
    lists fuse onto the index's first ``fusion.depth`` results (their head) and the
    rest follow (``headtail``), so a smaller ``k`` gives the first results of a
    larger one; ``depth``: how many results are needed."""
    backend = runtime.backend
    if not backend.ranks_natively:
        return None
    if query is None:
        found = backend.native_search(None, qvec, depth, pred)
        return None if found is None else (found, None, DistanceKind.HYBRID_INDEX)

    def fetch(n: int) -> builtins.list[Ranked]:
        return [backend.native_search(query, None, n, pred) or []]

    native = backend.native_search(query, None, max(depth, fusion.depth), pred)
    if native is None:
        return None
    first = [native[: fusion.depth]]
    ranked, loaded, kind = _hybrid_ranking(
        runtime,
        query,
        [[key for key, _ in first[0]]],
        [fusion.index_weight],
        pred,
        fusion,
        native,
        ranks=[tied_ranks(first[0])],
    )
    if kind is DistanceKind.FUSED:
        ranked = with_tail(ranked, first, fetch, fusion.depth, depth)
    return ranked, loaded, kind


def _scope(value: Maybe[str | None], name: str, exact: bool) -> Maybe[str | None]:
    """One scope of a search: ``value`` (checked even when it does not filter) when
    ``exact`` is True, an omitted one then meaning None (only records without that
    scope, as the reference SDK's default None does), else unconstrained
    (docs/store.md#scopes).

    Raises:
        InvalidArgumentError: for a ``value`` that is not a str, None or omitted, or an
            ``exact`` that is not a bool (named ``exact_<scope>_match``).
    """
    checked = scope_arg(value, name)
    if checks.check_bool(exact, f"exact_{name.removesuffix('_id')}_match"):
        return None if checked is NOT_SET else checked
    return NOT_SET


def _query_vector_arg(runtime: StoreRuntime, strategy: SearchStrategy, query_vector: Any) -> Any:
    """``query_vector`` checked and as a float32 array (``checks.to_vector``)."""
    if strategy is SearchStrategy.KEYWORD:
        raise InvalidArgumentError("KEYWORD search ranks text; query_vector is not accepted")
    qvec = checks.to_vector(query_vector, "query_vector")
    if not qvec.any():
        raise InvalidArgumentError(
            "query_vector is all zeros: a vector without a direction has no cosine "
            "distance to anything; pass a non-zero vector"
        )
    if runtime.vector_dim is not None and qvec.shape[0] != runtime.vector_dim:
        raise InvalidArgumentError(
            f"query_vector dimension {qvec.shape[0]} does not match the store's "
            f"dimension {runtime.vector_dim}"
        )
    return qvec


def _text_ranking(
    runtime: StoreRuntime,
    strategy: SearchStrategy,
    query: str,
    depth: int,
    pred: Predicate,
    fusion: FusionConfig,
) -> tuple[Ranked, dict[Hashable, Record] | None, DistanceKind]:
    """The first stage of a text query by ``strategy``: ``(key, distance)`` pairs (at
    least ``depth`` when that many match), the records it loaded (HYBRID: the
    signals' pool) and the distances' kind. HYBRID fuses each list's first
    ``fusion.depth`` entries, whatever ``depth`` (``headtail``)."""
    parts = _query_parts(runtime, query)
    if strategy is SearchStrategy.KEYWORD:
        ranked, kind = _keyword_ranking(runtime, parts, depth, pred, fusion)
        return ranked, None, kind
    if strategy is SearchStrategy.VECTOR:
        vectors = _query_vectors(runtime, parts, strategy)
        return _vector_ranking(runtime, vectors, depth, pred), None, DistanceKind.COSINE
    vectors, share = _hybrid_vectors(runtime, query, parts, fusion)
    terms = [query_terms(p) for p in parts]

    def fetch(n: int) -> builtins.list[Ranked]:
        v_lists, kw_lists = runtime.backend.rank_hybrid(vectors, terms, n, pred)
        return [*v_lists, *kw_lists]

    first = fetch(fusion.depth)
    # Records every list scores alike share one rank (``tied_ranks``).
    alike = evidence(first)
    ranks = [tied_ranks(lst, alike) for lst in first]
    # A question asking for advice weighs its keyword lists less (fusion.list_weights).
    n_vector = len(vectors)
    weights = list_weights(query, n_vector, len(first) - n_vector, fusion, vector_share=share)
    # One question vector at full weight (not in parts, not asking for advice): the
    # second-stage vector lists may share it (store/vectorlists.py).
    second = vectors[0] if n_vector == 1 and share == 1.0 else None
    lists = [[key for key, _ in lst] for lst in first]
    ranked, loaded, kind = _hybrid_ranking(
        runtime, query, lists, weights, pred, fusion, ranks=ranks, query_vector=second
    )
    return with_tail(ranked, first, fetch, fusion.depth, depth), loaded, kind


def _hybrid_ranking(
    runtime: StoreRuntime,
    query: str,
    lists: Sequence[Sequence[Hashable]],
    weights: Sequence[float],
    pred: Predicate,
    fusion: FusionConfig,
    index: Ranked | None = None,
    *,
    ranks: Sequence[Sequence[int]] | None = None,
    query_vector: Vector | None = None,
) -> tuple[Ranked, dict[Hashable, Record], DistanceKind]:
    """Fuse the text lists, then the query's signal lists (store/fusion.py; those of
    the query's kind, ``fusion.query_signals``) read from the fused head onto the same
    scores: each list enters the fusion once. With ``query_vector`` (the question's
    embedding, whose vector list is ``lists[0]``), the second-stage vector lists
    (store/vectorlists.py) join the final fusion with shares of that list's weight.

    ``lists``: each text list's first ``fusion.depth`` entries, the same for every
    ``k`` (``headtail``); the signal lists read the fused head's first
    ``fusion.pool`` records. Returns ``(key, distance)`` pairs from the fused scores,
    the head's loaded records and the distances' kind. ``index``: a back end's own
    fused ranking (``lists`` is then its first entries), returned as it is, with its
    distances, when no signal list applies. ``ranks``: each list's ranks, tied
    entries sharing one (``fuse``)."""
    fused = fuse(lists, weights, rrf_k=fusion.rrf_k, ranks=ranks)
    pool = [key for key, _ in fused[: fusion.pool]]
    records = runtime.backend.load_for_ranking(pool)  # read, never returned
    speakers = speaker_names(records)
    pooled = tuple(records.get(key) for key in pool)
    extra = _signal_lists(query, pool, records, pooled, pred, fusion, speakers)
    text_scores = dict(fused)
    extra_ranks = [
        signal_ranks(keys, text_scores, records, by_content=signal is Signal.OWN_TEXT)
        for signal, keys in extra
    ]
    feedback = _feedback(runtime, query, pool, records, pooled, pred, fusion, speakers)
    if feedback:
        extra.append((Signal.FEEDBACK, [key for key, _ in feedback]))
        extra_ranks.append(tied_ranks(feedback))
    if query_vector is not None:
        found = vector_lists(
            runtime.backend, query, query_vector, pool, records, speakers, pred, fusion
        )
        if found:
            shared = sum(fusion.weight(signal) for signal, _ in found)
            weights = [max(0.0, weights[0] - shared), *weights[1:]]
            fused = fuse(lists, weights, rrf_k=fusion.rrf_k, ranks=ranks)
            for signal, ranked in found:
                extra.append((signal, [key for key, _ in ranked]))
                extra_ranks.append(tied_ranks(ranked))
    if not extra and index is not None:
        return index, records, DistanceKind.HYBRID_INDEX
    all_weights = [*weights, *(fusion.weight(signal) for signal, _ in extra)]
    if extra:
        fused = fuse(
            [keys for _, keys in extra],
            all_weights[len(weights) :],
            rrf_k=fusion.rrf_k,
            onto=fused,
            ranks=extra_ranks,
        )
    best = sum(all_weights)
    ranked = [(key, rrf_distance(s, best, fusion.rrf_k)) for key, s in fused]
    return ranked, records, DistanceKind.FUSED


def _feedback(
    runtime: StoreRuntime,
    query: str,
    pool: Sequence[Hashable],
    records: dict[Hashable, Record],
    pooled: tuple[Record | None, ...],
    pred: Predicate,
    fusion: FusionConfig,
    speakers: dict[Hashable, str | None],
) -> Ranked:
    """The feedback keyword list of a HYBRID search (store/fusion.py, ``feedback_terms``): the keyword
    index searched once more with the query's terms and words of the fused head, as
    ``(key, BM25 score)`` pairs; none for a question asking for advice, or when no
    word qualifies."""
    if Signal.FEEDBACK not in fusion.signals or asks_for_advice(query):
        return []
    terms = list(
        _per_pool(
            ("feedback", query, tuple(pool)),
            pooled,
            lambda: tuple(feedback_terms(query, pool, records, speakers=speakers)),
        )
    )
    if not terms:
        return []
    return runtime.backend.rank_keyword(terms, fusion.depth, pred)


def _signal_lists(
    query: str,
    pool: Sequence[Hashable],
    records: dict[Hashable, Record],
    pooled: tuple[Record | None, ...],
    pred: Predicate,
    fusion: FusionConfig,
    speakers: dict[Hashable, str | None],
) -> builtins.list[tuple[Signal, builtins.list[Hashable]]]:
    """``fusion.signal_lists`` of the search, kept per query, pool and the query's
    spans (the one use of the clock) for the same record objects (``_per_pool``)."""
    which = fusion.signals
    spans = query_spans(query, pred.now) if Signal.DATE in query_signals(query, which) else []

    def lists() -> tuple[tuple[Signal, tuple[Hashable, ...]], ...]:
        found = signal_lists(query, pool, records, pred.now, which, speakers=speakers, spans=spans)
        return tuple((signal, tuple(keys)) for signal, keys in found)

    key = ("signals", query, tuple(pool), frozenset(which), tuple(spans))
    return [(signal, list(keys)) for signal, keys in _per_pool(key, pooled, lists)]


POOL_MEMO_SIZE = 512
"""How many searches' feedback words and signal lists ``_per_pool`` keeps."""

_POOL_KEPT: dict[Hashable, tuple[tuple[Record | None, ...], Any]] = {}


def _per_pool(key: Hashable, pooled: tuple[Record | None, ...], compute: Callable[[], T]) -> T:
    """``compute()`` (an immutable value, a pure function of ``key`` and the pool's
    records), kept per ``key`` for the same record objects ``pooled`` (held with
    the value, so compared by identity): a back end sharing its loaded records
    (``Backend.shares_loaded``) hands out the same objects until a write, and a
    back end loading new objects each search never finds them kept."""
    kept = _POOL_KEPT.get(key)
    if (
        kept is not None
        and len(kept[0]) == len(pooled)
        and all(a is b for a, b in zip(kept[0], pooled, strict=True))
    ):
        value: T = kept[1]
        return value
    value = compute()
    if len(_POOL_KEPT) >= POOL_MEMO_SIZE:
        _POOL_KEPT.clear()
    _POOL_KEPT[key] = (pooled, value)
    return value


def _reranked(
    runtime: StoreRuntime,
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
        records.update(runtime.backend.load_for_ranking(missing))
    head = [key for key in head if key in records]
    if not head:
        return [], records
    scores = np.asarray(
        reranker.score(query, [passage_text(records[key]) for key in head]), dtype=np.float64
    )
    if scores.shape != (len(head),) or not np.isfinite(scores).all():
        raise InvalidArgumentError(
            f"reranker {reranker!r} returned scores of shape {scores.shape}, expected "
            f"{len(head)} finite values"
        )
    distances = 1.0 / (1.0 + np.exp(np.clip(scores, -60.0, 60.0)))
    return [(key, float(d)) for key, d in zip(head, distances, strict=True)], records


def passage_text(record: Record) -> str:
    """What a reranker reads of a record: ``"<participant>: <content>"`` for a message
    naming its speaker, else the content (``""`` for none)."""
    content = record.content or ""
    name = participant_name(record.metadata)
    return f"{name}: {content}" if name and content else content


def _query_vectors(
    runtime: StoreRuntime, parts: Sequence[str], strategy: SearchStrategy
) -> builtins.list[Any]:
    """The query embeddings of ``parts`` (none without an embedder)."""
    if runtime.embedder is None:
        return []
    _warn_unembedded_once(runtime, strategy)
    return list(runtime.embed(parts, is_query=True))


def _hybrid_vectors(
    runtime: StoreRuntime, query: str, parts: Sequence[str], fusion: FusionConfig
) -> tuple[builtins.list[Any], float]:
    """The vectors of a HYBRID search and the share of a vector list's weight each
    weighs: a question asking for advice also ranks by its topic vector, at half
    weight each (store/advice.py), any other query by its parts' vectors."""
    if not asks_for_advice(query):
        return _query_vectors(runtime, parts, SearchStrategy.HYBRID), 1.0
    texts = advice.search_texts(query, parts, fusion)
    return advice.search_vectors(_query_vectors(runtime, texts, SearchStrategy.HYBRID), len(parts))


def _warn_unembedded_once(runtime: StoreRuntime, strategy: SearchStrategy) -> None:
    """Warn (once per store object) when records have search rows without a vector:
    vector search cannot see them until ``reindex`` embeds them."""
    if runtime.unembedded_checked:
        return
    runtime.unembedded_checked = True
    missing = runtime.backend.unembedded(None)
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
        stacklevel=7,
    )


def _query_parts(runtime: StoreRuntime, query: str) -> builtins.list[str]:
    return chunk_text(query, runtime.chunk_chars) or [query]


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
        if len(ranked) < n or n >= checks.MAX_ROWS:
            return ranked
        distances = sorted(d for _, d in ranked)
        if distances[n - 1] != distances[k - 1]:
            return ranked
        n = min(2 * n, checks.MAX_ROWS)


def _vector_ranking(
    runtime: StoreRuntime, vectors: Sequence[Any], k: int, pred: Predicate
) -> builtins.list[tuple[Hashable, float]]:
    """The ``k`` records nearest the query's vectors (one per part of a long query):
    each at its smallest cosine distance to any part, so the distance stays a
    cosine one, and every record tied with the ``k``-th (``_with_ties``). Exact: a
    record among the ``n`` nearest by that measure is among the ``n`` nearest of the
    part it is nearest to, or tied with that part's ``n``-th, and then with the
    ``n``-th by that measure too."""
    if len(vectors) == 1:
        return _with_ties(lambda n: runtime.backend.rank_vector(vectors, n, pred)[0], k)

    def nearest(n: int) -> builtins.list[tuple[Hashable, float]]:
        best: dict[Hashable, float] = {}
        for ranked in runtime.backend.rank_vector(vectors, n, pred):
            for key, d in ranked:
                if d < best.get(key, math.inf):
                    best[key] = d
        return sorted(best.items(), key=itemgetter(1))[:n]

    return _with_ties(nearest, k)


def _keyword_ranking(
    runtime: StoreRuntime, parts: Sequence[str], k: int, pred: Predicate, fusion: FusionConfig
) -> tuple[Ranked, DistanceKind]:
    """KEYWORD: one part's BM25 ranking (``_with_ties``, distances relative to the best
    match), or the parts' rankings fused by RRF, each its first ``fusion.depth``
    entries whatever ``k``, deeper records following (``headtail``)."""
    if len(parts) == 1:
        terms = query_terms(parts[0])
        ranked = _with_ties(
            lambda n: normalized_distances(runtime.backend.rank_keyword(terms, n, pred)), k
        )
        return ranked, DistanceKind.KEYWORD
    each = [query_terms(p) for p in parts]

    def fetch(n: int) -> builtins.list[Ranked]:
        return [runtime.backend.rank_keyword(terms, n, pred) for terms in each]

    lists = fetch(fusion.depth)
    alike = evidence(lists)
    scores = fuse(
        [[key for key, _ in lst] for lst in lists], ranks=[tied_ranks(x, alike) for x in lists]
    )
    head = [(key, rrf_distance(s, len(lists))) for key, s in scores]
    return with_tail(head, lists, fetch, fusion.depth, k), DistanceKind.FUSED


def _materialize(
    runtime: StoreRuntime,
    ranked: Sequence[tuple[Hashable, float]],
    k: int,
    kind: DistanceKind,
    loaded: dict[Hashable, Record] | None = None,
) -> builtins.list[tuple[Record, float]]:
    ordered = sorted(ranked, key=lambda kv: kv[1])
    limit = max(k * 2, k + 10)  # and every result tied with the k-th (``_with_ties``)
    kth = ordered[k - 1][1] if len(ordered) >= k else None
    best = [kv for i, kv in enumerate(ordered) if i < limit or (kth is not None and kv[1] <= kth)]
    backend = runtime.backend
    shared = backend.shares_loaded  # records held for later searches: read only
    loaded = loaded or {}
    records = {key: loaded[key] for key, _ in best if key in loaded}
    missing = [key for key, _ in best if key not in loaded]
    if missing:
        records.update(backend.load_for_ranking(missing) if shared else backend.load(missing))
    as_distance = distance_type(kind)
    out = [(records[key], as_distance(d), key) for key, d in best if key in records]
    out.sort(key=lambda rdk: (rdk[1], rdk[0].record_type, rdk[0].id))
    out = out[:k]
    if not shared:
        return [(record, d) for record, d, _ in out]
    own = backend.load([key for _, _, key in out])  # the caller's own records
    return [(own[key], d) for _, d, key in out if key in own]


# -- ties: rank positions where equal scores share one rank ---------------------------
# A back end's ranked list orders exactly as relevant records (the same text: the same
# vector, the same BM25 score) one after another, in the order it read them;
# reciprocal rank fusion reads positions, so without shared ranks HYBRID would return
# exact duplicates at different distances, in insertion order. Every entry of a tie
# group gets the rank of the group's first entry (1, 2, 2, 4), so tied records get
# equal fused scores and come out by record type then id, as under VECTOR and KEYWORD
# (docs/store.md#search-strategies). ``tied_ranks`` is in store/headtail.py (the tail
# ranks by it too); ``evidence`` says when records are scored alike.


def evidence(lists: Sequence[Sequence[tuple[Hashable, float]]]) -> dict[Hashable, object]:
    """Per key of ``lists``, its value in each list (None where absent): two records
    tie in one list only when every list scored them alike (the same text), not when
    one list's scores happen to meet (two turns of equal BM25). Only keys tied in
    some list are given (``tied_ranks`` asks for no other): most searches have none,
    and then no list is read twice."""
    tied = {
        key
        for lst in lists
        for (a, x), (b, y) in itertools.pairwise(lst)
        if x == y
        for key in (a, b)
    }
    if not tied:
        return {}
    found = [dict(lst) for lst in lists]
    return {key: tuple(f.get(key) for f in found) for key in tied}


def signal_ranks(
    keys: Sequence[Hashable],
    scores: Mapping[Hashable, float],
    records: Mapping[Hashable, Record],
    *,
    by_content: bool = False,
) -> list[int]:
    """The rank (from 1) of each key of a signal list (``fusion.signal_lists``): a key
    shares the rank of an earlier key of the list to which the text lists' fusion
    gave the same score (``scores``), found among the keys just before it with that
    score; any other key's rank is its position.

    A list that holds the candidates with some property (speaker, date, time,
    preference) keeps them in pool order, so equal scores are all its tie; the
    own-text list orders by how many query terms a record holds first, so there
    (``by_content``) the two must also hold the same content.

    Args:
        keys: A signal list, best first (a sub-sequence of the fused pool).
        scores: The text lists' fused score of each key.
        records: The pool's loaded records.
        by_content: Whether tied keys must also have equal content.

    Returns:
        One int per key, ``ranks[0] == 1`` when non-empty.
    """
    ranks: list[int] = []
    for position, key in enumerate(keys, start=1):
        rank = position
        back = position - 2
        while back >= 0 and scores.get(keys[back]) == scores.get(key):
            if not by_content or _content(records, keys[back]) == _content(records, key):
                rank = ranks[back]
            back -= 1
        ranks.append(rank)
    return ranks


def _content(records: Mapping[Hashable, Record], key: Hashable) -> object:
    record = records.get(key)
    return key if record is None else record.content
