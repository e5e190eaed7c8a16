"""A store embeds a repeated query once (store/runtime.py ``QueryMemo``, docs/store.md#searching):
a search for memories and messages together, and a context card, search twice with
the same words. Real SQLite files, the hashing embedder wrapped to count its calls."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from oam_core import OracleAgentMemory
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store import runtime as querymemo
from oam_core.store.sqlite import SQLiteMemoryStore


class Counting(HashingEmbedder):
    """The hashing embedder, recording every text it embeds and how."""

    def __init__(self, dim: int = 32) -> None:
        super().__init__(dim)
        self.seen: list[tuple[str, bool]] = []

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> Any:
        self.seen.extend((t, is_query) for t in texts)
        return super().embed(texts, is_query=is_query)


def _queries(e: Counting) -> list[str]:
    return [t for t, q in e.seen if q]


def test_a_repeated_query_is_embedded_once_with_the_same_results(tmp_path: Path) -> None:
    e = Counting()
    with SQLiteMemoryStore(str(tmp_path / "m.db"), embedder=e) as store:
        store.add(["tea with lemon", "coffee black", "green tea"], "memory")
        first = store.search("tea", k=3)
        again = store.search("tea", k=3)
        other = store.search("coffee", k=3)
        assert _queries(e) == ["tea", "coffee"]
        assert [(r.id, d) for r, d in first] == [(r.id, d) for r, d in again]
        assert other[0][0].content == "coffee black"
        # a write embeds its own texts every time, even ones searched before
        store.add(["tea"], "memory")
        assert [t for t, q in e.seen if not q].count("tea") == 1


def test_a_new_embedder_embeds_again(tmp_path: Path) -> None:
    a, b = Counting(), Counting()
    with SQLiteMemoryStore(str(tmp_path / "m.db"), embedder=a) as store:
        store.add(["tea with lemon"], "memory")
        store.search("tea", k=1)
        store.embedder = b
        store.search("tea", k=1)
        assert (_queries(a), _queries(b)) == (["tea"], ["tea"])


def test_the_memo_is_bounded_and_hands_out_copies() -> None:
    memo = querymemo.QueryMemo()
    e = HashingEmbedder(8)
    made: list[tuple[str, ...]] = []

    def make(texts: Sequence[str]) -> np.ndarray:
        made.append(tuple(texts))
        return np.asarray(e.embed(texts, is_query=True), dtype=np.float32)

    v = memo.embed(e, ["q0"], make)
    v[0, 0] = 99.0  # the caller's copy: the kept vector is not changed
    assert memo.embed(e, ["q0"], make)[0, 0] != 99.0
    for i in range(1, querymemo.QUERY_MEMO_SIZE + 1):
        memo.embed(e, [f"q{i}"], make)
    memo.embed(e, ["q0"], make)  # pushed out by SIZE newer queries: embedded again
    long = "x" * (querymemo.QUERY_MEMO_MAX_CHARS + 1)
    memo.embed(e, [long], make)
    memo.embed(e, [long], make)  # too long to keep
    assert made.count(("q0",)) == 2 and made.count((long,)) == 2


def test_a_search_of_memories_and_messages_embeds_the_query_once(tmp_path: Path) -> None:
    e = Counting()
    memory = OracleAgentMemory.open(str(tmp_path / "m.db"), embedder=e, extract_memories=False)
    try:
        thread = memory.create_thread(user_id="u")
        thread.add_messages([{"role": "user", "content": "I moved to Lisbon in March"}])
        memory.add_memory("The user lives in Lisbon", user_id="u")
        e.seen.clear()
        hits = memory.search("Lisbon", k=4, record_types={"message", "memory"})
        assert {r.record_type for r, _ in hits} == {"message", "memory"}
        assert _queries(e) == ["Lisbon"]
    finally:
        memory.close()
