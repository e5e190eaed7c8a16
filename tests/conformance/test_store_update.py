"""Store conformance: ``update`` (docs/store.md#reading-updating-deleting, docs/store.md#what-is-stored-and-what-is-searched).

Expected values come from the documented rules and Oracle's SDK, not from the implementation.
"""

from __future__ import annotations

import asyncio
import math

import pytest
from _fixtures import add_derived

from oam_core.embedders.hashing import HashingEmbedder

DIM = 64
ORIGINAL = "original text"


def basis(i: int, dim: int = DIM) -> list[float]:
    v = [0.0] * dim
    v[i] = 1.0
    return v


@pytest.fixture
def seeded(store):
    """A store holding memory m1, chunked memory m2, a message and a user profile."""
    store.add(
        [ORIGINAL],
        "memory",
        record_ids="m1",
        thread_ids="t1",
        user_ids="u1",
        agent_ids="a1",
        metadata={"keep": 1},
        timestamps="2026-01-01T00:00:00+00:00",
    )
    store.add(["chunked"], "memory", record_ids="m2", index_texts=[["alpha", "beta"]])
    store.add(["hello"], "message", record_ids="msg1", thread_ids="t1", roles="user")
    store.add_user("u1", "Prefers concise answers.")
    return store


def test_seed_update_example(store):
    store.add(["Original note"], record_type="memory", record_ids="mem-update-docs")
    assert store.update("memory", "mem-update-docs", text="Updated note") == 1
    assert store.get("memory", "mem-update-docs").content == "Updated note"


@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
def test_text_update_keeps_metadata_and_scope_and_is_searchable(make_store, strategy):
    """docs/failure-modes.md#c17: a text-only update never wipes metadata."""
    store = make_store(search_strategy=strategy)
    store.add(
        ["pizza margherita"],
        "memory",
        record_ids="m1",
        thread_ids="t1",
        user_ids="u1",
        agent_ids="a1",
        metadata={"source": "slack", "n": [1, 2]},
    )
    store.add(["sushi platter"], "memory", record_ids="m2")
    assert store.update("memory", "m1", text="ramen noodles") == 1
    record = store.get("memory", "m1")
    assert record.content == "ramen noodles"
    assert record.metadata == {"source": "slack", "n": [1, 2]}
    assert (record.thread_id, record.user_id, record.agent_id) == ("t1", "u1", "a1")
    assert store.search("ramen noodles", 1)[0][0].id == "m1"
    if strategy == "KEYWORD":
        assert store.search("margherita", 5) == []


def test_update_returns_zero_for_unknown_id(seeded, snapshot):
    before = snapshot(seeded)
    assert seeded.update("memory", "nope", text="x") == 0
    assert seeded.get("memory", "nope") is None
    assert snapshot(seeded) == before


@pytest.mark.parametrize("record_type", ["fact", "message", "user_profile"])
def test_update_returns_zero_when_the_type_does_not_match(seeded, snapshot, record_type):
    """Returns 0 when no record matches record_type *and* record_id (docs/store.md#reading-updating-deleting)."""
    before = snapshot(seeded)
    assert seeded.update(record_type, "m1", text="x") == 0
    assert snapshot(seeded) == before


def test_update_without_any_field_is_rejected(seeded, rejected):
    with rejected(seeded):
        seeded.update("memory", "m1")


@pytest.mark.parametrize("record_type", ["note", "", "thread"])
def test_update_of_unsupported_record_type_is_rejected(seeded, rejected, record_type):
    with rejected(seeded):
        seeded.update(record_type, "m1", text="x")


# -- rejected combinations (docs/store.md#what-is-stored-and-what-is-searched) ------------

