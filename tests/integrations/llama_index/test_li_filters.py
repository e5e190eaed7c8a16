"""LlamaIndex ``MetadataFilters`` on ``OAMVectorStore``: every operator translated to the
``oam`` language (docs/filters.md) and the filter matrix held equal to LlamaIndex's own
evaluator (``build_metadata_filter_fn``) on random rows, through ``query`` (top k of
the filtered set) and ``get_nodes``; substring operators raise naming themselves."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)
from llama_index.core.vector_stores.utils import build_metadata_filter_fn
from llama_index_oam import OAMVectorStore, UnsupportedFilterError
from llama_index_oam.filters import to_oam_filter

from oam_core import SQLiteMemoryStore

COLORS = ["red", "blue", "green"]
TAGS = ["a", "b", "c"]
DIM = 6


def random_rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Metadata rows: ``color`` a string, null or missing; ``n`` an int or missing;
    ``tags`` a list of strings or missing (no booleans: docs/filters.md#values keeps True != 1)."""
    rows = []
    for _ in range(n):
        row: dict[str, Any] = {}
        r = rng.random()
        if r < 0.75:
            row["color"] = rng.choice(COLORS)
        elif r < 0.85:
            row["color"] = None
        if rng.random() < 0.8:
            row["n"] = rng.randrange(4)
        if rng.random() < 0.8:
            row["tags"] = rng.sample(TAGS, rng.randrange(len(TAGS) + 1))
        rows.append(row)
    return rows


def random_leaf(rng: random.Random) -> MetadataFilter:
    kind = rng.randrange(5)
    if kind == 3:
        op = rng.choice(
            [FilterOperator.GT, FilterOperator.GTE, FilterOperator.LT, FilterOperator.LTE]
        )
        if rng.random() < 0.7:
            return MetadataFilter(key="n", value=rng.randrange(4), operator=op)
        return MetadataFilter(key="color", value=rng.choice(COLORS), operator=op)
    if kind == 4:
        key = rng.choice(["color", "n", "tags"])
        return MetadataFilter(key=key, value=None, operator=FilterOperator.IS_EMPTY)
    if kind == 0:
        key, pool = "color", COLORS
    elif kind == 1:
        key, pool = "n", [0, 1, 2, 3]
    else:
        op = rng.choice(
            [FilterOperator.CONTAINS, FilterOperator.ANY, FilterOperator.ALL, FilterOperator.EQ]
        )
        if op == FilterOperator.CONTAINS:
            return MetadataFilter(key="tags", value=rng.choice(TAGS), operator=op)
        size = rng.randrange(0, 3)
        value = rng.sample(TAGS, size)
        if op == FilterOperator.EQ and rng.random() < 0.5:
            op = FilterOperator.NE
        return MetadataFilter(key="tags", value=value, operator=op)
    op = rng.choice([FilterOperator.EQ, FilterOperator.NE, FilterOperator.IN, FilterOperator.NIN])
    if op in (FilterOperator.IN, FilterOperator.NIN):
        return MetadataFilter(key=key, value=rng.sample(pool, rng.randrange(4)), operator=op)
    return MetadataFilter(key=key, value=rng.choice(pool), operator=op)


def random_filters(rng: random.Random, depth: int = 0) -> MetadataFilters:
    children: list[MetadataFilter | MetadataFilters] = []
    for _ in range(rng.randrange(1, 4)):
        if depth < 1 and rng.random() < 0.3:
            children.append(random_filters(rng, depth + 1))
        else:
            children.append(random_leaf(rng))
    condition = rng.choice([FilterCondition.AND, FilterCondition.OR, FilterCondition.NOT])
    return MetadataFilters(filters=children, condition=condition)


