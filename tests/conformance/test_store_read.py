"""Store conformance: get / list / list_thread_messages, the metadata filter language,
and persistence of file stores (docs/store.md#reading-updating-deleting, docs/store.md#schema, docs/filters.md,
docs/store.md#defaults).

Expected values come from the documented rules and Oracle's SDK, not from the implementation.
"""

from __future__ import annotations

import pytest

from oam_core.apis.records import MessageRecord
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.threads import thread_store


def ids(records):
    return [r.id for r in records]


# -- get ----------------------------------------------------------------------------------


def test_get_seed_example(store):
    assert store.add(["Remember this"], record_type="memory", record_ids="mem-get-docs") == [
        "mem-get-docs"
    ]
    assert store.get("memory", "mem-get-docs").id == "mem-get-docs"


def test_get_unknown_id_or_other_type_is_none(store):
    store.add(["a fact"], "fact", record_ids="f1")
    assert store.get("fact", "missing") is None
    assert store.get("memory", "f1") is None
    assert store.get("guideline", "f1") is None
    assert store.get("fact", "f1").content == "a fact"


def test_get_unknown_type_is_rejected(store):
    with pytest.raises(ValueError):
        store.get("note", "x")


def test_get_message_is_a_message_record(store):
    store.add(["hi"], "message", record_ids="m1", thread_ids="t1", roles="user")
    record = store.get("message", "m1")
    assert isinstance(record, MessageRecord)
    assert (record.role, record.content, record.thread_id) == ("user", "hi", "t1")


# -- list: limit and order (docs/store.md#reading-updating-deleting) -------------------------


def test_list_seed_examples(store):
    assert store.add(
        ["First listed", "Second listed"],
        record_type="memory",
        record_ids=["mem-list-docs-1", "mem-list-docs-2"],
    ) == ["mem-list-docs-1", "mem-list-docs-2"]
    assert ids(store.list("memory", limit=2)) == ["mem-list-docs-1", "mem-list-docs-2"]
    assert store.add_user("u-list-docs", "Prefers concise answers.") == "u-list-docs"
    assert "u-list-docs" in ids(store.list("user_profile", user_id=None, limit=10))


@pytest.fixture
def five(store):
    for i in range(5):  # one call each: insertion order is call order
        store.add([f"memory {i}"], "memory", record_ids=f"r{i}")
    return store


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, ["r0", "r1", "r2", "r3", "r4"]),
        ({"limit": None}, ["r0", "r1", "r2", "r3", "r4"]),
        ({"limit": 2}, ["r3", "r4"]),
        ({"limit": 1}, ["r4"]),
        ({"limit": 5}, ["r0", "r1", "r2", "r3", "r4"]),
        ({"limit": 100}, ["r0", "r1", "r2", "r3", "r4"]),
    ],
    ids=["omitted", "None", "2", "1", "5", "100"],
)
def test_list_returns_the_newest_rows_oldest_first(five, kwargs, expected):
    assert ids(five.list("memory", **kwargs)) == expected


def test_list_limit_omitted_caps_at_max_list_limit(store):
    n = 10_001
    store.add(
        [f"r{i}" for i in range(n)],
        "memory",
        index_texts=[""] * n,
        record_ids=[f"r{i}" for i in range(n)],
    )
    capped = store.list("memory")
    assert len(capped) == 10_000
    assert (capped[0].id, capped[-1].id) == ("r1", f"r{n - 1}")
    assert len(store.list("memory", limit=None)) == n


def test_list_only_returns_the_requested_type(store):
    store.add(["m"], "memory", record_ids="m1")
    store.add(["f"], "fact", record_ids="f1")
    store.add(["g"], "guideline", record_ids="g1")
    store.add(["p"], "preference", record_ids="p1")
    store.add(["hi"], "message", record_ids="x1", thread_ids="t", roles="user")
    assert ids(store.list("memory")) == ["m1"]
    assert ids(store.list("fact")) == ["f1"]
    assert ids(store.list("guideline")) == ["g1"]
    assert ids(store.list("preference")) == ["p1"]
    assert ids(store.list("message")) == ["x1"]


def test_list_unknown_type_is_rejected(store):
    with pytest.raises(ValueError):
        store.list("note")


