"""Replay HYBRID fusions of PrefEval questions offline, in seconds (bench/README.md).

A ranking change is measured here before it goes into the store: the script builds a
PrefEval task's store once (as ``prefeval_recall.py`` does), captures for every
question the lists the store fuses (the vector list of the question's vector and of
each variant query vector, the keyword list) and which candidates state a
preference, then replays the fusion of ``store/fusion.py`` on them for each
variant: the same ``fuse``, the same weights, pool and preference list as
``store/search.py``. Recall@5/10 overall and per half of the topics, as the
benchmark reports them: ``base`` reproduces its HYBRID figures before the topic
vector, ``both@1.0`` the store's. A question not asking for advice keeps the
store's own ranking (no variant applies to it).

Usage (from the repository root, with the data paths of ``prefeval_recall.py``)::

    python bench/fusion_lab.py --task memories --embed-cache /tmp/embcache.sqlite
    python bench/fusion_lab.py --task conversation --weights 0.3,0.5,1.0

Variants (``frame`` = the vector of ``advice.advice_frame(question)``, embedded with
the question; only for questions asking for advice, ``fusion.asks_for_advice``):

``base``             the question's vector (the store before the frame step);
``minus@w``          the question's vector less ``w`` times the frame's, in its place;
``both@w``           both vectors, one list each (each at half the list weight);
``...+kw<x>``        the advice keyword lists at weight ``x`` (``--keyword-weights``);
``...+tt``           the keyword lists of the topic's terms (``ADVICE_WORDS`` out);
``...+d<n>``         lists and pool ``n`` deep (``--depth n``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

try:
    import oam_core  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from locomo_recall import CachedEmbedder, TimedEmbedder
from prefeval_recall import (
    LOCOMO_FILE,
    PREFEVAL_DIR,
    USER,
    fill_conversation,
    fill_memories,
    load_filler,
    load_preferences,
    open_store,
)

from oam_core import SearchStrategy
from oam_core.embedders import resolve_embedder
from oam_core.store.advice import ADVICE_WORDS, FRAME_WEIGHT, advice_frame, frame_removed
from oam_core.store.fusion import (
    DEFAULT_FUSION,
    Signal,
    asks_for_advice,
    fuse,
    list_weights,
    preference_list,
    rrf_distance,
)
from oam_core.store.search import evidence, signal_ranks, tied_ranks
from oam_core.store.text import chunk_text

Scored = list[tuple[Hashable, float]]
"""A captured list: ``(key, distance or score)`` pairs, best first."""

DEPTH = 50
"""Candidates each captured list holds at least (``fusion.HYBRID_DEPTH``; deeper
with ``--depth``, for the ``+d<n>`` variants)."""


@dataclass
class Case:
    """One question's captured lists (with their distances or scores: tied entries
    share one rank, as in the store, ``store/search.py, tied_ranks``)."""

    target: str
    half: str
    advice: bool
    weights: list[float]
    vector: dict[str, list[Scored]]
    keyword: list[Scored]
    topic_keyword: list[Scored]
    preference: set[Hashable]
    ids: dict[Hashable, str]
    store: list[str]


def capture(
    task: str,
    weights: Sequence[float],
    embed_cache: Path | None,
    data: Path,
    filler: Path,
    depth: int = DEPTH,
    embedder: str = "local",
) -> list[Case]:
    """Build the task's store and capture every question's lists (``embedder``: a
    spec for ``resolve_embedder``; ``depth``: at least the store's ``DEPTH``, which
    the replay reads)."""
    depth = max(depth, DEPTH)
    prefs = load_preferences(data)
    topics = sorted({p.topic for p in prefs})
    inner = resolve_embedder(embedder)
    if embed_cache is not None:
        inner = CachedEmbedder(inner, embedder, embed_cache)
    model = TimedEmbedder(inner)
    store = open_store(model, SearchStrategy.HYBRID)
    if task == "memories":
        fill_memories(store, prefs)
        types = {"preference"}
    else:
        fill_conversation(store, prefs, load_filler(filler), 9)
        types = {"message"}
    backend = store.runtime.backend
    seen: dict[str, Any] = {}
    real = backend.rank_hybrid

    def spy(queries: Any, term_lists: Any, k: int, pred: Any) -> Any:
        seen.update(queries=list(queries), terms=list(term_lists), pred=pred)
        return real(queries, term_lists, k, pred)

    backend.rank_hybrid = spy  # type: ignore[method-assign]
    cases = []
    for pref in prefs:
        found = store.search(
            pref.question, 10, record_types=types, user_id=USER, exact_user_match=True
        )
        # The store's vectors: the parts', then (advice.search_vectors) their topics'.
        parts = chunk_text(pref.question, store.runtime.chunk_chars) or [pref.question]
        pred, queries = seen["pred"], seen["queries"][: len(parts)]
        frame = model.embed([advice_frame(pref.question) or "?"], is_query=True)[0]
        variants = {"base": queries}
        for w in weights:
            variants[f"minus@{w}"] = frame_removed(queries, frame, w)
        vector = {
            name: [list(lst) for lst in backend.rank_vector(vs, depth, pred)]
            for name, vs in variants.items()
        }
        keyword = [list(backend.rank_keyword(terms, depth, pred)) for terms in seen["terms"]]
        topic_keyword = [
            list(backend.rank_keyword(topic, depth, pred))
            for topic in ([t for t in terms if t not in ADVICE_WORDS] for terms in seen["terms"])
            if topic
        ] or keyword
        keys = {key for lists in vector.values() for lst in lists for key, _ in lst}
        keys |= {key for lst in (*keyword, *topic_keyword) for key, _ in lst}
        records = backend.load(list(keys))
        cases.append(
            Case(
                target=pref.record_id,
                half=pref.half(topics),
                advice=asks_for_advice(pref.question),
                weights=list_weights(pref.question, len(queries), len(keyword), DEFAULT_FUSION),
                vector=vector,
                keyword=keyword,
                topic_keyword=topic_keyword,
                preference=set(preference_list(list(records), records)),
                ids={key: rec.id for key, rec in records.items()},
                store=[record.id for record, _ in found],
            )
        )
    store.close()
    return cases


def replay(case: Case, lists: Sequence[tuple[Scored, float]], depth: int = DEPTH) -> list[str]:
    """The record ids of a fusion of ``(list, weight)`` pairs, then the preference
    list of its pool (as ``search._hybrid_ranking`` with the advice signals). A
    question not asking for advice is ranked as the store ranked it (no variant
    applies to it; its signal lists are not replayed here)."""
    if not case.advice:
        return case.store
    alike = evidence([lst[:depth] for lst, _ in lists])
    fused = fuse(
        [[key for key, _ in lst[:depth]] for lst, _ in lists],
        [w for _, w in lists],
        rrf_k=DEFAULT_FUSION.rrf_k,
        ranks=[tied_ranks(lst[:depth], alike) for lst, _ in lists],
    )
    pool = [key for key, _ in fused[: max(depth, DEFAULT_FUSION.pool)]]
    prefs = [key for key in pool if key in case.preference]
    total = sum(w for _, w in lists)
    if case.advice and Signal.PREFERENCE in DEFAULT_FUSION.signals and 0 < len(prefs) < len(pool):
        total += DEFAULT_FUSION.preference_weight
        fused = fuse(
            [prefs],
            [DEFAULT_FUSION.preference_weight],
            rrf_k=DEFAULT_FUSION.rrf_k,
            onto=fused,
            ranks=[signal_ranks(prefs, dict(fused), {})],
        )
    # The store sorts by distance, then record type and id (store/search.py): scores
    # that differ in the last bit (sums in another order) can be one distance.
    rrf_k = DEFAULT_FUSION.rrf_k
    best = sorted(fused, key=lambda kv: (rrf_distance(kv[1], total, rrf_k), case.ids[kv[0]]))
    return [case.ids[key] for key, _ in best[:10]]


def variant(name: str) -> Callable[[Case], list[tuple[Scored, float]]]:
    """The lists and weights of variant ``name`` for one case."""
    topic_terms = "+tt" in name
    spec, _, kw = name.split("+d")[0].replace("+tt", "").partition("+kw")
    kind, _, w = spec.partition("@")

    def lists(case: Case) -> list[tuple[Scored, float]]:
        n = len(case.vector["base"])
        v_weights, kw_weights = case.weights[:n], case.weights[n:]
        if kw and case.advice:
            kw_weights = [float(kw)] * len(kw_weights)
        kw_lists = case.topic_keyword if topic_terms and case.advice else case.keyword
        keyword = list(zip(kw_lists, kw_weights[: len(kw_lists)], strict=True))
        if kind == "base":
            return [*zip(case.vector["base"], v_weights, strict=True), *keyword]
        minus = case.vector[f"minus@{w}"]
        if kind == "minus":
            return [*zip(minus, v_weights, strict=True), *keyword]
        half = [v / 2 for v in v_weights]
        return [
            *zip(case.vector["base"], half, strict=True),
            *zip(minus, half, strict=True),
            *keyword,
        ]

    return lists


def score(cases: Sequence[Case], name: str) -> dict[str, float]:
    """recall@5 and @10, overall and per half, of variant ``name``."""
    make = variant(name)
    _, _, depth = name.partition("+d")
    out: dict[str, float] = {}
    for group in ("all", "a", "b"):
        chosen = [c for c in cases if group in ("all", c.half)]
        ranked = [replay(c, make(c), int(depth or DEPTH)) if c.advice else c.store for c in chosen]
        for k in (5, 10):
            hits = sum(c.target in r[:k] for c, r in zip(chosen, ranked, strict=True))
            out[f"r@{k} {group}"] = hits / max(1, len(chosen))
    return out


def mismatches(cases: Sequence[Case]) -> int:
    """How many advice questions' replay of the store's own step (``both@`` the
    frame weight) differs from the store's ranking (ties ordered otherwise)."""
    store = variant(f"both@{FRAME_WEIGHT}")
    return sum(c.advice and replay(c, store(c)) != c.store for c in cases)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=["memories", "conversation"], default="memories")
    parser.add_argument("--weights", default="0.3,0.5,0.7,1.0", help="frame weights")
    parser.add_argument("--depth", type=int, default=DEPTH, help="capture depth (+d<n>)")
    parser.add_argument("--keyword-weights", default="", help="advice keyword weights")
    parser.add_argument("--embedder", default="local", help="local, hashing, hashing/<dim>")
    parser.add_argument("--embed-cache", type=Path)
    parser.add_argument("--data", type=Path, default=PREFEVAL_DIR)
    parser.add_argument("--filler-file", type=Path, default=LOCOMO_FILE)
    args = parser.parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")]
    cases = capture(args.task, weights, args.embed_cache, args.data, args.filler_file, args.depth)
    print(
        f"advice questions whose both@{FRAME_WEIGHT} replay differs from the store's "
        f"ranking: {mismatches(cases)}"
    )
    names = ["base"] + [f"{kind}@{w}" for kind in ("minus", "both") for w in weights]
    for kw in filter(None, args.keyword_weights.split(",")):
        names += [f"{name}+kw{kw}" for name in names if "+" not in name]
    names += [f"{name}+tt" for name in names if "+" not in name]
    if args.depth > DEPTH:
        names += [f"{name}+d{args.depth}" for name in names if "+" not in name]
    print(f"| {args.task} variant | r@5 | r@5 a | r@5 b | r@10 | r@10 a | r@10 b |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in names:
        s = score(cases, name)
        cells = [s[f"r@{k} {g}"] for k in (5, 10) for g in ("all", "a", "b")]
        print(f"| {name} | " + " | ".join(f"{v:.3f}" for v in cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(np.seterr(all="ignore") and None))