def llama_matches(metadata: dict[str, Any], filters: MetadataFilters) -> bool:
    """LlamaIndex's evaluator; nested groups combined with its documented conditions
    (its evaluator itself rejects nesting), every leaf judged by LlamaIndex."""
    results = []
    for f in filters.filters:
        if isinstance(f, MetadataFilters):
            results.append(llama_matches(metadata, f))
        else:
            fn = build_metadata_filter_fn(lambda _: metadata, MetadataFilters(filters=[f]))
            results.append(fn("row"))
    if filters.condition == FilterCondition.OR:
        return any(results)
    if filters.condition == FilterCondition.NOT:
        return not any(results)
    return all(results)


@pytest.fixture
def loaded(store: SQLiteMemoryStore) -> tuple[OAMVectorStore, list[dict[str, Any]], np.ndarray]:
    rng = random.Random(20260301)
    rows = random_rows(rng, 60)
    vectors = np.random.default_rng(7).normal(size=(len(rows), DIM))
    vs = OAMVectorStore(store)
    vs.add(
        [
            TextNode(id_=f"n{i:02d}", text=f"row {i}", metadata=row, embedding=vectors[i].tolist())
            for i, row in enumerate(rows)
        ]
    )
    return vs, rows, vectors


def expected_ranking(
    rows: list[dict[str, Any]], vectors: np.ndarray, query: np.ndarray, filters: MetadataFilters
) -> list[str]:
    sims = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query))
    keep = [i for i, row in enumerate(rows) if llama_matches(row, filters)]
    return [f"n{i:02d}" for i in sorted(keep, key=lambda i: -sims[i])]


@pytest.mark.parametrize("seed", range(6))
def test_filter_matrix_matches_llama_index_evaluator(loaded: Any, seed: int) -> None:
    vs, rows, vectors = loaded
    rng = random.Random(seed)
    query = np.random.default_rng(seed).normal(size=DIM)
    checked = 0
    for _ in range(40):
        filters = random_filters(rng)
        want = expected_ranking(rows, vectors, query, filters)
        every = vs.query(
            VectorStoreQuery(query_embedding=query.tolist(), similarity_top_k=1000, filters=filters)
        )
        assert sorted(every.ids or []) == sorted(want), filters
        top = vs.query(
            VectorStoreQuery(query_embedding=query.tolist(), similarity_top_k=3, filters=filters)
        )
        assert top.ids == want[:3], filters
        got = sorted(n.node_id for n in vs.get_nodes(filters=filters))
        assert got == sorted(want), filters
        checked += 1
    assert checked == 40