# -- list: scope filters (docs/store.md#scopes) ------------------------------------------------

SCOPED = [  # id, thread, user, agent
    ("A", "t1", "u1", "a1"),
    ("B", "t2", "u1", None),
    ("C", None, "u2", "a1"),
    ("D", None, None, None),
]

SCOPE_CASES = [
    ({}, ["A", "B", "C", "D"]),
    ({"thread_id": "t1"}, ["A"]),
    ({"thread_id": None}, ["C", "D"]),
    ({"user_id": "u1"}, ["A", "B"]),
    ({"user_id": None}, ["D"]),
    ({"agent_id": "a1"}, ["A", "C"]),
    ({"agent_id": None}, ["B", "D"]),
    ({"thread_id": None, "agent_id": "a1"}, ["C"]),
    ({"user_id": "u1", "agent_id": None}, ["B"]),
    ({"thread_id": "nope"}, []),
]


@pytest.mark.parametrize(("kwargs", "expected"), SCOPE_CASES, ids=[repr(c[0]) for c in SCOPE_CASES])
def test_list_scope_filters(store, kwargs, expected):
    """Omitted = no filter; None = only rows where that column is NULL."""
    for rid, thread, user, agent in SCOPED:
        store.add([rid], "fact", record_ids=rid, thread_ids=thread, user_ids=user, agent_ids=agent)
    assert ids(store.list("fact", **kwargs)) == expected


@pytest.mark.parametrize(
    "kwargs",
    [
        {"user_id": None},
        {"user_id": "someone-else"},
        {"agent_id": None},
        {"agent_id": "x"},
        {"thread_id": None},
        {"thread_id": "t1"},
    ],
)
@pytest.mark.parametrize("profile", ["user_profile", "agent_profile"])
def test_profiles_ignore_scope_filters(store, kwargs, profile):
    add = store.add_user if profile == "user_profile" else store.add_agent
    add("p1", "first")
    add("p2", "second")
    assert ids(store.list(profile, **kwargs)) == ["p1", "p2"]


def test_profile_list_is_ordered_and_typed(store):
    store.add_user("u1", "user info")
    store.add_agent("a1", "agent info")
    [user] = store.list("user_profile")
    [agent] = store.list("agent_profile")
    assert (user.id, user.record_type, user.content) == ("u1", "user_profile", "user info")
    assert (agent.id, agent.record_type, agent.content) == ("a1", "agent_profile", "agent info")


# -- metadata filter language (docs/filters.md) --------------------------------------------------

FILTER_DATA = {
    "r1": {"src": {"kind": "doc", "n": 1}},
    "r2": {"tags": ["a", "b"]},
    "r3": {"tags": ["a"]},
    "r4": {"tags": ["b", "a"]},
    "r5": {"flag": True},
    "r6": {"flag": 1},
    "r7": {"tags": "a"},
    "r8": None,
    "r9": {"src": {"kind": "pdf"}},
    "r10": {"nul": None},
}
ALL = list(FILTER_DATA)


def _except(*excluded):
    return [r for r in ALL if r not in excluded]


FILTER_CASES = [
    ("nested-subset", {"src": {"kind": "doc"}}, ["r1"]),
    ("nested-full", {"src": {"kind": "doc", "n": 1}}, ["r1"]),
    ("nested-other-value", {"src": {"kind": "pdf"}}, ["r9"]),
    ("nested-empty-dict-matches-any-object", {"src": {}}, ["r1", "r9"]),
    ("list-equality", {"tags": ["a"]}, ["r3"]),
    ("list-equality-order", {"tags": ["a", "b"]}, ["r2"]),
    ("scalar-vs-array", {"tags": "a"}, ["r7"]),
    ("array-contains", {"tags": {"$array_contains": "a"}}, ["r2", "r3", "r4"]),
    ("array-contains-all", {"tags": {"$array_contains": ["a", "b"]}}, ["r2", "r4"]),
    ("array-contains-any", {"tags": {"$array_contains_any": ["b", "z"]}}, ["r2", "r4"]),
    ("not-array-contains", {"tags": {"$not": {"$array_contains": "b"}}}, _except("r2", "r4")),
    ("not-raw-value", {"tags": {"$not": ["a"]}}, _except("r3")),
    ("not-scalar", {"flag": {"$not": True}}, _except("r5")),
    ("true-is-not-1", {"flag": True}, ["r5"]),
    ("1-is-not-true", {"flag": 1}, ["r6"]),
    ("null-value-needs-key", {"nul": None}, ["r10"]),
    (
        "operators-are-anded",
        {"tags": {"$array_contains": "a", "$not": {"$array_contains": "b"}}},
        ["r3"],
    ),
    ("entries-are-anded", {"tags": {"$array_contains": "a"}, "flag": True}, []),
    ("missing-key", {"absent": "x"}, []),
]


