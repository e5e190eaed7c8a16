"""Store conformance: ``search`` (docs/store.md#search-strategies, docs/filters.md; C12, C13 in docs/failure-modes.md).

Expected values come from the documented rules and Oracle's SDK, not from the implementation.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.threads import thread_store

STRATEGIES = ["VECTOR", "KEYWORD", "HYBRID"]
PROFILES = {"user_profile", "agent_profile"}
SEARCHABLE = {"message", "memory", "guideline", "fact", "preference", *PROFILES}


def found(results):
    return [r.id for r, _ in results]


def assert_well_ordered(results, low=0.0, high=2.0):
    """Ascending distance, ties by record type then id; each record once; in range."""
    keys = [(d, r.record_type, r.id) for r, d in results]
    assert keys == sorted(keys)
    assert len({(r.record_type, r.id) for r, _ in results}) == len(results)
    for _, d in results:
        assert low - 1e-6 <= d <= high + 1e-6


def vec(*values: float) -> list[float]:
    return [float(v) for v in values]


@pytest.fixture
def vstore(make_store):
    """A 4-dim store without embedder: every vector is explicit."""
    return make_store(embedder=None, vector_dim=4)


# -- seed examples -------------------------------------------------------------------------


def test_seed_search_examples(store):
    store.add(
        ["Searchable abstract memory"], record_type="memory", record_ids="mem-search-abstract-docs"
    )
    assert store.search("Searchable", 1, record_types={"memory"})[0][0].id == (
        "mem-search-abstract-docs"
    )
    store.add(
        ["pizza preference"],
        record_type="memory",
        record_ids="mem-search-docs",
        thread_ids="c-search-docs",
    )
    results = store.search(
        "pizza", 1, thread_id="c-search-docs", exact_thread_match=True, record_types={"memory"}
    )
    assert results[0][0].id == "mem-search-docs"


def test_seed_metadata_filter_examples(store):
    store.add(["pizza release"], "memory", record_ids="src", metadata={"source": "slack"})
    store.add(["pizza review"], "memory", record_ids="rev", metadata={"review": {"status": "open"}})
    store.add(["pizza tags"], "memory", record_ids="tags", metadata={"tags": ["prod", "urgent"]})
    store.add(
        ["pizza rollout"],
        "memory",
        record_ids="all",
        metadata={
            "source": "slack",
            "review": {"status": "open"},
            "tags": ["prod", "urgent"],
        },
    )
    cases = [
        ({"source": "slack"}, {"src", "all"}),
        ({"review": {"status": "open"}}, {"rev", "all"}),
        ({"tags": ["prod", "urgent"]}, {"tags", "all"}),
        ({"tags": ["urgent", "prod"]}, set()),
        ({"tags": {"$array_contains": "prod"}}, {"tags", "all"}),
        ({"source": "slack", "review": {"status": "open"}, "tags": ["prod", "urgent"]}, {"all"}),
    ]
    for flt, expected in cases:
        assert set(found(store.search("pizza", k=5, metadata_filter=flt))) == expected, flt


# -- arguments (docs/store.md#search-strategies) ---------------------------------------------

BAD_ARGS = [
    ("no-query", {}),
    ("both", {"query": "pizza", "query_vector": [0.0] * 63 + [1.0]}),
    ("empty-query", {"query": ""}),
    ("blank-query", {"query": "   "}),
    ("whitespace-query", {"query": "\n\t "}),
    ("k=0", {"query": "pizza", "k": 0}),
    ("k=-1", {"query": "pizza", "k": -1}),
    ("bare-string-record-types", {"query": "pizza", "record_types": "memory"}),
    ("unknown-record-type", {"query": "pizza", "record_types": {"bogus"}}),
    ("one-unknown-record-type", {"query": "pizza", "record_types": {"memory", "bogus"}}),
    ("empty-query-vector", {"query_vector": []}),
    ("nan-query-vector", {"query_vector": [math.nan] + [0.0] * 63}),
    ("inf-query-vector", {"query_vector": [math.inf] + [0.0] * 63}),
    ("2d-query-vector", {"query_vector": [[1.0] * 64]}),
    ("wrong-dim-query-vector", {"query_vector": [1.0, 0.0, 0.0]}),
    ("zero-query-vector", {"query_vector": [0.0] * 64}),
]


@pytest.mark.parametrize("strategy", ["VECTOR", "HYBRID"])
def test_an_all_zero_query_vector_is_rejected_naming_it(make_store, rejected, strategy):
    """review F7: a zero vector has no direction (its cosine distance is undefined)."""
    store = make_store(search_strategy=strategy)
    store.add(["pizza"], "memory")
    with rejected(store, match="query_vector is all zeros"):
        store.search(query_vector=[0] * 64, k=1)
    with rejected(store, match="query_vector is all zeros"):
        asyncio.run(store.search_async(query_vector=[-0.0] * 64, k=1))
    assert len(store.search(query_vector=[1e-3] + [0.0] * 63, k=1)) == 1


@pytest.mark.parametrize("kwargs", [b[1] for b in BAD_ARGS], ids=[b[0] for b in BAD_ARGS])
def test_invalid_search_arguments_are_rejected(store, rejected, kwargs):
    store.add(["pizza"], "memory")
    with rejected(store):
        store.search(**kwargs)


def test_keyword_search_rejects_query_vector(make_store, rejected):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(["pizza"], "memory")
    with rejected(store):
        store.search(query_vector=[1.0, 0.0], k=1)


def test_vector_search_without_embedder_needs_a_query_vector(make_store, rejected):
    vstore = make_store(embedder=None, vector_dim=4, search_strategy="VECTOR")
    vstore.add(["pizza"], "memory", embeddings=[vec(1, 0, 0, 0)])
    with rejected(vstore):
        vstore.search("pizza", 1)
    assert len(vstore.search(query_vector=vec(1, 0, 0, 0), k=1)) == 1


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("k", [3, 10, 100_000])
def test_c13_k_larger_than_the_data(make_store, strategy, k):
    """docs/failure-modes.md#c13: 3 records, k=10 and k=100000 → 3 results, no error."""
    store = make_store(search_strategy=strategy)
    store.add(["pizza one", "pizza two", "pizza three"], "memory")
    results = store.search("pizza", k)
    assert len(results) == 3
    assert_well_ordered(results, high=2.0 if strategy == "VECTOR" else 1.0)