CASES: list[tuple[list[Any], FilterCondition, list[int]]] = [
    # rows: 0 red/n1/[a,b]  1 blue/n2/[a]  2 no color/n1/[b]  3 null color/[]  4 green/n3
    ([MetadataFilter(key="color", value="red")], FilterCondition.AND, [0]),
    ([MetadataFilter(key="color", value="red", operator="!=")], FilterCondition.AND, [1, 2, 3, 4]),
    (
        [MetadataFilter(key="color", value=["red", "blue"], operator="in")],
        FilterCondition.AND,
        [0, 1],
    ),
    (
        [MetadataFilter(key="color", value=["red", "blue"], operator="nin")],
        FilterCondition.AND,
        [2, 3, 4],
    ),
    ([MetadataFilter(key="color", value=[], operator="in")], FilterCondition.AND, []),
    ([MetadataFilter(key="color", value=[], operator="nin")], FilterCondition.AND, [0, 1, 2, 3, 4]),
    ([MetadataFilter(key="tags", value="a", operator="contains")], FilterCondition.AND, [0, 1]),
    ([MetadataFilter(key="tags", value=["a", "b"], operator="all")], FilterCondition.AND, [0]),
    ([MetadataFilter(key="tags", value=["b", "z"], operator="any")], FilterCondition.AND, [0, 2]),
    ([MetadataFilter(key="tags", value=["a"])], FilterCondition.AND, [1]),
    (
        [MetadataFilter(key="color", value="red"), MetadataFilter(key="n", value=2)],
        FilterCondition.OR,
        [0, 1],
    ),
    (
        [MetadataFilter(key="color", value="red"), MetadataFilter(key="n", value=1)],
        FilterCondition.NOT,
        [1, 3, 4],
    ),
    (
        [
            MetadataFilter(key="n", value=1),
            MetadataFilters(
                filters=[
                    MetadataFilter(key="color", value="red"),
                    MetadataFilter(key="tags", value="b", operator="contains"),
                ],
                condition=FilterCondition.AND,
            ),
        ],
        FilterCondition.OR,
        [0, 2],
    ),
    ([MetadataFilter(key="n", value=1, operator=">")], FilterCondition.AND, [1, 4]),
    ([MetadataFilter(key="n", value=2, operator="<=")], FilterCondition.AND, [0, 1, 2]),
    ([MetadataFilter(key="color", value="green", operator=">=")], FilterCondition.AND, [0, 4]),
    ([MetadataFilter(key="color", value=None, operator="is_empty")], FilterCondition.AND, [2, 3]),
    ([MetadataFilter(key="tags", value=None, operator="is_empty")], FilterCondition.AND, [3, 4]),
    ([MetadataFilter(key="tags", value=[], operator="all")], FilterCondition.AND, [0, 1, 2, 3]),
    ([MetadataFilter(key="tags", value=[], operator="any")], FilterCondition.AND, []),
]
CASE_ROWS: list[dict[str, Any]] = [
    {"color": "red", "n": 1, "tags": ["a", "b"]},
    {"color": "blue", "n": 2, "tags": ["a"]},
    {"n": 1, "tags": ["b"]},
    {"color": None, "tags": []},
    {"color": "green", "n": 3},
]


@pytest.mark.parametrize(("leaves", "condition", "expected"), CASES)
def test_filter_table(
    store: SQLiteMemoryStore, leaves: list[Any], condition: FilterCondition, expected: list[int]
) -> None:
    vs = OAMVectorStore(store)
    vs.add(
        [
            TextNode(id_=f"r{i}", text=f"row {i}", metadata=m, embedding=[1.0, float(i)])
            for i, m in enumerate(CASE_ROWS)
        ]
    )
    filters = MetadataFilters(filters=leaves, condition=condition)
    assert [i for i, row in enumerate(CASE_ROWS) if llama_matches(row, filters)] == expected
    got = vs.query(
        VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=10, filters=filters)
    )
    assert sorted(got.ids or []) == [f"r{i}" for i in expected]
    assert [n.node_id for n in vs.get_nodes(filters=filters)] == [f"r{i}" for i in expected]


@pytest.mark.parametrize(
    "operator", [FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE]
)
def test_substring_operators_raise_naming_themselves_instead_of_running_unfiltered(
    store: SQLiteMemoryStore, operator: FilterOperator
) -> None:
    vs = OAMVectorStore(store)
    vs.add([TextNode(id_="x", text="x", metadata={"n": "one"}, embedding=[1.0, 0.0])])
    filters = MetadataFilters(filters=[MetadataFilter(key="n", value="on", operator=operator)])
    query = VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=5, filters=filters)
    with pytest.raises(UnsupportedFilterError, match=operator.name) as info:
        vs.query(query)
    assert isinstance(info.value, ValueError)
    with pytest.raises(UnsupportedFilterError):
        vs.get_nodes(filters=filters)
    with pytest.raises(UnsupportedFilterError):
        vs.delete_nodes(filters=filters)
    assert [n.node_id for n in vs.get_nodes()] == ["x"]  # nothing deleted