@pytest.fixture
def filtered(store):
    for rid, meta in FILTER_DATA.items():
        store.add([f"pizza {rid}"], "memory", record_ids=rid, metadata=meta)
    return store


@pytest.mark.parametrize(
    ("flt", "expected"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_metadata_filter_in_list(filtered, flt, expected):
    assert ids(filtered.list("memory", metadata_filter=flt)) == expected


@pytest.mark.parametrize(
    ("flt", "expected"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_metadata_filter_in_search(filtered, flt, expected):
    found = filtered.search("pizza", 100, metadata_filter=flt)
    assert sorted(r.id for r, _ in found) == sorted(expected)


def test_metadata_filter_omitted_and_none(filtered):
    assert ids(filtered.list("memory")) == ALL
    assert ids(filtered.list("memory", metadata_filter=None)) == ["r8"]


BOOL_DATA = {
    "b": {"x": True, "t": [True], "n": {"v": True}},
    "i": {"x": 1, "t": [1], "n": {"v": 1}},
    "s": {"x": "1", "t": ["1"], "n": {"v": "1"}},
}


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        ({"x": True}, ["b"]),
        ({"x": 1}, ["i"]),
        ({"x": "1"}, ["s"]),
        ({"t": [True]}, ["b"]),
        ({"t": [1]}, ["i"]),
        ({"n": {"v": True}}, ["b"]),
        ({"n": {"v": 1}}, ["i"]),
        ({"t": {"$array_contains": True}}, ["b"]),
        ({"t": {"$array_contains": 1}}, ["i"]),
        ({"t": {"$array_contains_any": [True, "1"]}}, ["b", "s"]),
        ({"x": {"$not": 1}}, ["b", "s"]),
        ({"t": {"$not": {"$array_contains": True}}}, ["i", "s"]),
    ],
)
def test_true_never_equals_one(store, flt, expected):
    """docs/filters.md#values: ``True`` never equals ``1``, at any depth and in any operator."""
    for rid, meta in BOOL_DATA.items():
        store.add([f"pizza {rid}"], "memory", record_ids=rid, metadata=meta)
    assert ids(store.list("memory", metadata_filter=flt)) == expected
    assert sorted(r.id for r, _ in store.search("pizza", 10, metadata_filter=flt)) == expected


def test_c10_nested_filter_on_a_single_record(store):
    """A filter on a nested object matches by its keys (docs/failure-modes.md#c10)."""
    store.add(["doc"], "memory", record_ids="m1", metadata={"src": {"kind": "doc", "n": 1}})
    assert ids(store.list("memory", metadata_filter={"src": {"kind": "doc"}})) == ["m1"]
    assert store.list("memory", metadata_filter={"src": {"kind": "pdf"}}) == []
    assert store.search("doc", 5, metadata_filter={"src": {"kind": "pdf"}}) == []


def test_c11_list_equality_vs_membership(store):
    """A list value is equality, ``$array_contains`` is membership (docs/failure-modes.md#c11)."""
    store.add(
        ["x", "y", "z"],
        "memory",
        record_ids=["t1", "t2", "t3"],
        metadata=[{"tags": ["a", "b"]}, {"tags": ["a"]}, {"tags": ["b", "a"]}],
    )
    assert ids(store.list("memory", metadata_filter={"tags": ["a"]})) == ["t2"]
    assert ids(store.list("memory", metadata_filter={"tags": {"$array_contains": "a"}})) == [
        "t1",
        "t2",
        "t3",
    ]


INVALID_FILTERS = [
    ("unknown-operator", {"tags": {"$bogus": 1}}),
    ("mixed-keys", {"tags": {"$array_contains": "a", "plain": 1}}),
    ("empty-operand-list", {"tags": {"$array_contains_any": []}}),
    ("non-list-any-operand", {"tags": {"$array_contains_any": "a"}}),
    ("non-scalar-operand", {"tags": {"$array_contains": {"x": 1}}}),
    ("non-json-value", {"x": {1, 2}}),
    ("non-json-object", {"x": object()}),
    ("non-dict-string", "tags"),
    ("non-dict-list", [{"tags": "a"}]),
]


@pytest.mark.parametrize(
    "flt", [c[1] for c in INVALID_FILTERS], ids=[c[0] for c in INVALID_FILTERS]
)
def test_invalid_filters_are_rejected_never_unfiltered(filtered, rejected, flt):
    with rejected(filtered):
        filtered.list("memory", metadata_filter=flt)
    with rejected(filtered):
        filtered.search("pizza", 5, metadata_filter=flt)


HOSTILE = [
    "a'; DROP TABLE records; --",
    'a"; DROP TABLE records; --',
    "a.b",
    "a.$b",
    "a[0]",
    "a\\b",
    "*",
    "ключ 键 🔑",
    "",
]


@pytest.mark.parametrize("key", HOSTILE)
def test_hostile_filter_keys_and_values_are_literal(store, key):
    value = "x\"'); DROP TABLE records; --"
    store.add(["target"], "memory", record_ids="target", metadata={key: value})
    store.add(["nested"], "memory", record_ids="nested", metadata={"a": {"b": value}, "$": 1})
    store.add(["other"], "memory", record_ids="other", metadata={key: "other value"})
    assert ids(store.list("memory", metadata_filter={key: value})) == ["target"]
    assert [r.id for r, _ in store.search("target", 5, metadata_filter={key: value})] == ["target"]
    assert ids(store.list("memory", metadata_filter={key: {"$not": value}})) == [
        "nested",
        "other",
    ]
    assert ids(store.list("memory")) == ["target", "nested", "other"]
    assert store.get("memory", "target").metadata == {key: value}


# -- list_thread_messages (docs/store.md#sequence-numbers) -----------------------------------------


def test_list_thread_messages_seed_example(store):
    assert store.list_thread_messages("c1") == []


def test_c02_equal_timestamps_keep_insertion_order(store):
    """docs/failure-modes.md#c02: ties in timestamp never reorder messages."""
    same = "2026-01-01T12:00:00+00:00"
    order = ["z9", "m5", "a1", "q7", "b2"]  # neither sorted by id nor by content
    for i, rid in enumerate(order):
        store.add(
            [f"{10 - i} message"],
            "message",
            record_ids=rid,
            thread_ids="t1",
            roles="user" if i % 2 == 0 else "assistant",
            timestamps=same,
        )
    store.add(
        ["y", "x"],
        "message",
        record_ids=["y0", "x0"],
        thread_ids="t1",
        roles="user",
        timestamps=same,
    )
    for _ in range(3):
        assert ids(store.list_thread_messages("t1")) == [*order, "y0", "x0"]
        assert ids(store.list("message", thread_id="t1")) == [*order, "y0", "x0"]


def test_earlier_timestamp_added_later_stays_later(store):
    store.add(
        ["first"],
        "message",
        record_ids="m1",
        thread_ids="t1",
        roles="user",
        timestamps="2026-01-02T00:00:00+00:00",
    )
    store.add(
        ["second"],
        "message",
        record_ids="m2",
        thread_ids="t1",
        roles="user",
        timestamps="2026-01-01T00:00:00+00:00",
    )
    assert ids(store.list_thread_messages("t1")) == ["m1", "m2"]


def test_deleting_the_tail_then_adding_keeps_insertion_order(store):
    store.add(["A", "B", "C"], "message", record_ids=["a", "b", "c"], thread_ids="t1", roles="user")
    store.delete("message", "c")
    store.delete("message", "b")
    store.add(["D"], "message", record_ids="d", thread_ids="t1", roles="user")
    store.delete("message", "a")
    store.add(["E"], "message", record_ids="e", thread_ids="t1", roles="user")
    messages = store.list_thread_messages("t1")
    assert ids(messages) == ["d", "e"]
    assert messages[0].seq_no < messages[1].seq_no


@pytest.fixture
def thread20(store):
    for i in range(20):
        store.add(
            [f"m{i}"],
            "message",
            record_ids=f"m{i}",
            thread_ids="t1",
            roles="user" if i % 2 == 0 else "assistant",
        )
        store.add([f"other {i}"], "message", record_ids=f"o{i}", thread_ids="t2", roles="user")
    store.add(["a memory"], "memory", record_ids="mem", thread_ids="t1")
    return store


ALL20 = [f"m{i}" for i in range(20)]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, ALL20),
        ({"last_n": 3}, ALL20[-3:]),
        ({"last_n": 20}, ALL20),
        ({"last_n": 100}, ALL20),
        ({"start": 5, "end": 8}, ALL20[5:8]),
        ({"start": 15}, ALL20[15:]),
        ({"end": 2}, ALL20[:2]),
        ({"start": -4, "end": -1}, ALL20[-4:-1]),
    ],
    ids=["all", "last-3", "last-20", "last-100", "5:8", "15:", ":2", "-4:-1"],
)
def test_list_thread_messages_windows(thread20, kwargs, expected):
    messages = thread20.list_thread_messages("t1", **kwargs)
    assert ids(messages) == expected
    assert all(isinstance(m, MessageRecord) for m in messages)