REJECTED = [
    ("text=None+index_text", "memory", "m1", {"text": None, "index_text": "x"}),
    ("text=None+index_text-list", "memory", "m1", {"text": None, "index_text": ["x"]}),
    ("text=None+embedding", "memory", "m1", {"text": None, "embedding": basis(1)}),
    ("text=None-on-profile", "user_profile", "u1", {"text": None}),
    ("text=None-on-message", "message", "msg1", {"text": None}),
    ("index_text=None+embedding", "memory", "m1", {"index_text": None, "embedding": basis(1)}),
    (
        "index_text=None+chunk-embeddings",
        "memory",
        "m2",
        {"index_text": None, "embedding": [basis(1), basis(2)]},
    ),
    (
        "several-vectors-for-text",
        "memory",
        "m1",
        {"text": "new", "embedding": [basis(1), basis(2)]},
    ),
    (
        "several-vectors-for-string-index",
        "memory",
        "m1",
        {"index_text": "one string", "embedding": [basis(1), basis(2)]},
    ),
    (
        "chunk-count-mismatch",
        "memory",
        "m1",
        {"index_text": ["a", "b"], "embedding": [basis(1), basis(2), basis(3)]},
    ),
    (
        "embedding-only-count-mismatch",
        "memory",
        "m2",
        {"embedding": [basis(1), basis(2), basis(3)]},
    ),
    ("embedding-only-several-for-one-row", "memory", "m1", {"embedding": [basis(1), basis(2)]}),
    ("wrong-dimension", "memory", "m1", {"embedding": [1.0, 0.0, 0.0]}),
    ("nan", "memory", "m1", {"embedding": [math.nan] + [0.0] * (DIM - 1)}),
    ("empty-vector-with-text", "memory", "m1", {"text": "new", "embedding": []}),
    ("non-json-metadata", "memory", "m1", {"metadata": {"s": {1, 2}}}),
    ("non-dict-metadata", "memory", "m1", {"metadata": ["a"]}),
]


@pytest.mark.parametrize(
    ("record_type", "record_id", "kwargs"), [r[1:] for r in REJECTED], ids=[r[0] for r in REJECTED]
)
def test_rejected_combinations_write_nothing(seeded, rejected, record_type, record_id, kwargs):
    with rejected(seeded):
        seeded.update(record_type, record_id, **kwargs)


def test_dimension_mismatch_names_both_dims(seeded, rejected):
    with rejected(seeded, match=r"(?s)(?=.*\b64\b)(?=.*\b3\b)"):
        seeded.update("memory", "m1", embedding=[1.0, 0.0, 0.0])


# -- text / index_text / embedding (the table of docs/store.md#what-is-stored-and-what-is-searched) ---

SEMANTIC = [
    ("text", {"text": "new text"}, "new text", [("new text", True)]),
    ("text-empty", {"text": ""}, "", []),
    ("text=None", {"text": None}, None, []),
    ("text=None-all-None", {"text": None, "index_text": None, "embedding": None}, None, []),
    ("index_text-string", {"index_text": "search me"}, ORIGINAL, [("search me", True)]),
    ("index_text-chunks", {"index_text": ["c1", "c2"]}, ORIGINAL, [("c1", True), ("c2", True)]),
    ("index_text=None", {"index_text": None}, ORIGINAL, []),
    ("index_text-empty", {"index_text": ""}, ORIGINAL, []),
    ("index_text-empty-list", {"index_text": []}, ORIGINAL, []),
    ("index_text=None+embedding=None", {"index_text": None, "embedding": None}, ORIGINAL, []),
    ("index_text=None+empty-embedding", {"index_text": None, "embedding": []}, ORIGINAL, []),
    ("text+index_text=None", {"text": "new", "index_text": None}, "new", []),
    ("text+index_text-empty", {"text": "new", "index_text": ""}, "new", []),
    ("text+index_text", {"text": "new", "index_text": "idx"}, "new", [("idx", True)]),
    ("embedding=None", {"embedding": None}, ORIGINAL, [(ORIGINAL, False)]),
    ("text+embedding=None", {"text": "new", "embedding": None}, "new", [("new", False)]),
    (
        "chunks+embedding=None",
        {"index_text": ["c1", "c2"], "embedding": None},
        ORIGINAL,
        [("c1", False), ("c2", False)],
    ),
    ("embedding-only", {"embedding": basis(7)}, ORIGINAL, [(ORIGINAL, True)]),
    (
        "chunks+embeddings",
        {"index_text": ["c1", "c2"], "embedding": [basis(1), basis(2)]},
        ORIGINAL,
        [("c1", True), ("c2", True)],
    ),
]


@pytest.mark.parametrize(
    ("kwargs", "content", "rows"), [s[1:] for s in SEMANTIC], ids=[s[0] for s in SEMANTIC]
)
def test_semantic_updates(seeded, search_rows, kwargs, content, rows):
    assert seeded.update("memory", "m1", **kwargs) == 1
    record = seeded.get("memory", "m1")
    assert record.content == content
    assert search_rows(seeded, "memory", "m1") == rows
    assert record.metadata == {"keep": 1}
    assert record.timestamp == "2026-01-01T00:00:00+00:00"