def test_every_filter_operator_maps_or_names_itself() -> None:
    for op in FilterOperator:
        value: Any = (
            ["a"]
            if op in (FilterOperator.IN, FilterOperator.NIN, FilterOperator.ANY, FilterOperator.ALL)
            else "a"
        )
        leaf = MetadataFilter(key="k", value=value, operator=op)
        try:
            flt = to_oam_filter(MetadataFilters(filters=[leaf]))
        except UnsupportedFilterError as exc:
            assert op.name in str(exc)
            assert op in (FilterOperator.TEXT_MATCH, FilterOperator.TEXT_MATCH_INSENSITIVE)
        else:
            assert isinstance(flt, dict) and flt


def test_translation_is_the_oam_language() -> None:
    """A LlamaIndex filter becomes one ``oam`` filter the store runs whole (thin)."""
    filters = MetadataFilters(
        filters=[
            MetadataFilter(key="year", value=2020, operator=FilterOperator.GTE),
            MetadataFilters(
                filters=[
                    MetadataFilter(key="tag", value=["a", "b"], operator=FilterOperator.IN),
                    MetadataFilter(key="tag", value=None, operator=FilterOperator.IS_EMPTY),
                ],
                condition=FilterCondition.OR,
            ),
        ],
        condition=FilterCondition.AND,
    )
    assert to_oam_filter(filters) == {
        "$and": [
            {"year": {"$gte": 2020}},
            {
                "$or": [
                    {"tag": {"$in": ["a", "b"]}},
                    {
                        "$or": [
                            {"tag": {"$exists": False}},
                            {"tag": {"$in": [None, ""]}},
                            {"tag": []},
                        ]
                    },
                ]
            },
        ]
    }


def test_comparisons_and_is_empty_as_a_llama_index_user_writes_them(
    store: SQLiteMemoryStore,
) -> None:
    """Issue 13 item 4: GT/GTE/LT/LTE/IS_EMPTY work through ``VectorStoreIndex``'s
    retriever, filtering before the top-k cut."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import Document

    vs = OAMVectorStore(store)
    docs = [
        Document(text=f"report {y}", id_=f"d{y}", metadata={"year": y, "tag": t})
        for y, t in [(2019, "a"), (2020, ""), (2021, "b"), (2022, None)]
    ]
    index = VectorStoreIndex.from_documents(
        docs, storage_context=_storage(vs), embed_model=MockEmbedding(embed_dim=8)
    )
    recent = MetadataFilters(filters=[MetadataFilter(key="year", value=2021, operator=">=")])
    found = index.as_retriever(similarity_top_k=1, filters=recent).retrieve("report")
    assert len(found) == 1 and found[0].node.metadata["year"] >= 2021
    both = index.as_retriever(similarity_top_k=10, filters=recent).retrieve("report")
    assert sorted(n.node.metadata["year"] for n in both) == [2021, 2022]
    empty = MetadataFilters(filters=[MetadataFilter(key="tag", value=None, operator="is_empty")])
    got = index.as_retriever(similarity_top_k=10, filters=empty).retrieve("report")
    assert sorted(n.node.metadata["year"] for n in got) == [2020, 2022]
    older = MetadataFilters(filters=[MetadataFilter(key="year", value=2020, operator="<")])
    assert [n.node.metadata["year"] for n in index.as_retriever(filters=older).retrieve("x")] == [
        2019
    ]


def _storage(vs: OAMVectorStore) -> Any:
    from llama_index.core import StorageContext

    return StorageContext.from_defaults(vector_store=vs)


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        (MetadataFilter(key="tags", value=["a"], operator="contains"), "CONTAINS takes one value"),
        (MetadataFilter(key="n", value=1, operator="in"), "needs a list"),
        (MetadataFilter(key="n", value=None), "needs a value"),
        (MetadataFilter(key="$agent_memory", value=1), "not a field name"),
    ],
)
def test_invalid_operands_are_value_errors(
    store: SQLiteMemoryStore, flt: MetadataFilter, message: str
) -> None:
    vs = OAMVectorStore(store)
    with pytest.raises(ValueError, match=message):
        vs.get_nodes(filters=MetadataFilters(filters=[flt]))