def test_thread_messages_carry_role_and_increasing_seq_no(thread20):
    messages = thread20.list_thread_messages("t1")
    assert [m.role for m in messages[:3]] == ["user", "assistant", "user"]
    seq = [m.seq_no for m in messages]
    assert seq == sorted(seq) and len(set(seq)) == 20
    assert thread20.count_thread_messages("t1") == 20
    assert thread20.count_thread_messages("t2") == 20
    assert thread20.count_thread_messages("none") == 0
    assert thread20.list_thread_messages("none") == []


# -- persistence (docs/store.md#schema) ---------------------------------------------------------------


@pytest.fixture
def file_backend(backend):
    if not backend.shared_storage:
        pytest.skip(f"{backend.id} storage does not outlive the store object")
    return backend


def test_reopen_keeps_everything(file_backend, make_store):
    first = make_store()
    first.add(
        ["pizza margherita"],
        "memory",
        record_ids="m1",
        thread_ids="t1",
        user_ids="u1",
        metadata={"tags": ["x"]},
        timestamps="2026-01-01T00:00:00+00:00",
    )
    first.add(["a", "b", "c"], "message", record_ids=["x", "y", "z"], thread_ids="t1", roles="user")
    first.add_user("u1", "Prefers concise answers.")
    thread_store(first).create_thread_row(
        "t1", user_id="u1", agent_id=None, metadata={"k": 1}, config={"c": 2}
    )
    before = {t: first.list(t, limit=None) for t in ("memory", "message", "user_profile")}
    first.close()
    second = make_store()
    assert {t: second.list(t, limit=None) for t in before} == before
    assert ids(second.list_thread_messages("t1")) == ["x", "y", "z"]
    row = thread_store(second).get_thread_row("t1")
    assert (row.user_id, row.metadata, row.config) == ("u1", {"k": 1}, {"c": 2})
    assert second.search("margherita", 1)[0][0].id == "m1"
    second.add(["d"], "message", record_ids="w", thread_ids="t1", roles="user")
    assert ids(second.list_thread_messages("t1")) == ["x", "y", "z", "w"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"embedder": HashingEmbedder(32)},
        {"embedder": None, "vector_dim": 32},
    ],
    ids=["embedder-dim", "vector_dim"],
)
def test_reopen_with_a_different_dimension_is_rejected(file_backend, make_store, kwargs):
    first = make_store()
    first.add(["kept"], "memory", record_ids="m1")
    first.close()
    with pytest.raises(ValueError, match=r"(?s)(?=.*\b64\b)(?=.*\b32\b)"):
        make_store(**kwargs)
    again = make_store()
    assert again.get("memory", "m1").content == "kept"


