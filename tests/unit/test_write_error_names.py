"""Review rev3: error messages of ``add`` that do not name the argument's entry or the
value given (HELPER_RULES: "a clear exception naming the argument and the value").
Each fails on the current code; the same messages come from the bulk shape and the
row-by-row shape."""

from __future__ import annotations

import numpy as np
import pytest

from oam_core import TimeToLiveAnchor
from oam_core.store.sqlite import SQLiteMemoryStore


@pytest.fixture
def store():
    s = SQLiteMemoryStore(":memory:", vector_dim=8)
    yield s
    s.close()


@pytest.mark.parametrize("as_list", [False, True], ids=["array", "lists"])
def test_a_row_count_mismatch_names_the_count_given(store, as_list):
    vecs = np.ones((3, 8), np.float32)  # today: "... one entry per content (2)"
    with pytest.raises(ValueError, match=r"embeddings.*\b3\b"):
        store.add(["a", "b"], "memory", embeddings=vecs.tolist() if as_list else vecs)


def test_one_1d_vector_for_two_contents_says_what_it_got(store):
    with pytest.raises(ValueError, match=r"embeddings.*(shape|1-D|\(8,\)|\b8\b)"):
        store.add(["a", "b"], "memory", embeddings=np.ones(8, np.float32))


def test_a_bad_ttl_in_a_list_is_named_by_its_row(store):
    with pytest.raises(
        ValueError, match=r"ttl_days\[1\]"
    ):  # today: "ttl_days must not be negative, got -1"
        store.add(["a", "b"], "memory", ttl_days=[1, -1])


def test_a_bad_anchor_in_a_list_is_named_by_its_row(store):
    with pytest.raises(ValueError, match=r"ttl_anchor\[1\]"):
        store.add(
            ["a", "b"], "memory", ttl_days=3, ttl_anchor=[TimeToLiveAnchor.CREATED_AT, "bogus"]
        )


def test_a_missing_timestamp_for_the_timestamp_anchor_names_timestamps(store):
    # today: "row 0: timestamp (ttl_anchor=TIMESTAMP) must be an ISO-8601 string, got None"
    with pytest.raises(ValueError, match=r"timestamps"):
        store.add(["a"], "memory", ttl_days=3, ttl_anchor=TimeToLiveAnchor.TIMESTAMP)


def test_the_smallest_int64_fits_in_64_bits(store):
    # -2**63 is a 64-bit integer (SQLite INTEGER, PostgreSQL bigint); today it is
    # refused as "does not fit in 64 bits" (the check is abs(v) > 2**63 - 1).
    [rid] = store.add(["a"], "memory", metadata={"n": -(2**63)})
    assert store.get("memory", rid).metadata == {"n": -(2**63)}


@pytest.mark.parametrize(
    "vector",
    [np.array([1 + 2j] * 8), ["1"] * 8, np.array(["1.5"] * 8), [1.0, None] * 4],
    ids=["complex", "strings", "string-array", "none"],
)
def test_a_vector_that_is_not_numbers_is_refused(store, vector):
    with pytest.raises(ValueError, match=r"embeddings\[0\] must be a list of floats"):
        store.add(["a"], "memory", embeddings=[vector])


def test_scope_ids_and_record_ids_may_be_numpy_columns(store):
    ids = store.add(
        ["a", "b"],
        "memory",
        record_ids=np.array(["r1", "r2"]),
        user_ids=np.array(["u1", "u2"]),
        embeddings=np.ones((2, 8), np.float32),
    )
    assert ids == ["r1", "r2"]
    assert [store.get("memory", i).user_id for i in ids] == ["u1", "u2"]
    assert all(type(i) is str for i in ids)
