"""KEYWORD and HYBRID rank alike on SQLite and PostgreSQL when query words share a
stem (docs/store.md#keyword-search: "a stem counts once in a query").

FTS5 scores ``"cooks" OR "cook"`` phrase by phrase, so the stem ``cook`` would count
twice on SQLite; PostgreSQL ranks the query's distinct lexemes, once each. The SQLite
store drops a query word whose FTS5 tokens an earlier word has
(``store/sqlite/stems.py``). HYBRID meets such words without the user writing them:
the feedback keyword list (``fusion.feedback_terms``) adds "cooked" to a question
saying "cook".
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from _fused import fused_search

from oam_core.apis.embedder import IEmbedder
from oam_core.store.fusion import FusionConfig, Signal
from oam_core.store.sqlite import SQLiteMemoryStore

pytest.importorskip("psycopg")

TEXTS = [
    "I cooked soup",
    "I cooked stew",
    "We went to Oslo",
    "a dog",
    "a cat",
    "a cow",
    "a hen",
    "a pig",
    "a fox",
]
SAME_STEM_QUERIES = ("cook cooked oslo", "Who cooks, and what did they cook in Oslo?")


class SeededEmbedder(IEmbedder):
    """A unit vector per text, drawn from a generator seeded by the text's BLAKE2b
    hash: distinct texts get distances far apart (no ties to break differently)."""

    embedder_id = "seeded/32"
    embedding_dimension = 32

    def embed(self, texts: Sequence[str], *, is_query: bool = False) -> npt.NDArray[np.float32]:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            v = np.random.default_rng(seed).standard_normal(32)
            rows.append(v / np.linalg.norm(v))
        return np.array(rows, np.float32)


def _stores(conninfo: str, tmp_path: Path, **kwargs: Any) -> tuple[Any, Any]:
    from oam_core.store.postgres import PostgresMemoryStore

    pg = PostgresMemoryStore(conninfo, schema_policy="CREATE_IF_NECESSARY", **kwargs)
    return SQLiteMemoryStore(tmp_path / "s.db", **kwargs), pg


def _same(lite: list[tuple[Any, float]], pg: list[tuple[Any, float]]) -> list[tuple[str, float]]:
    """Two rankings' ``(id, distance)`` pairs, asserted equal in order and distance
    (within 1e-6); SQLite's are returned."""
    assert [r.id for r, _ in lite] == [r.id for r, _ in pg]
    assert [d for _, d in lite] == pytest.approx([d for _, d in pg], abs=1e-6)
    return [(r.id, d) for r, d in lite]


def test_a_stem_counts_once_in_a_keyword_query(conninfo: str, tmp_path: Path) -> None:
    lite, pg = _stores(conninfo, tmp_path, search_strategy="KEYWORD", embedder=None)
    for store in (lite, pg):
        store.add(TEXTS, "memory", record_ids=[f"r{i}" for i in range(len(TEXTS))])
    plain = _same(lite.search("cook oslo", 3), pg.search("cook oslo", 3))
    # Oslo is in one row, the stem cook in two (a lower IDF): r2 ranks first.
    assert [i for i, _ in plain] == ["r2", "r0", "r1"]
    assert [d for _, d in plain] == [0.0, pytest.approx(0.269670221), pytest.approx(0.269670221)]
    for query in SAME_STEM_QUERIES:
        got = _same(lite.search(query, 3), pg.search(query, 3))
        assert got == plain, query  # the same FTS5 query: bit for bit
    lite.close()
    pg.close()


TURNS = [  # a generated conversation (speaker, turn); its texts are all distinct
    ("Will", "We had dinner at the Luna restaurant."),
    ("Grace", "I adopted a puppy named sunflowers from the shelter."),
    ("Zoë", "I am saving money for a trip to sugar."),
    ("May", "The family visited Rex together."),
    ("Will", "The book about Rex was boring."),
    ("Grace", "I am saving money for a trip to Japan."),
    ("Zoë", "Dad cooked Lisbon for everyone."),
    ("May", "I finally finished the painting of Japan."),
    ("Will", "Our team won the volcanoes cup yesterday."),
    ("Grace", "My doctor said I should stop eating Oslo."),
    ("Zoë", "I started learning volcanoes on the guitar."),
    ("May", "The kids built a treehouse with volcanoes."),
    ("Will", "The family visited volcanoes together."),
    ("Grace", "I finally finished the painting of tomato."),
    ("Zoë", "The kids built a treehouse with regional."),
    ("May", "The kids built a treehouse with sunflowers."),
    ("Will", "I started learning Japan on the guitar."),
    ("Grace", "My friend is a cook in Lisbon."),
    ("Zoë", "We hiked up regional mountain on Sunday."),
    ("May", "We hiked up volcanoes mountain on Sunday."),
    ("Will", "The band pine boards played an amazing concert."),
    ("Grace", "My sister volcanoes is visiting next month."),
    ("Zoë", "I started learning Lisbon on the guitar."),
    ("May", "I cooked Luna soup for the family dinner."),
]


def test_hybrid_with_the_feedback_list_ranks_alike(conninfo: str, tmp_path: Path) -> None:
    lite, pg = _stores(conninfo, tmp_path, search_strategy="HYBRID", embedder=SeededEmbedder())
    for store in (lite, pg):
        store.add(
            [text for _, text in TURNS],
            "message",
            record_ids=[f"m{i:02d}" for i in range(len(TURNS))],
            thread_ids="t1",
            roles=["user" if i % 2 == 0 else "assistant" for i in range(len(TURNS))],
            metadata=[{"$message": {"name": name}} for name, _ in TURNS],
            timestamps=[f"2024-03-{1 + i:02d}T10:00:00Z" for i in range(len(TURNS))],
        )
    query = "What did Zoë cook?"  # the feedback list: zoë, cook, then cooked, ...
    got = _same(lite.search(query, 8), pg.search(query, 8))
    assert [i for i, _ in got[:3]] == ["m06", "m17", "m23"]  # cooked, cook, cooked
    assert [d for _, d in got[:4]] == pytest.approx([0.207895, 0.353383, 0.5, 0.588346], abs=1e-6)
    without = FusionConfig(signals=frozenset(Signal) - {Signal.FEEDBACK})
    unfed = _same(fused_search(lite, query, 8, without), fused_search(pg, query, 8, without))
    assert [d for _, d in unfed[:4]] == pytest.approx(
        [0.246875, 0.392857, 0.53125, 0.651786], abs=1e-6
    )
    lite.close()
    pg.close()
