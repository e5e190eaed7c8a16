"""Search results pinned to the exact ids, order and distances the store gave before
the fusion moved into ``store/fusion.py`` (docs/retrieval.md, docs/store.md#searching).

A LoCoMo-like conversation (two speakers over several days, plus a few memories) is
searched with VECTOR, KEYWORD and HYBRID, with short and long (several-part) queries
naming dates, speakers, asking for a time, or plain. The expected results live in
``tests/data/search_characterization.json``, one table per back end. Set
``OAM_WRITE_CHARACTERIZATION=1`` to record them afresh (only on purpose: a changed
table is a changed search).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from oam_core.embedders.hashing import HashingEmbedder

GOLDEN = Path(__file__).parent.parent / "data" / "search_characterization.json"

SPEAKERS = ("Caroline", "Melanie")
DAYS = (
    "2023-05-08T13:56:00",
    "2023-05-25T10:00:00",
    "2023-06-09T18:30:00",
    "2023-07-14T09:15:00",
    "2023-08-21T20:05:00",
)
TURNS = (
    "I went to the LGBTQ support group yesterday and it was so powerful.",
    "That sounds amazing! I took the kids to a pottery class last Friday.",
    "I have been painting a lot lately, mostly sunsets by the lake.",
    "We went camping in the mountains with the whole family.",
    "I am thinking about adoption agencies; it is a big step for me.",
    "Running has helped me clear my head for three years now.",
    "My daughter made a clay bowl at the pottery workshop.",
    "The art show is next month and I will show my abstract paintings.",
)
MEMORIES = (
    "Caroline is researching adoption agencies.",
    "Melanie has two kids who like pottery.",
    "Caroline paints sunsets and abstract art.",
    "Melanie runs every morning before work.",
)
SHORT_QUERIES = (
    "What kind of art does Caroline make?",
    "What did Melanie do on 25 May, 2023?",
    "When did Caroline go to the support group?",
    "pottery class with the kids",
    "camping trip in June 2023",
    "How long has Melanie been running?",
    "quantum entanglement",  # HYBRID: no signal list applies
)
LONG_QUERY = (
    "What did Caroline say about the art show and her abstract paintings, and when "
    "did Melanie take the kids to the pottery class?"
)

UNRELATED_LONG_QUERY = (
    "quantum entanglement of superconducting magnets in a laboratory "
    "far away from here, xylophones and zeppelins"
)


def _corpus(store: Any) -> None:
    texts, speakers, stamps = [], [], []
    for day_no, day in enumerate(DAYS):
        for turn_no in range(len(TURNS)):
            texts.append(TURNS[(day_no * 3 + turn_no) % len(TURNS)])
            speakers.append(SPEAKERS[turn_no % 2])
            stamps.append(day)
    store.add(
        texts,
        "message",
        record_ids=[f"msg-{i:02d}" for i in range(len(texts))],
        thread_ids="conv",
        roles=["user" if s == SPEAKERS[0] else "assistant" for s in speakers],
        metadata=[{"$message": {"name": s}} for s in speakers],
        timestamps=stamps,
    )
    store.add(list(MEMORIES), "memory", record_ids=[f"mem-{i}" for i in range(len(MEMORIES))])


def _results(make_store: Any, strategy: str, small_chunks: bool) -> dict[str, Any]:
    embedder = HashingEmbedder(64, max_input_tokens=12 if small_chunks else 512)
    store = make_store(
        name=f"{strategy}-{small_chunks}.db", embedder=embedder, search_strategy=strategy
    )
    _corpus(store)
    queries = [*SHORT_QUERIES, LONG_QUERY, UNRELATED_LONG_QUERY]
    out: dict[str, Any] = {q: [[r.id, d] for r, d in store.search(q, 8)] for q in queries}
    out["thread-only: " + SHORT_QUERIES[0]] = [
        [r.id, d]
        for r, d in store.search(SHORT_QUERIES[0], 5, thread_id="conv", exact_thread_match=True)
    ]
    return out


@pytest.mark.parametrize("small_chunks", [False, True], ids=["whole", "small-chunks"])
@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
def test_search_results_are_unchanged(
    make_store: Any, backend: Any, strategy: str, small_chunks: bool
) -> None:
    got = _results(make_store, strategy, small_chunks)
    case = f"{strategy}/{'small-chunks' if small_chunks else 'whole'}"
    kind = "sqlite" if backend.id.startswith("sqlite") else backend.id
    table: dict[str, Any] = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if os.environ.get("OAM_WRITE_CHARACTERIZATION") == "1":
        table.setdefault(kind, {})[case] = got
        GOLDEN.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    assert got == table[kind][case]