def test_reopen_keeps_a_learned_dimension(file_backend, make_store):
    first = make_store(embedder=None)
    first.add(["four"], "memory", record_ids="m1", embeddings=[[1.0, 0.0, 0.0, 0.0]])
    first.close()
    second = make_store(embedder=None)
    with pytest.raises(ValueError, match=r"(?s)(?=.*\b4\b)(?=.*\b3\b)"):
        second.add(["three"], "memory", embeddings=[[1.0, 0.0, 0.0]])
    assert second.search(query_vector=[1.0, 0.0, 0.0, 0.0], k=1)[0][0].id == "m1"


def test_memory_store_ids_separate_stores_in_one_database(file_backend, make_store):
    a = make_store(memory_store_id="alpha")
    b = make_store(memory_store_id="beta_2")
    a.add(["in alpha"], "memory", record_ids="same")
    b.add(["in beta"], "memory", record_ids="same")
    assert a.get("memory", "same").content == "in alpha"
    assert b.get("memory", "same").content == "in beta"
    assert ids(a.list("memory")) == ["same"] and ids(b.list("memory")) == ["same"]
    assert [r.content for r, _ in b.search("in", 5)] == ["in beta"]


@pytest.mark.parametrize("bad", ["1abc", "a" * 17, "a-b", "", "a b", "_a"])
def test_invalid_memory_store_id_is_rejected(make_store, bad):
    with pytest.raises(ValueError):
        make_store(memory_store_id=bad)


