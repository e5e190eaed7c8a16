"""Store conformance: ``add`` / ``add_batches`` (docs/store.md#writing-records, docs/store.md#what-is-stored-and-what-is-searched).

Expected values come from the documented rules and Oracle's SDK, not from the implementation.
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime

import numpy as np
import pytest

from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.embedders.hashing import HashingEmbedder

DIM = 64
MEMORY_LIKE = ("memory", "guideline", "fact", "preference")
BOTH_DIMS = r"(?s)(?=.*\b4\b)(?=.*\b3\b)"
"""A ValueError message that names both 4 and 3 (docs/failure-modes.md#c09)."""


def basis(i: int, dim: int = DIM) -> list[float]:
    v = [0.0] * dim
    v[i] = 1.0
    return v


def texts(rows):
    return [text for text, _ in rows]


# -- ids (docs/concepts.md#ids-and-times) ----------------------------------------------


def test_generated_ids_are_uuid4_strings_in_input_order(store):
    ids = store.add(["first", "second", "third"], "memory")
    assert len(ids) == 3 and len(set(ids)) == 3
    for rid in ids:
        assert isinstance(rid, str)
        parsed = uuid.UUID(rid)
        assert parsed.version == 4 and str(parsed) == rid
    assert [store.get("memory", rid).content for rid in ids] == ["first", "second", "third"]


def test_given_ids_are_returned_in_input_order(store):
    assert store.add(["b", "a", "c"], "fact", record_ids=["id-b", "id-a", "id-c"]) == [
        "id-b",
        "id-a",
        "id-c",
    ]
    assert [r.id for r in store.list("fact")] == ["id-b", "id-a", "id-c"]


def test_explicit_none_ids_are_generated(store):
    ids = store.add(["one", "two"], "memory", record_ids=None)
    assert [uuid.UUID(rid).version for rid in ids] == [4, 4] and ids[0] != ids[1]


def test_single_string_id_for_one_record(store):
    assert store.add(["Remember this"], "memory", record_ids="mem-get-docs") == ["mem-get-docs"]
    record = store.get("memory", "mem-get-docs")
    assert record.id == "mem-get-docs" and record.content == "Remember this"


def test_single_string_id_for_two_records_is_rejected(store, rejected):
    with rejected(store):
        store.add(["one", "two"], "memory", record_ids="same")


def test_partial_ids_are_rejected(store, rejected):
    with rejected(store):
        store.add(["one", "two"], "memory", record_ids=["given", None])


def test_duplicate_ids_in_one_call_write_nothing(store, rejected):
    """Repeated ids in one batch write nothing (docs/failure-modes.md#c14)."""
    with rejected(store):
        store.add(["one", "two"], "memory", record_ids=["r1", "r1"])
    assert store.get("memory", "r1") is None


def test_id_clashing_with_existing_record_writes_nothing(store, rejected):
    """docs/failure-modes.md#c14: a batch clashing with an existing id writes nothing."""
    store.add(["old"], "memory", record_ids="r1")
    with rejected(store):
        store.add(["new", "clash"], "memory", record_ids=["r2", "r1"])
    assert store.get("memory", "r2") is None
    assert store.get("memory", "r1").content == "old"


def test_clash_in_a_later_executemany_batch_writes_nothing(store, rejected):
    """One call is one transaction, whatever ``batch_size`` (docs/store.md#what-is-stored-and-what-is-searched)."""
    store.add(["existing"], "memory", record_ids="r9")
    with rejected(store):
        store.add(
            [f"row {i}" for i in range(10)],
            "memory",
            record_ids=[f"r{i}" for i in range(10)],
            batch_size=3,
        )
    assert [r.id for r in store.list("memory")] == ["r9"]


def test_existing_profile_id_is_rejected(store, rejected):
    assert store.add_user("u1", "Prefers concise answers.") == "u1"
    with rejected(store):
        store.add_user("u1", "Another text")
    assert store.get("user_profile", "u1").content == "Prefers concise answers."


def test_profiles_take_the_actor_id_as_record_id(store):
    assert store.add_user("u-docs-profile", "Prefers concise answers.") == "u-docs-profile"
    assert store.add_agent("a-docs-agent", "Support assistant") == "a-docs-agent"
    user = store.get("user_profile", "u-docs-profile")
    agent = store.get("agent_profile", "a-docs-agent")
    assert (user.record_type, user.content) == ("user_profile", "Prefers concise answers.")
    assert (agent.record_type, agent.content) == ("agent_profile", "Support assistant")


# -- fields, broadcast and alignment (docs/store.md#what-is-stored-and-what-is-searched) ---


def test_fields_round_trip(store):
    [rid] = store.add(
        ["hello"],
        "memory",
        thread_ids="t1",
        user_ids="u1",
        agent_ids="a1",
        timestamps="2026-01-01T12:00:00+00:00",
        metadata={"k": [1, "two", {"x": None}]},
    )
    record = store.get("memory", rid)
    assert (record.id, record.record_type, record.content) == (rid, "memory", "hello")
    assert (record.thread_id, record.user_id, record.agent_id) == ("t1", "u1", "a1")
    assert record.timestamp == "2026-01-01T12:00:00+00:00"
    assert record.metadata == {"k": [1, "two", {"x": None}]}


def test_created_at_is_store_time_from_the_clock(store, clock):
    [rid] = store.add(["hello"], "memory")
    assert datetime.fromisoformat(store.get("memory", rid).created_at) == clock.now


@pytest.mark.parametrize("record_type", MEMORY_LIKE)
def test_every_memory_like_type_is_stored_as_itself(store, record_type):
    [rid] = store.add([f"a {record_type}"], record_type)
    assert store.get(record_type, rid).record_type == record_type
    assert [r.id for r in store.list(record_type)] == [rid]


BROADCAST = [
    ("thread_ids", "t1", "thread_id", "t1"),
    ("user_ids", "u1", "user_id", "u1"),
    ("agent_ids", "a1", "agent_id", "a1"),
    ("timestamps", "2026-01-01T00:00:00+00:00", "timestamp", "2026-01-01T00:00:00+00:00"),
    ("metadata", {"src": "doc"}, "metadata", {"src": "doc"}),
    ("thread_ids", None, "thread_id", None),
    ("metadata", None, "metadata", None),
]


@pytest.mark.parametrize(("arg", "value", "field", "expected"), BROADCAST)
def test_scalars_broadcast_over_all_rows(store, arg, value, field, expected):
    ids = store.add(["one", "two", "three"], "memory", **{arg: value})
    assert [getattr(store.get("memory", rid), field) for rid in ids] == [expected] * 3


def test_aligned_lists_are_applied_per_row(store):
    ids = store.add(
        ["one", "two"],
        "memory",
        thread_ids=["t1", None],
        user_ids=[None, "u2"],
        agent_ids=["a1", "a2"],
        metadata=[{"n": 1}, None],
        timestamps=[None, "2026-02-02T00:00:00+00:00"],
    )
    one, two = (store.get("memory", rid) for rid in ids)
    assert (one.thread_id, one.user_id, one.agent_id, one.metadata) == ("t1", None, "a1", {"n": 1})
    assert (two.thread_id, two.user_id, two.agent_id, two.metadata) == (None, "u2", "a2", None)
    assert two.timestamp == "2026-02-02T00:00:00+00:00"


def test_message_roles_broadcast_and_align(store):
    ids = store.add(["hi", "hello"], "message", thread_ids="t1", roles="user")
    assert [store.get("message", rid).role for rid in ids] == ["user", "user"]
    ids = store.add(["q", "a"], "message", thread_ids="t2", roles=["user", "assistant"])
    assert [store.get("message", rid).role for rid in ids] == ["user", "assistant"]


MISALIGNED = [
    ("record_ids", ["a", "b", "c"]),
    ("thread_ids", ["t1"]),
    ("user_ids", ["u1", "u2", "u3"]),
    ("agent_ids", ["a1"]),
    ("timestamps", ["2026-01-01T00:00:00+00:00"]),
    ("metadata", [{"n": 1}, {"n": 2}, {"n": 3}]),
    ("index_texts", ["only one"]),
    ("embeddings", [basis(0)]),
    ("ttl_days", [1, 2, 3]),
    ("ttl_anchor", [TimeToLiveAnchor.CREATED_AT]),
    ("roles", ["user", "assistant", "user"]),
]


@pytest.mark.parametrize(("arg", "value"), MISALIGNED, ids=[m[0] for m in MISALIGNED])
def test_misaligned_lists_are_rejected(store, rejected, arg, value):
    with rejected(store):
        store.add(["one", "two"], "message", **{"thread_ids": "t", "roles": "user", arg: value})


def test_bare_string_contents_are_rejected(store, rejected):
    """contents is a list (docs/store.md#writing-records); a bare string must not become one row per char.

    A bare string is a ValueError, as for record_types.
    """
    with rejected(store):
        store.add("hello", "memory")


@pytest.mark.parametrize("record_type", ["thread", "note", "", "Memory"])
def test_unknown_record_type_is_rejected(store, rejected, record_type):
    with rejected(store):
        store.add(["x"], record_type)


@pytest.mark.parametrize("metadata", ["not a dict", {"s": {1, 2}}, {"o": object()}, [1, 2]])
def test_non_json_metadata_is_rejected(store, rejected, metadata):
    with rejected(store):
        store.add(["x", "y"], "memory", metadata=metadata)


# -- messages (docs/concepts.md#records) -------------------------------------------------


@pytest.mark.parametrize(
    ("roles", "stored"),
    [
        ({}, [None, None]),
        ({"roles": None}, [None, None]),
        ({"roles": ["user", None]}, ["user", None]),
    ],
    ids=["omitted", "None", "one-None"],
)
def test_message_roles_are_optional(store, roles, stored):
    """Seed 004 ``add``: roles are optional (``str | None | list[str | None]``)."""
    ids = store.add(["hi", "there"], "message", thread_ids="t1", **roles)
    assert [store.get("message", rid).role for rid in ids] == stored
    assert [m.role for m in store.list_thread_messages("t1")] == stored


@pytest.mark.parametrize("roles", ["user", ["user", "assistant"], ["misaligned"], 5])
def test_roles_are_ignored_for_other_record_types(store, roles):
    """Seed 004: roles are "only used when record_type is 'message'": ignored, not an
    error, for every other type."""
    ids = store.add(["a", "b"], "memory", roles=roles)
    assert [store.get("memory", rid).content for rid in ids] == ["a", "b"]
    assert store.add(["info"], "user_profile", record_ids="u1", roles=roles) == ["u1"]


@pytest.mark.parametrize("role", [5, b"user", ["user"]])
def test_message_role_of_the_wrong_type_is_rejected(store, rejected, role):
    with rejected(store, match=r"roles\[0\]"):
        store.add(["hi"], "message", thread_ids="t1", roles=[role])


def test_message_with_none_content_is_rejected(store, rejected):
    """None content is a ValueError (docs/concepts.md#records)."""
    with rejected(store):
        store.add(["fine", None], "message", thread_ids="t1", roles="user")


def test_message_with_empty_content_is_kept(store):
    [rid] = store.add([""], "message", thread_ids="t1", roles="assistant")
    assert store.get("message", rid).content == ""
    assert [m.id for m in store.list_thread_messages("t1")] == [rid]


# -- contents fallback (docs/store.md#what-is-stored-and-what-is-searched) -------------------


def test_none_content_falls_back_to_metadata_content(store, search_rows):
    [rid] = store.add([None], "memory", metadata={"content": "from metadata"})
    assert store.get("memory", rid).content == "from metadata"
    assert texts(search_rows(store, "memory", rid)) == ["from metadata"]
    assert store.search("metadata", 1)[0][0].id == rid


def test_empty_content_is_kept_not_replaced_by_metadata(store, search_rows):
    [rid] = store.add([""], "memory", metadata={"content": "from metadata"})
    assert store.get("memory", rid).content == ""
    assert search_rows(store, "memory", rid) == []


def test_given_content_wins_over_metadata_content(store):
    [rid] = store.add(["given"], "memory", metadata={"content": "from metadata"})
    record = store.get("memory", rid)
    assert record.content == "given"
    assert record.metadata == {"content": "from metadata"}


# -- index_texts (the table of docs/store.md#what-is-stored-and-what-is-searched) --------------

INDEX_TEXTS = [
    ("omitted", None, False, ["stored text"]),
    ("string", "alpha beta", True, ["alpha beta"]),
    ("chunk-list", ["alpha one", "beta two"], True, ["alpha one", "beta two"]),
    ("chunk-list-skips-empty", ["alpha", "", "beta"], True, ["alpha", "beta"]),
    ("None-entry", None, True, ["stored text"]),
    ("empty-string", "", True, []),
    ("empty-list", [], True, []),
]


@pytest.mark.parametrize(
    ("entry", "given", "expected_rows"),
    [e[1:] for e in INDEX_TEXTS],
    ids=[e[0] for e in INDEX_TEXTS],
)
def test_index_texts_select_the_search_rows(store, search_rows, entry, given, expected_rows):
    kwargs = {"index_texts": [entry]} if given else {}
    [rid] = store.add(["stored text"], "memory", **kwargs)
    assert store.get("memory", rid).content == "stored text"
    rows = search_rows(store, "memory", rid)
    assert texts(rows) == expected_rows
    assert all(has_vector for _, has_vector in rows)


def test_index_text_replaces_retrieval_text_for_keyword_search(make_store):
    store = make_store(search_strategy="KEYWORD", embedder=None)
    store.add(["stored words"], "memory", index_texts=["retrieval words"], record_ids="m1")
    assert [r.id for r, _ in store.search("retrieval", 5)] == ["m1"]
    assert store.search("stored", 5) == []
    assert store.search("retrieval", 5)[0][0].content == "stored words"


@pytest.mark.parametrize("entry", ["", []], ids=["empty-string", "empty-list"])
def test_empty_index_text_stores_the_record_but_makes_it_unsearchable(make_store, entry):
    for strategy in ("VECTOR", "KEYWORD"):
        store = make_store(name=f"{strategy}.db", search_strategy=strategy)
        store.add(["pizza topping"], "memory", index_texts=[entry], record_ids="m1")
        store.add(["pizza oven"], "memory", record_ids="m2")
        assert store.get("memory", "m1").content == "pizza topping"
        assert [r.id for r, _ in store.search("pizza topping", 10)] == ["m2"]


def test_caller_chunks_are_never_rechunked(make_store, search_rows):
    embedder = HashingEmbedder(DIM, max_input_tokens=10)  # 35-char store chunks
    store = make_store(embedder=embedder)
    long_chunk = " ".join(["word"] * 40)  # 199 chars
    [rid] = store.add(["stored"], "memory", index_texts=[[long_chunk, "short"]])
    assert texts(search_rows(store, "memory", rid)) == [long_chunk, "short"]
    assert any(long_chunk in call for call in embedder.calls)


def test_string_index_text_may_be_chunked_by_the_store(make_store, search_rows):
    embedder = HashingEmbedder(DIM, max_input_tokens=10)  # 35-char store chunks
    store = make_store(embedder=embedder)
    text = " ".join(f"w{i}" for i in range(60))
    [rid] = store.add(["stored"], "memory", index_texts=[text])
    rows = texts(search_rows(store, "memory", rid))
    assert len(rows) > 1 and all(len(r) <= 35 for r in rows)
    assert " ".join(rows).split() == text.split()


# -- explicit embeddings (docs/store.md#what-is-stored-and-what-is-searched) ---------------------


def test_explicit_embeddings_bypass_the_embedder(store, search_rows):
    before = len(store.embedder.calls)
    [rid] = store.add(["some text"], "memory", embeddings=[basis(3)])
    assert len(store.embedder.calls) == before
    assert search_rows(store, "memory", rid) == [("some text", True)]
    [(record, distance)] = store.search(query_vector=basis(3), k=1)
    assert record.id == rid and distance == pytest.approx(0.0, abs=1e-6)


def test_numpy_vectors_are_accepted(store):
    ids = store.add(["a", "b"], "memory", embeddings=np.array([basis(1), basis(2)]))
    assert store.search(query_vector=np.array(basis(2)), k=1)[0][0].id == ids[1]


def test_embeddings_none_behaves_as_omitted(store, search_rows):
    before = len(store.embedder.calls)
    [rid] = store.add(["embedded by the store"], "memory", embeddings=None)
    assert len(store.embedder.calls) == before + 1
    assert search_rows(store, "memory", rid) == [("embedded by the store", True)]


def test_one_vector_for_a_long_text_is_one_row(make_store, search_rows):
    embedder = HashingEmbedder(DIM, max_input_tokens=10)  # 35-char store chunks
    store = make_store(embedder=embedder)
    text = " ".join(f"w{i}" for i in range(60))
    [rid] = store.add([text], "memory", embeddings=[basis(5)])
    assert embedder.calls == []
    assert search_rows(store, "memory", rid) == [(text, True)]
    [plain] = store.add([text], "memory")
    assert len(search_rows(store, "memory", plain)) > 1, "the store would chunk it"


def test_several_vectors_need_caller_chunks(store, search_rows):
    [rid] = store.add(
        ["stored"], "memory", index_texts=[["alpha", "beta"]], embeddings=[[basis(1), basis(2)]]
    )
    assert search_rows(store, "memory", rid) == [("alpha", True), ("beta", True)]
    [(record, distance)] = store.search(query_vector=basis(2), k=1)
    assert record.id == rid and distance == pytest.approx(0.0, abs=1e-6)


REJECTED_VECTORS = [
    ("several-without-index-texts", {"embeddings": [[basis(1), basis(2)]]}),
    (
        "several-with-string-index-text",
        {"index_texts": ["one string"], "embeddings": [[basis(1), basis(2)]]},
    ),
    ("count-mismatch", {"index_texts": [["a", "b", "c"]], "embeddings": [[basis(1), basis(2)]]}),
    ("wrong-dimension", {"embeddings": [[1.0, 0.0, 0.0]]}),
    ("nan", {"embeddings": [[math.nan] + [0.0] * (DIM - 1)]}),
    ("inf", {"embeddings": [[math.inf] + [0.0] * (DIM - 1)]}),
    ("empty-vector-with-text", {"embeddings": [[]]}),
    ("non-numeric", {"embeddings": [["x"] * DIM]}),
]


@pytest.mark.parametrize(
    "kwargs", [r[1] for r in REJECTED_VECTORS], ids=[r[0] for r in REJECTED_VECTORS]
)
def test_invalid_vectors_are_rejected(store, rejected, kwargs):
    with rejected(store):
        store.add(["stored"], "memory", **kwargs)


def test_mixed_dimensions_in_one_call_are_rejected(make_store, rejected):
    store = make_store(embedder=None)
    with rejected(store):
        store.add(["a", "b"], "memory", embeddings=[[1.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])


def test_empty_vector_list_without_retrieval_text_is_allowed(store, search_rows):
    [rid] = store.add(["stored"], "memory", index_texts=[""], embeddings=[[]])
    assert store.get("memory", rid).content == "stored"
    assert search_rows(store, "memory", rid) == []


@pytest.mark.parametrize("content", ["stored", ""])
def test_one_vector_without_retrieval_text_is_stored_without_text(store, search_rows, content):
    """Seed 004: if the retrieval text is empty, the vector may be stored without text."""
    [rid] = store.add([content], "memory", index_texts=[""], embeddings=[basis(6)])
    assert [has_vector for _, has_vector in search_rows(store, "memory", rid)] == [True]
    assert store.search(query_vector=basis(6), k=1)[0][0].id == rid
    assert store.get("memory", rid).content == content


@pytest.mark.parametrize("learned", [False, True], ids=["vector_dim=4", "learned-from-first-add"])
def test_dimension_change_is_rejected_naming_both_dims(make_store, rejected, learned):
    """docs/failure-modes.md#c09: ValueError naming 4 and 3; existing data intact and searchable."""
    store = make_store(embedder=None, vector_dim=None if learned else 4)
    store.add(["four dims"], "memory", embeddings=[[1.0, 0.0, 0.0, 0.0]], record_ids="m4")
    with rejected(store, match=BOTH_DIMS):
        store.add(["three dims"], "memory", embeddings=[[1.0, 0.0, 0.0]])
    with rejected(store, match=BOTH_DIMS):
        store.search(query_vector=[1.0, 0.0, 0.0], k=1)
    assert store.get("memory", "m4").content == "four dims"
    [(record, distance)] = store.search(query_vector=[1.0, 0.0, 0.0, 0.0], k=5)
    assert record.id == "m4" and distance == pytest.approx(0.0, abs=1e-6)


def test_embedder_dimension_mismatch_is_rejected(store, rejected):
    with rejected(store, match=r"(?s)(?=.*\b64\b)(?=.*\b3\b)"):
        store.add(["x"], "memory", embeddings=[[1.0, 0.0, 0.0]])


# -- long and unusual text (C07, C08 in docs/failure-modes.md) -------------------------------------

FILLER = "river stone cloud maple harbor lantern meadow copper violet window "


@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
def test_long_text_is_chunked_for_the_embedder_and_found_by_its_last_word(make_store, strategy):
    """docs/failure-modes.md#c07: limit 512 tokens → no embedder call over 1792 chars."""
    embedder = HashingEmbedder(256, max_input_tokens=512)
    store = make_store(embedder=embedder, search_strategy=strategy)
    body = (FILLER * (140_000 // len(FILLER) + 1))[: 140_000 - len(" zanzibarquux")]
    long_text = body + " zanzibarquux"
    assert len(long_text) == 140_000
    store.add(["river stone cloud", "maple harbor lantern", "meadow copper violet"], "memory")
    [rid] = store.add([long_text], "memory")
    results = store.search("zanzibarquux", 3)
    assert results[0][0].id == rid
    assert store.get("memory", rid).content == long_text
    assert results[0][0].content == long_text
    lengths = [len(text) for call in embedder.calls for text in call]
    assert lengths and max(lengths) <= 1792


def test_emoji_and_cjk_round_trip_with_valid_chunks(make_store, search_rows):
    """docs/failure-modes.md#c08: exact round trip; every chunk valid UTF-8 without U+FFFD."""
    embedder = HashingEmbedder(DIM, max_input_tokens=50)  # 175-char store chunks
    store = make_store(embedder=embedder)
    family = "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"
    flag = "\U0001f3f3\ufe0f\u200d\U0001f308"
    text = (family + flag + " ") * 1000 + "漢字かな交じり文の記憶テスト。" * 100
    [rid] = store.add([text], "memory")
    assert store.get("memory", rid).content == text
    chunks = texts(search_rows(store, "memory", rid))
    embedded = [t for call in embedder.calls for t in call]
    assert len(chunks) > 1
    for chunk in chunks + embedded:
        assert chunk.encode("utf-8", errors="strict").decode("utf-8") == chunk
        assert "\ufffd" not in chunk
    assert "".join(chunks).replace(" ", "") == text.replace(" ", "")


# -- add_batches (docs/store.md#writing-records) -----------------------------------------------------


def test_add_batches_seed_example(store):
    assert store.add_batches(
        [
            PendingRecordBatch(
                texts=["pizza batch"], record_type="memory", record_ids="mem-batch-docs"
            )
        ]
    ) == ["mem-batch-docs"]
    assert store.get("memory", "mem-batch-docs").content == "pizza batch"


def test_add_batches_returns_all_ids_in_order(store):
    ids = store.add_batches(
        [
            PendingRecordBatch(
                texts=["m1", "m2"], record_type="memory", record_ids=["m1", "m2"], user_ids="u1"
            ),
            PendingRecordBatch(
                texts=["hello"],
                record_type="message",
                record_ids=["msg1"],
                thread_ids="t1",
                roles="user",
            ),
            PendingRecordBatch(texts=["f"], record_type="fact"),
        ]
    )
    assert ids[:3] == ["m1", "m2", "msg1"] and len(ids) == 4
    assert store.get("memory", "m2").user_id == "u1"
    assert store.get("message", "msg1").role == "user"
    assert store.get("fact", ids[3]).content == "f"


@pytest.mark.parametrize(
    "bad",
    [
        PendingRecordBatch(texts=["x"], record_type="memory", record_ids="m1"),
        PendingRecordBatch(texts=["x", "y"], record_type="memory", thread_ids=["t"]),
        PendingRecordBatch(texts=["x"], record_type="message", thread_ids="t", roles=[3]),
    ],
    ids=["id-repeated-across-batches", "misaligned", "message-with-a-bad-role"],
)
def test_add_batches_is_one_transaction(store, rejected, bad):
    good = PendingRecordBatch(texts=["ok"], record_type="memory", record_ids="m1")
    with rejected(store):
        store.add_batches([good, bad])
    assert store.get("memory", "m1") is None


def test_batch_size_keeps_all_rows_in_order(store):
    ids = store.add([f"row {i}" for i in range(10)], "memory", batch_size=3)
    assert [r.id for r in store.list("memory")] == ids
    assert [r.content for r in store.list("memory")] == [f"row {i}" for i in range(10)]