def test_fewer_than_k_results_is_normal(store):
    store.add(["pizza"], "memory")
    assert len(store.search("pizza", 5)) == 1
    assert store.search("pizza", 5, record_types={"fact"}) == []


# -- distances and order (docs/store.md#search-strategies; docs/failure-modes.md#c12) --------------


def test_c12_identical_first_with_best_score(vstore):
    vstore.add(
        ["orthogonal", "identical", "opposite"],
        "memory",
        record_ids=["orth", "same", "opp"],
        embeddings=[vec(0, 1, 0, 0), vec(1, 0, 0, 0), vec(-1, 0, 0, 0)],
    )
    results = vstore.search(query_vector=vec(1, 0, 0, 0), k=3)
    assert found(results) == ["same", "orth", "opp"]
    assert [d for _, d in results] == pytest.approx([0.0, 1.0, 2.0], abs=1e-6)


@pytest.mark.parametrize(
    "strategy",
    [
        "VECTOR",
        "KEYWORD",
        "HYBRID",
    ],
)
def test_c12_identical_text_gets_the_best_distance(make_store, strategy):
    """docs/failure-modes.md#c12 by text: identical record first, kept by a 0.9 relevance threshold."""
    store = make_store(search_strategy=strategy)
    store.add(["pizza margherita", "sushi roll"], "memory", record_ids=["same", "other"])
    results = store.search("pizza margherita", 2)
    assert found(results)[0] == "same"
    assert 1.0 - results[0][1] >= 0.9


def test_vector_distance_is_cosine_not_euclidean(vstore):
    vstore.add(["scaled"], "memory", record_ids="s", embeddings=[vec(10, 0, 0, 0)])
    vstore.add(["diagonal"], "memory", record_ids="d", embeddings=[vec(1, 1, 0, 0)])
    results = vstore.search(query_vector=vec(0.5, 0, 0, 0), k=2)
    assert found(results) == ["s", "d"]
    assert [d for _, d in results] == pytest.approx([0.0, 1 - math.sqrt(0.5)], abs=1e-6)


