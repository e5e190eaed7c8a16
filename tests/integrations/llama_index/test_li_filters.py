"""LlamaIndex ``MetadataFilters`` on ``OAMVectorStore``: the filter matrix held equal to
LlamaIndex's own evaluator (``build_metadata_filter_fn``) on random rows, through
``query`` (top k of the filtered set) and ``get_nodes``; unsupported operators raise."""

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
from llama_index_oam.filters import MAX_BRANCHES, compile_filters

from oam_core import SQLiteMemoryStore

COLORS = ["red", "blue", "green"]
TAGS = ["a", "b", "c"]
DIM = 6


def random_rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Metadata rows: ``color`` a string, null or missing; ``n`` an int or missing;
    ``tags`` a list of strings or missing (no booleans: SPEC §4 keeps True != 1)."""
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
    kind = rng.randrange(3)
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
        size = rng.randrange(0 if op == FilterOperator.ANY else 1, 3)
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
        try:
            compile_filters(filters)
        except UnsupportedFilterError:
            continue  # e.g. too many branches; covered by its own test
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
    assert checked >= 30


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
    "operator",
    [
        FilterOperator.GT,
        FilterOperator.GTE,
        FilterOperator.LT,
        FilterOperator.LTE,
        FilterOperator.TEXT_MATCH,
        FilterOperator.TEXT_MATCH_INSENSITIVE,
        FilterOperator.IS_EMPTY,
    ],
)
def test_unsupported_operators_raise_instead_of_running_unfiltered(
    store: SQLiteMemoryStore, operator: FilterOperator
) -> None:
    vs = OAMVectorStore(store)
    vs.add([TextNode(id_="x", text="x", metadata={"n": 1}, embedding=[1.0, 0.0])])
    filters = MetadataFilters(filters=[MetadataFilter(key="n", value=1, operator=operator)])
    query = VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=5, filters=filters)
    with pytest.raises(UnsupportedFilterError, match=operator.name) as info:
        vs.query(query)
    assert isinstance(info.value, ValueError)
    with pytest.raises(UnsupportedFilterError):
        vs.get_nodes(filters=filters)
    with pytest.raises(UnsupportedFilterError):
        vs.delete_nodes(filters=filters)
    assert [n.node_id for n in vs.get_nodes()] == ["x"]  # nothing deleted


@pytest.mark.parametrize(
    ("flt", "message"),
    [
        (MetadataFilter(key="tags", value=["a"], operator="contains"), "CONTAINS takes one value"),
        (MetadataFilter(key="tags", value=[], operator="all"), "ALL with an empty list"),
        (MetadataFilter(key="n", value=1, operator="in"), "needs a list"),
        (MetadataFilter(key="n", value=None), "needs a value"),
        (MetadataFilter(key="$agent_memory", value=1), "not a field name"),
    ],
)
def test_invalid_operands_are_value_errors(flt: MetadataFilter, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        compile_filters(MetadataFilters(filters=[flt]))


def test_too_many_branches_is_a_clear_error() -> None:
    many = [MetadataFilter(key=f"k{i}", value=["x", "y", "z"], operator="in") for i in range(4)]
    with pytest.raises(UnsupportedFilterError, match=str(MAX_BRANCHES)):
        compile_filters(MetadataFilters(filters=many))


def test_negations_on_one_field_are_exact_with_residual(store: SQLiteMemoryStore) -> None:
    """NIN with several values needs two ``$not`` on one field: one goes to the store,
    the rest is checked in Python, and the top k still comes out exact."""
    vs = OAMVectorStore(store)
    vs.add(
        [
            TextNode(id_=f"c{i}", text=str(i), metadata={"c": c}, embedding=[1.0, i / 10])
            for i, c in enumerate(["a", "b", "a", "b", "a", "c", "b", "c"])
        ]
    )
    filters = MetadataFilters(filters=[MetadataFilter(key="c", value=["a", "b"], operator="nin")])
    compiled = compile_filters(filters)
    assert len(compiled.branches) == 1 and compiled.branches[0].residual
    got = vs.query(
        VectorStoreQuery(query_embedding=[1.0, 0.0], similarity_top_k=1, filters=filters)
    )
    assert got.ids == ["c5"]