def test_index_text_none_makes_the_record_unsearchable_but_keeps_text(make_store):
    for strategy in ("VECTOR", "KEYWORD", "HYBRID"):
        store = make_store(name=f"{strategy}.db", search_strategy=strategy)
        store.add(["pizza topping"], "memory", record_ids="m1")
        store.add(["pizza oven"], "memory", record_ids="m2")
        assert store.update("memory", "m1", index_text=None) == 1
        assert store.get("memory", "m1").content == "pizza topping"
        assert [r.id for r, _ in store.search("pizza topping", 10)] == ["m2"], strategy


def test_embedding_none_removes_the_record_from_vector_search(seeded):
    assert seeded.update("memory", "m1", embedding=None) == 1
    query = seeded.embedder.embed(["original text"])[0]
    found = [r.id for r, _ in seeded.search(query_vector=query, k=10, record_types={"memory"})]
    assert "m1" not in found and "m2" in found


def test_explicit_embedding_bypasses_the_embedder(seeded):
    before = len(seeded.embedder.calls)
    assert seeded.update("memory", "m1", embedding=basis(7)) == 1
    assert seeded.update("memory", "m2", text="new text", embedding=basis(8)) == 1
    assert len(seeded.embedder.calls) == before
    assert seeded.search(query_vector=basis(7), k=1)[0][0].id == "m1"
    assert seeded.search(query_vector=basis(8), k=1)[0][0].id == "m2"


def test_embedding_only_update_reuses_the_chunk_texts(seeded, search_rows):
    before = len(seeded.embedder.calls)
    assert seeded.update("memory", "m2", embedding=[basis(1), basis(2)]) == 1
    assert len(seeded.embedder.calls) == before
    assert search_rows(seeded, "memory", "m2") == [("alpha", True), ("beta", True)]
    [(record, distance)] = seeded.search(query_vector=basis(2), k=1)
    assert record.id == "m2" and distance == pytest.approx(0.0, abs=1e-6)


def test_embedding_only_update_after_embedding_none_restores_vectors(seeded, search_rows):
    seeded.update("memory", "m1", embedding=None)
    assert seeded.update("memory", "m1", embedding=basis(9)) == 1
    assert search_rows(seeded, "memory", "m1") == [(ORIGINAL, True)]
    assert seeded.search(query_vector=basis(9), k=1)[0][0].id == "m1"


def test_one_vector_for_long_replacement_text_is_one_row(make_store, search_rows):
    embedder = HashingEmbedder(DIM, max_input_tokens=10)  # 35-char store chunks
    store = make_store(embedder=embedder)
    store.add(["short"], "memory", record_ids="m1", embeddings=[basis(0)])
    text = " ".join(f"w{i}" for i in range(60))
    assert store.update("memory", "m1", text=text, embedding=basis(4)) == 1
    assert embedder.calls == []
    assert search_rows(store, "memory", "m1") == [(text, True)]
    assert store.update("memory", "m1", text=text) == 1
    assert len(search_rows(store, "memory", "m1")) > 1, "without a vector the store chunks it"


# -- metadata / timestamp / scope (docs/store.md#reading-updating-deleting) --------------------


def test_metadata_replaces_the_whole_dict(seeded):
    assert seeded.update("memory", "m1", metadata={"other": "x"}) == 1
    record = seeded.get("memory", "m1")
    assert record.metadata == {"other": "x"}
    assert record.content == ORIGINAL


def test_metadata_none_clears_it(seeded):
    assert seeded.update("memory", "m1", metadata=None) == 1
    assert seeded.get("memory", "m1").metadata is None
    assert [r.id for r in seeded.list("memory", metadata_filter=None)] == ["m1", "m2"]


def test_reserved_agent_memory_keys_are_kept(store, rejected):
    reserved = {"source_message_ids": ["msg-1", "msg-2"]}
    add_derived(store, "derived", "memory", "m1", reserved, metadata={"topic": "food"})
    assert store.update("memory", "m1", metadata={"topic": "travel"}) == 1
    assert store.get("memory", "m1").metadata == {"$agent_memory": reserved, "topic": "travel"}
    # only the library writes the reserved key: an update cannot change or add it
    with rejected(store, match=r"\$agent_memory"):
        store.update("memory", "m1", metadata={"$agent_memory": {"status": "forged"}})