def test_ties_are_ordered_by_record_type_then_id(vstore):
    v = vec(1, 0, 0, 0)
    vstore.add(["x"], "memory", record_ids="m-b", embeddings=[v])
    vstore.add(["x"], "preference", record_ids="p-a", embeddings=[v])
    vstore.add(["x"], "memory", record_ids="m-a", embeddings=[v])
    vstore.add(["x"], "user_profile", record_ids="u-1", embeddings=[v])
    vstore.add(["x"], "message", record_ids="x-1", embeddings=[v], thread_ids="t", roles="user")
    vstore.add(["x"], "fact", record_ids="f-z", embeddings=[v])
    vstore.add(["near"], "fact", record_ids="f-near", embeddings=[vec(1, 1, 0, 0)])
    results = vstore.search(query_vector=v, k=10)
    assert [(r.record_type, r.id) for r, _ in results] == [
        ("fact", "f-z"),
        ("memory", "m-a"),
        ("memory", "m-b"),
        ("message", "x-1"),
        ("preference", "p-a"),
        ("user_profile", "u-1"),
        ("fact", "f-near"),
    ]


@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD"])
def test_identical_texts_tie_and_are_ordered_by_type_then_id(make_store, strategy):
    store = make_store(search_strategy=strategy)
    store.add(["pizza oven"], "memory", record_ids="m-b")
    store.add(["pizza oven"], "guideline", record_ids="g-c")
    store.add(["pizza oven"], "memory", record_ids="m-a")
    results = store.search("pizza oven", 5)
    assert [(r.record_type, r.id) for r, _ in results] == [
        ("guideline", "g-c"),
        ("memory", "m-a"),
        ("memory", "m-b"),
    ]
    assert len({d for _, d in results}) == 1


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_distance_ranges_and_order(make_store, strategy):
    store = make_store(search_strategy=strategy)
    store.add(
        [
            "pizza margherita with basil",
            "pizza",
            "sushi and ramen",
            "basil pesto pasta",
            "margherita",
            "a long text about pizza ovens and pizza dough and pizza sauce",
        ],
        "memory",
    )
    high = 2.0 if strategy == "VECTOR" else 1.0
    for query in ("pizza", "basil margherita", "ramen", "pizza dough sauce", "nothing matches"):
        assert_well_ordered(store.search(query, 10), high=high)


def test_search_returns_the_stored_records(store):
    store.add(
        ["pizza night"],
        "memory",
        record_ids="m1",
        thread_ids="t1",
        user_ids="u1",
        metadata={"a": [1]},
        timestamps="2026-01-01T00:00:00+00:00",
    )
    store.add(["pizza chat"], "message", record_ids="x1", thread_ids="t1", roles="assistant")
    store.add_user("u1", "pizza lover")
    for record, _ in store.search("pizza", 10):
        assert record == store.get(record.record_type, record.id)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_record_with_many_chunks_is_returned_once(make_store, strategy):
    store = make_store(
        search_strategy=strategy, embedder=HashingEmbedder(64, max_input_tokens=10)
    )  # 35-char chunks
    [rid] = store.add([" ".join(["pizza"] * 80)], "memory")
    store.add(["pizza once"], "memory")
    results = store.search("pizza", 10)
    assert found(results).count(rid) == 1 and len(results) == 2


def test_default_record_types_cover_messages_memories_and_profiles(store):
    thread_store(store).create_thread_row(
        "t1", user_id=None, agent_id=None, metadata={"x": "pizza"}, config={}
    )
    store.add(["pizza msg"], "message", thread_ids="t1", roles="user")
    for t in ("memory", "guideline", "fact", "preference"):
        store.add([f"pizza {t}"], t)
    store.add_user("u1", "pizza user")
    store.add_agent("a1", "pizza agent")
    types = [r.record_type for r, _ in store.search("pizza", 100)]
    assert sorted(types) == sorted(SEARCHABLE)


@pytest.mark.parametrize(
    "strategy",
    [
        "VECTOR",
        "KEYWORD",
        "HYBRID",
    ],
)
def test_long_query_is_split_for_the_embedder(make_store, strategy):
    """docs/store.md#search-strategies: queries longer than one chunk are split like documents."""
    embedder = HashingEmbedder(64, max_input_tokens=10)  # 35-char chunks
    store = make_store(search_strategy=strategy, embedder=embedder)
    store.add(["zebra giraffe"], "memory", record_ids="target")
    store.add(["kettle teapot"], "memory", record_ids="other")
    query = " ".join(["zebra giraffe savanna"] * 20)
    results = store.search(query, 2)
    assert found(results)[0] == "target"
    assert len(results) == 1 or results[0][1] < results[1][1]
    assert all(len(t) <= 35 for call in embedder.calls for t in call)


# -- scope (docs/store.md#scopes) ------------------------------------------------------------