# -- reading a thread by seq_no (issue 14, 1; docs/failure-modes.md#c21) ---------------------------


def test_thread_messages_by_seq_ranges_and_pages(store):
    ids = store.add(
        [f"m{i}" for i in range(6)],
        "message",
        record_ids=[f"m{i}" for i in range(6)],
        thread_ids="t",
    )
    store.add(["other"], "message", thread_ids="u")
    read = thread_store(store).list_thread_messages_by_seq
    seqs = [m.seq_no for m in read("t")]
    assert [m.id for m in read("t")] == ids and seqs == sorted(seqs)
    assert [m.id for m in read("t", after=seqs[1])] == ids[2:]
    assert [m.id for m in read("t", through=seqs[1])] == ids[:2]
    assert [m.id for m in read("t", after=seqs[0], through=seqs[3])] == ids[1:4]
    assert [m.id for m in read("t", limit=2)] == ids[:2]
    assert [m.id for m in read("t", limit=2, newest=True)] == ids[4:]
    assert [m.id for m in read("t", through=seqs[3], limit=2, newest=True)] == ids[2:4]
    assert read("t", limit=0) == [] and read("nope") == []
    # a delete between two pages shifts nothing: the next page starts after a seq_no
    page = read("t", limit=3)
    store.delete("message", "m1")
    store.delete("message", "m4")
    assert [m.id for m in read("t", after=page[-1].seq_no, limit=3)] == ["m3", "m5"]
    assert [m.id for m in read("t", after=2**70, through=-(2**70))] == []
    for bad in ({"after": "1"}, {"limit": -1}, {"through": 1.5}, {"newest": 1}):
        with pytest.raises(ValueError):
            read("t", **bad)


# -- reopening with another strategy (issue 14, 9) ---------------------------------------


def test_reopening_with_another_strategy_works_and_is_recorded(make_store, backend):
    """SQLite and PostgreSQL keep the vector and the full-text index of every store,
    so a store reopens with any strategy; the one given is recorded and an open
    without ``search_strategy`` uses it."""
    if not backend.shared_storage:
        pytest.skip(f"{backend.id} storage does not outlive the store object")
    first = make_store(name="strategies.db", search_strategy="KEYWORD")
    first.add(["the cat sleeps on the piano", "dogs bark"], "memory", record_ids=["cat", "dog"])
    first.close()
    for strategy in ("HYBRID", "VECTOR", "KEYWORD"):
        store = make_store(name="strategies.db", search_strategy=strategy)
        assert store.search_strategy.value == strategy
        assert store.search("cat piano", 1)[0][0].id == "cat"
        store.close()
        if backend.id != "oracle":  # Oracle defaults to VECTOR (docs/store.md#search-strategies)
            again = make_store(name="strategies.db")
            assert again.search_strategy.value == strategy  # recorded
            again.close()