def test_the_managed_mark_is_kept_and_can_be_added(store):
    reserved = {"source_message_ids": ["msg-1"]}
    add_derived(store, "derived", "memory", "m1", reserved, metadata={"topic": "food"})
    mark = {"$agent_memory": {"managed": True}}
    # the caller's mark joins the stored provenance, which stays
    assert store.update("memory", "m1", metadata={**mark, "topic": "tea"}) == 1
    assert store.get("memory", "m1").metadata == {
        "$agent_memory": {"source_message_ids": ["msg-1"], "managed": True},
        "topic": "tea",
    }
    # and an update without it keeps it, as every reserved key
    assert store.update("memory", "m1", metadata={"topic": "travel"}) == 1
    assert store.get("memory", "m1").metadata["$agent_memory"]["managed"] is True
    [plain] = store.add(["x"], record_type="memory", metadata=mark)
    assert store.get("memory", plain).metadata == mark


def test_timestamp_replaced_and_cleared(seeded):
    assert seeded.update("memory", "m1", timestamp="2026-02-02T10:00:00+00:00") == 1
    assert seeded.get("memory", "m1").timestamp == "2026-02-02T10:00:00+00:00"
    assert seeded.update("memory", "m1", timestamp=None) == 1
    record = seeded.get("memory", "m1")
    assert record.timestamp is None
    assert record.content == ORIGINAL and record.metadata == {"keep": 1}


def test_update_never_changes_scope_or_type(seeded):
    seeded.update("memory", "m1", text="t", metadata={"a": 1}, timestamp=None)
    record = seeded.get("memory", "m1")
    assert (record.record_type, record.thread_id, record.user_id, record.agent_id) == (
        "memory",
        "t1",
        "u1",
        "a1",
    )


def test_profile_text_update(seeded):
    assert seeded.update("user_profile", "u1", text="Likes long stories.") == 1
    assert seeded.get("user_profile", "u1").content == "Likes long stories."
    results = seeded.search("long stories", 1, record_types={"user_profile"})
    assert results[0][0].id == "u1"


def test_message_update_keeps_its_place_in_the_thread(store):
    store.add(
        ["one", "two", "three"],
        "message",
        record_ids=["a", "b", "c"],
        thread_ids="t1",
        roles="user",
    )
    assert store.update("message", "b", text="TWO") == 1
    messages = store.list_thread_messages("t1")
    assert [(m.id, m.content, m.role) for m in messages] == [
        ("a", "one", "user"),
        ("b", "TWO", "user"),
        ("c", "three", "user"),
    ]
    assert [m.seq_no for m in messages] == sorted(m.seq_no for m in messages)


def test_text_update_without_embedder_keeps_caller_vectors(make_store, rejected):
    """A text update on a store without an embedder would write search rows without
    vectors: with the record's vectors caller-supplied, it is refused unless the
    caller passes ``embedding=`` (a new vector, or None to drop the vectors)."""
    store = make_store(embedder=None)
    store.add(["north"], "memory", record_ids="n", embeddings=[basis(0)])
    store.add(["south"], "memory", record_ids="s", embeddings=[basis(1)])
    store.add(["keyword only"], "memory", record_ids="k")
    with rejected(store, match=r"memory 'n'.*needs embedding="):
        store.update("memory", "n", text="north renamed")
    with rejected(store, match=r"needs embedding="):
        store.update("memory", "n", index_text=["north", "renamed"])
    assert store.search(query_vector=basis(0), k=1)[0][0].id == "n"

    assert store.update("memory", "n", text="north renamed", embedding=basis(2)) == 1
    hit, distance = store.search(query_vector=basis(2), k=1)[0]
    assert (hit.id, hit.content, distance) == ("n", "north renamed", pytest.approx(0.0, abs=1e-6))

    assert store.update("memory", "s", text="south renamed", embedding=None) == 1
    assert "s" not in [r.id for r, _ in store.search(query_vector=basis(1), k=5)]
    assert store.get("memory", "s").content == "south renamed"
    # A record that never had vectors is updated as before.
    assert store.update("memory", "k", text="keyword renamed") == 1
    assert store.get("memory", "k").content == "keyword renamed"
    # Metadata-only and embedding-only updates do not touch the retrieval text.
    assert store.update("memory", "n", metadata={"x": 1}) == 1
    assert store.search(query_vector=basis(2), k=1)[0][0].id == "n"


def test_text_update_without_embedder_keeps_caller_vectors_async(make_store, rejected):
    store = make_store(embedder=None)
    store.add(["north"], "memory", record_ids="n", embeddings=[basis(0)])
    with rejected(store, match=r"needs embedding="):
        asyncio.run(store.update_async("memory", "n", text="north renamed"))