SCOPED = [  # id, thread, user, agent
    ("A", "t1", "u1", "a1"),
    ("B", "t2", "u1", None),
    ("C", None, "u2", "a1"),
    ("D", None, None, None),
]
SCOPE_CASES = [
    ({}, "ABCD"),
    ({"thread_id": "t1"}, "ABCD"),
    ({"user_id": "u2", "agent_id": None}, "ABCD"),
    ({"thread_id": "t1", "exact_thread_match": True}, "A"),
    ({"thread_id": None, "exact_thread_match": True}, "CD"),
    ({"user_id": "u1", "exact_user_match": True}, "AB"),
    ({"user_id": None, "exact_user_match": True}, "D"),
    ({"agent_id": "a1", "exact_agent_match": True}, "AC"),
    ({"agent_id": None, "exact_agent_match": True}, "BD"),
    ({"user_id": "u1", "agent_id": "a1", "exact_user_match": True}, "AB"),
    ({"user_id": "u1", "agent_id": "a1", "exact_user_match": True, "exact_agent_match": True}, "A"),
    (
        {"thread_id": None, "user_id": "u2", "exact_thread_match": True, "exact_user_match": True},
        "C",
    ),
    ({"thread_id": "t9", "exact_thread_match": True}, ""),
    # an omitted id with its flag set means None, the reference SDK's default
    ({"exact_thread_match": True}, "CD"),
    ({"exact_user_match": True}, "D"),
    ({"exact_agent_match": True}, "BD"),
    ({"user_id": "u1", "exact_user_match": True, "exact_agent_match": True}, "B"),
]


@pytest.mark.parametrize(("kwargs", "expected"), SCOPE_CASES, ids=[repr(c[0]) for c in SCOPE_CASES])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_exact_match_scope(make_store, strategy, kwargs, expected):
    store = make_store(search_strategy=strategy)
    for rid, thread, user, agent in SCOPED:
        store.add(
            [f"pizza {rid}"],
            "memory",
            record_ids=rid,
            thread_ids=thread,
            user_ids=user,
            agent_ids=agent,
        )
    assert sorted(found(store.search("pizza", 10, **kwargs))) == list(expected)


PROFILE_CASES = [
    ({"user_id": "u1", "exact_user_match": True}, {("user_profile", "u1")}),
    (
        {"user_id": None, "exact_user_match": True},
        {("agent_profile", "a1"), ("agent_profile", "u1"), ("memory", "mem")},
    ),
    ({"agent_id": "a1", "exact_agent_match": True}, {("agent_profile", "a1")}),
    (
        {"agent_id": None, "exact_agent_match": True},
        {("user_profile", "u1"), ("user_profile", "u2"), ("memory", "mem")},
    ),
    ({"thread_id": "t1", "exact_thread_match": True}, set()),
    (
        {"thread_id": None, "exact_thread_match": True},
        {
            ("user_profile", "u1"),
            ("user_profile", "u2"),
            ("agent_profile", "a1"),
            ("agent_profile", "u1"),
            ("memory", "mem"),
        },
    ),
    (
        {"user_id": "u1", "agent_id": "a1", "exact_user_match": True, "exact_agent_match": True},
        set(),
    ),
]


@pytest.mark.parametrize(
    ("kwargs", "expected"), PROFILE_CASES, ids=[repr(c[0]) for c in PROFILE_CASES]
)
def test_profiles_take_their_own_id_as_scope(store, kwargs, expected):
    """Profiles: own id as the user (agent) dimension, NULL elsewhere (docs/store.md#scopes)."""
    store.add_user("u1", "pizza fan")
    store.add_user("u2", "pizza critic")
    store.add_agent("a1", "pizza bot")
    store.add_agent("u1", "pizza agent named like a user")
    store.add(["pizza memory"], "memory", record_ids="mem")
    results = store.search("pizza", 20, **kwargs)
    assert {(r.record_type, r.id) for r, _ in results} == expected


# -- filters before the top-k cut (docs/store.md#scopes) ------------------------------------------

NEAR = "pizza pizza pizza"
FAR = "pizza among quantum physics lectures harbor lantern meadow copper violet window"


