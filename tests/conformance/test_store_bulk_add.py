"""Store conformance: the bulk shape of ``add`` (one 2-D array of vectors, aligned
lists of scope ids and metadata) is checked column by column (docs/sqlite.md,
"Writes"; every back end plans writes the same way). Every rule still holds: a bad
row is named with its value, nothing is written, and a good call stores exactly
what the row-by-row shape stores.
"""

from __future__ import annotations

import collections
import math

import numpy as np
import pytest

from oam_core.store.strategy import searching_with

DIM = 8


def matrix(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


@pytest.fixture
def store(make_store):
    return make_store(embedder=None, vector_dim=DIM)


def test_an_array_and_a_list_of_lists_store_the_same(make_store):
    vecs = matrix(6)
    kwargs = dict(
        record_ids=[f"r{i}" for i in range(6)],
        user_ids=[f"u{i % 2}" for i in range(6)],
        metadata=[{"i": i, "tags": ["a", "b"], "ok": True} for i in range(6)],
    )
    by_array = make_store(embedder=None, vector_dim=DIM, name="array.db")
    by_list = make_store(embedder=None, vector_dim=DIM, name="list.db")
    by_array.add([f"text {i}" for i in range(6)], "memory", embeddings=vecs, **kwargs)
    by_list.add([f"text {i}" for i in range(6)], "memory", embeddings=vecs.tolist(), **kwargs)
    for rid in kwargs["record_ids"]:
        a, b = by_array.get("memory", rid), by_list.get("memory", rid)
        assert (a.content, a.user_id, a.metadata) == (b.content, b.user_id, b.metadata)
    q = matrix(1, seed=9)[0]
    got = [(r.id, round(d, 6)) for r, d in by_array.search(query_vector=q, k=6)]
    assert got == [(r.id, round(d, 6)) for r, d in by_list.search(query_vector=q, k=6)]
    assert [
        r.id for r, _ in by_array.search(query_vector=q, k=6, user_id="u1", exact_user_match=True)
    ] == [r.id for r, _ in by_list.search(query_vector=q, k=6, user_id="u1", exact_user_match=True)]


def test_an_array_row_of_nan_is_named(store, rejected):
    vecs = matrix(5)
    vecs[3, 2] = math.nan
    with rejected(store, match=r"embeddings\[3\].*NaN"):
        store.add(["t"] * 5, "memory", embeddings=vecs)


def test_an_array_of_another_dimension_is_rejected(store, rejected):
    with rejected(store, match=r"(?s)(?=.*\b4\b)(?=.*\b8\b)"):
        store.add(["t"] * 3, "memory", embeddings=np.ones((3, 4), np.float32))


def test_an_array_with_too_few_rows_is_rejected(store, rejected):
    with rejected(store, match="one entry per content"):
        store.add(["t"] * 3, "memory", embeddings=matrix(2))


def test_an_array_of_zero_dimensions_is_rejected(store, rejected):
    with rejected(store, match="non-empty"):
        store.add(["t"] * 2, "memory", embeddings=np.zeros((2, 0), np.float32))


def test_integer_and_float64_arrays_are_read_as_float32(store):
    ids = store.add(["a", "b"], "memory", embeddings=np.eye(2, DIM, dtype=np.int64))
    assert store.search(query_vector=np.eye(1, DIM)[0], k=1)[0][0].id == ids[0]
    ids = store.add(["c"], "memory", embeddings=np.eye(1, DIM, 3, dtype=np.float64))
    assert store.search(query_vector=np.eye(1, DIM, 3)[0], k=1)[0][0].id == ids[0]


@pytest.mark.parametrize(
    ("arg", "values", "match"),
    [
        ("user_ids", ["u1", "", "u1"], r"user_ids\[1\]"),
        ("user_ids", ["u1", "u1", 7], r"user_ids\[2\].*7"),
        ("agent_ids", ["a", ["not", "hashable"], "a"], r"agent_ids\[1\]"),
        ("thread_ids", ["t", "t", "bad\x00id"], r"thread_ids\[2\].*NUL"),
        ("record_ids", ["r1", "r\ud800", "r3"], r"record_ids\[1\].*surrogate"),
    ],
)
def test_a_bad_id_in_a_column_is_named(store, rejected, arg, values, match):
    with rejected(store, match=match):
        store.add(["a", "b", "c"], "memory", embeddings=matrix(3), **{arg: values})


def test_a_bad_content_in_a_column_is_named(store, rejected):
    with rejected(store, match=r"contents\[2\].*NUL"):
        store.add(["fine", "fine", "not\x00fine"], "memory", embeddings=matrix(3))


@pytest.mark.parametrize(
    ("meta", "match"),
    [
        ({"k": "nul\x00inside"}, r"metadata\[1\].*NUL"),
        ({"nul\x00key": 1}, r"metadata\[1\].*NUL"),
        ({"deep": [{"x": "\udc00"}]}, r"metadata\[1\]"),
        ({1: "int key"}, r"metadata\[1\].*keys must be strings"),
        ({"big": 2**64}, r"metadata\[1\].*64 bits"),
        ({"nan": math.nan}, r"metadata\[1\]"),
        ({"set": {1}}, r"metadata\[1\]"),
        ({"$agent_memory": {}}, r"metadata\[1\].*reserved"),
    ],
    ids=["nul", "nul-key", "surrogate", "int-key", "big-int", "nan", "set", "reserved"],
)
def test_bad_metadata_in_a_column_is_named(store, rejected, meta, match):
    with rejected(store, match=match):
        store.add(["a", "b"], "memory", embeddings=matrix(2), metadata=[{"ok": 1}, meta])


def test_metadata_nested_past_the_limit_is_rejected(store, rejected):
    deep: object = "leaf"
    for _ in range(70):
        deep = [deep]
    with rejected(store, match=r"metadata\[0\].*deeper"):
        store.add(["a"], "memory", embeddings=matrix(1), metadata=[{"d": deep}])


@pytest.mark.parametrize(
    ("meta", "stored"),
    [
        ({"text": "a backslash-u0000: \\u0000"}, {"text": "a backslash-u0000: \\u0000"}),
        ({"t": (1, 2)}, {"t": [1, 2]}),
        (collections.OrderedDict(a=1), {"a": 1}),
        ({"n": -(2**63) + 1, "f": 1.5, "b": False, "z": None}, None),
    ],
    ids=["backslash-u0000", "tuple", "dict-subclass", "scalars"],
)
def test_unusual_but_valid_metadata_is_stored(store, meta, stored):
    [rid] = store.add(["a"], "memory", embeddings=matrix(1), metadata=[meta])
    assert store.get("memory", rid).metadata == (dict(meta) if stored is None else stored)


def test_one_metadata_dict_broadcast_over_the_rows(store):
    ids = store.add(["a", "b", "c"], "memory", embeddings=matrix(3), metadata={"shared": [1]})
    assert [store.get("memory", rid).metadata for rid in ids] == [{"shared": [1]}] * 3


def test_ttl_broadcast_and_per_row(store, clock):
    a, b = store.add(["a", "b"], "memory", embeddings=matrix(2), ttl_days=2)
    c, d = store.add(["c", "d"], "memory", embeddings=matrix(2), ttl_days=[1, None])
    assert store.get("memory", a).expires_at == store.get("memory", b).expires_at
    assert store.get("memory", a).expires_at is not None
    assert store.get("memory", c).expires_at is not None
    assert store.get("memory", d).expires_at is None


def test_blank_content_with_one_vector_is_a_row_without_text(store, search_rows):
    [rid] = store.add(["   "], "memory", embeddings=matrix(1))
    assert search_rows(store, "memory", rid) == [(None, True)]


class _Text(str):
    """Contents of this type are planned row by row (the bulk shape needs exact str)."""


BULK_CONTENTS = ["alpha beta", "   ", "", "gamma delta\n", "naïve café", "x " * 40, "日本語の文"]


def _bulk_kwargs(n: int) -> dict:
    return dict(
        record_ids=[f"r{i}" for i in range(n)],
        user_ids=["u1", "u2", None, "u1", "u3", "u1", "u2"][:n],
        thread_ids="t1",
        agent_ids=[None, "a1", None, None, "a2", None, None][:n],
        metadata=[{"a": 1}, None, {"b": [1, 2]}, None, {}, {"c": "d"}, {"日": "本"}][:n],
        ttl_days=7,
    )


def test_the_columnar_insert_stores_the_rows_the_row_by_row_insert_stores(make_store, snapshot):
    n = len(BULK_CONTENTS)
    vecs = matrix(n)
    bulk = make_store(embedder=None, vector_dim=DIM, name="bulk.db")
    rows = make_store(embedder=None, vector_dim=DIM, name="rows.db")
    assert bulk.add(BULK_CONTENTS, "memory", embeddings=vecs, **_bulk_kwargs(n)) == [
        f"r{i}" for i in range(n)
    ]
    rows.add([_Text(c) for c in BULK_CONTENTS], "memory", embeddings=vecs, **_bulk_kwargs(n))
    assert snapshot(bulk) == snapshot(rows)  # records and search rows, byte for byte
    with searching_with(bulk, "KEYWORD"):  # no embedder: the text by keywords
        assert [r.id for r, _ in bulk.search("gamma", 3)] == ["r3"]  # the text is indexed
        bulk.delete("memory", "r3")
        assert bulk.search("gamma", 3) == []


def test_bulk_and_row_by_row_batches_keep_their_order(make_store, snapshot):
    from oam_core.apis.batch import PendingRecordBatch

    vecs = matrix(6)

    def batches(text: type) -> list:
        return [
            PendingRecordBatch(
                [text("one a"), text("one b")],
                "memory",
                embeddings=vecs[:2],
                record_ids=["m1", "m2"],
            ),
            PendingRecordBatch(
                [text("hello")],
                "message",
                embeddings=vecs[2:3],
                record_ids=["x1"],
                thread_ids="t",
                roles="user",
            ),
            PendingRecordBatch(
                [text("two a"), text("two b"), text("two c")],
                "memory",
                embeddings=vecs[3:],
                record_ids=["m3", "m4", "m5"],
                user_ids="u",
            ),
        ]

    bulk = make_store(embedder=None, vector_dim=DIM, name="bulk.db")
    rows = make_store(embedder=None, vector_dim=DIM, name="rows.db")
    assert bulk.add_batches(batches(str)) == ["m1", "m2", "x1", "m3", "m4", "m5"]
    assert rows.add_batches(batches(_Text)) == ["m1", "m2", "x1", "m3", "m4", "m5"]
    assert snapshot(bulk) == snapshot(rows)


def test_a_bulk_add_teaches_a_store_its_dimension(make_store):
    store = make_store(embedder=None)
    store.add(["a", "b"], "memory", embeddings=matrix(2))
    assert store.vector_dim == DIM
    with pytest.raises(ValueError, match="dimension"):
        store.add(["c"], "memory", embeddings=np.ones((1, DIM + 1), dtype=np.float32))


@pytest.mark.parametrize(
    ("meta", "match"),
    [
        ({"$agent_memory": {}}, r"metadata\[0\].*reserved"),
        ({"nan": math.nan}, r"metadata\[0\]"),
        ({"k": "nul\x00inside"}, r"metadata\[0\].*NUL"),
        ({"k": ["ok", "\udc00"]}, r"metadata\[0\]"),
    ],
    ids=["reserved", "nan", "nul", "surrogate-in-list"],
)
def test_a_bad_broadcast_metadata_dict_is_named(store, rejected, meta, match):
    with rejected(store, match=match):
        store.add(["a", "b"], "memory", embeddings=matrix(2), metadata=meta)


def test_an_all_zero_vector_is_stored_at_distance_one(store):
    store.add(["zero"], "memory", embeddings=np.zeros((1, DIM), np.float32), record_ids=["z"])
    store.add(["one"], "memory", embeddings=np.ones((1, DIM), np.float32), record_ids=["o"])
    got = store.search(query_vector=np.ones(DIM, np.float32), k=5)
    assert [r.id for r, _ in got] == ["o", "z"]
    assert got[1][1] == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("shape", ["bulk", "rows"])
def test_an_id_stored_before_is_named_and_nothing_is_written(store, rejected, shape):
    store.add(["a", "b"], "memory", embeddings=matrix(2), record_ids=["a", "b"])
    texts = ["c", "b-again", "d"] if shape == "bulk" else [_Text(t) for t in ("c", "b-again", "d")]
    with rejected(store, match=r"record ids already exist: \['b'\]"):
        store.add(texts, "memory", embeddings=matrix(3, seed=1), record_ids=["c", "b", "d"])


def test_an_id_stored_before_in_a_later_batch_undoes_the_earlier_ones(store, rejected):
    from oam_core.apis.batch import PendingRecordBatch

    store.add(
        ["old"], "message", record_ids=["m"], thread_ids="t", roles="user", embeddings=matrix(1)
    )
    batches = [
        PendingRecordBatch(["x", "y"], "memory", embeddings=matrix(2), record_ids=["x", "y"]),
        PendingRecordBatch(
            ["again"],
            "message",
            record_ids=["m"],
            thread_ids="t",
            roles="user",
            embeddings=matrix(1, seed=2),
        ),
    ]
    with rejected(store, match=r"record ids already exist: \['m'\]"):
        store.add_batches(batches)