@pytest.fixture(params=STRATEGIES)
def crowded(request, make_store):
    """300 near records failing every filter and one far record passing them."""
    store = make_store(search_strategy=request.param)
    n = 300
    store.add(
        [NEAR] * n,
        "fact",
        thread_ids="t-near",
        user_ids="u-near",
        agent_ids="a-near",
        metadata={"keep": False},
        record_ids=[f"near-{i:03}" for i in range(n)],
    )
    store.add(
        [FAR],
        "memory",
        record_ids="far",
        thread_ids="t-far",
        user_ids="u-far",
        agent_ids="a-far",
        metadata={"keep": True},
    )
    assert found(store.search("pizza", 1)) != ["far"], "the far record must rank low"
    return store


@pytest.mark.parametrize(
    "kwargs",
    [
        {"metadata_filter": {"keep": True}},
        {"metadata_filter": {"keep": {"$not": False}}},
        {"thread_id": "t-far", "exact_thread_match": True},
        {"user_id": "u-far", "exact_user_match": True},
        {"agent_id": "a-far", "exact_agent_match": True},
        {"record_types": {"memory"}},
    ],
    ids=["metadata", "metadata-not", "thread", "user", "agent", "record_types"],
)
def test_filters_apply_before_top_k(crowded, kwargs):
    assert found(crowded.search("pizza", 1, **kwargs)) == ["far"]
    assert found(crowded.search("pizza", 3, **kwargs)) == ["far"]


# -- KEYWORD and HYBRID (docs/store.md#keyword-search) ------------------------------------------


@pytest.fixture
def kstore(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(
        ["the quick brown fox jumps over the lazy dog", "a slow green turtle", "fox fox fox den"],
        "memory",
        record_ids=["d1", "d2", "d3"],
    )
    return store


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("fox quick", ["d1", "d3"]),
        ("quick fox", ["d1", "d3"]),
        ("lazy elephant", ["d1"]),
        ("turtle", ["d2"]),
        ("zebra", []),
        ("dog jumps brown", ["d1"]),
    ],
)
def test_keyword_search_matches_terms_not_phrases(kstore, query, expected):
    results = kstore.search(query, 10)
    assert sorted(found(results)) == expected
    assert_well_ordered(results, high=1.0)


def test_keyword_search_ranks_better_matches_first(kstore):
    assert found(kstore.search("quick brown fox", 3))[0] == "d1"
    assert found(kstore.search("fox den", 3))[0] == "d3"


@pytest.mark.parametrize(
    "query",
    [
        'fox"',
        "fox AND",
        "NOT fox",
        "fox*",
        "(fox",
        "fox:den",
        "-fox",
        "fox OR",
        "NEAR(fox den)",
        "fox'; DROP TABLE records; --",
        "^fox",
        "{fox}",
    ],
)
def test_keyword_queries_with_syntax_characters_are_plain_terms(kstore, query):
    results = kstore.search(query, 10)
    assert "d3" in found(results)
    assert_well_ordered(results, high=1.0)
    assert sorted(r.id for r in kstore.list("memory")) == ["d1", "d2", "d3"]


def test_hybrid_returns_keyword_only_and_vector_only_matches(make_store):
    embedder = HashingEmbedder(64)
    store = make_store(search_strategy="HYBRID", embedder=embedder)
    q = embedder.embed(["zeta"])[0].tolist()
    minus_q = [-x for x in q]
    store.add(["unrelated words entirely"], "memory", record_ids="vector-only", embeddings=[q])
    store.add(["zeta"], "memory", record_ids="keyword-only", embeddings=[minus_q])
    store.add(
        [f"distractor {i}" for i in range(5)],
        "memory",
        embeddings=[minus_q] * 5,
        record_ids=[f"x{i}" for i in range(5)],
    )
    results = store.search("zeta", 2)
    assert sorted(found(results)) == ["keyword-only", "vector-only"]
    assert_well_ordered(store.search("zeta", 10), high=1.0)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("scope", ["user", "thread", "agent"])
def test_a_search_scoped_to_no_owner_on_a_store_without_vectors(make_store, strategy, scope):
    """``<scope>_id=None`` with an exact match means "records without that owner";
    a store that holds no vector row yet (new, or every row deleted) answers it with
    no results, not an error."""
    store = make_store(search_strategy=strategy)
    kwargs = {f"{scope}_id": None, f"exact_{scope}_match": True}
    assert store.search("apple", 3, **kwargs) == []
    store.add(["apple pie"], "memory", record_ids="owned", **{f"{scope}_ids": "someone"})
    store.add(["apple tart"], "memory", record_ids="unowned")
    assert found(store.search("apple", 3, **kwargs)) == ["unowned"]
    store.delete_records("memory", ["owned", "unowned"])
    assert store.search("apple", 3, **kwargs) == []
