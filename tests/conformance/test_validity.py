"""Validity windows on every back end (docs/store.md#validity-windows):
``add``/``update`` take ``valid_from``/``valid_until`` like timestamps, ``Record``
reads them back normalized, ``list(as_of=)`` and ``search(as_of=)`` filter before
the top-k cut, and every rejected call writes nothing."""

from __future__ import annotations

import inspect
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from oam_core.errors import InvalidArgumentError
from oam_core.store.sqlite.vector import VectorIndex

T0 = datetime(2020, 1, 1, tzinfo=timezone.utc)

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
"""The conformance ``clock`` fixture's start time."""


def at(days: float) -> datetime:
    return T0 + timedelta(days=days)


def iso(days: float) -> str:
    return at(days).isoformat(timespec="seconds")


def vector_windows(backend: Any) -> bool:
    """Whether the back end's VECTOR ranking filters windows (SQLite: once its vector
    index takes ``valid_at``, docs/sqlite.md)."""
    if backend.id.startswith("sqlite"):
        return "valid_at" in inspect.signature(VectorIndex.candidates).parameters
    return True


# -- writing and reading windows -------------------------------------------------------


def test_add_stores_windows_normalized_to_utc(store: Any) -> None:
    ids = store.add(
        ["a", "b", "c"],
        "fact",
        valid_from=["2020-01-01T02:00:00+02:00", datetime(2021, 5, 1, 9, 30), None],
        valid_until=[iso(400), "2030-01-01T00:00:00.250Z", None],
    )
    got = {r.id: (r.valid_from, r.valid_until) for r in store.list("fact")}
    assert got == {
        ids[0]: ("2020-01-01T00:00:00+00:00", "2021-02-04T00:00:00+00:00"),
        ids[1]: ("2021-05-01T09:30:00+00:00", "2030-01-01T00:00:00.250000+00:00"),
        ids[2]: (None, None),
    }
    assert store.get("fact", ids[1]).valid_until == "2030-01-01T00:00:00.250000+00:00"


def test_valid_from_defaults_to_the_timestamp_of_memory_like_records(store: Any) -> None:
    [m] = store.add(["m"], "memory", timestamps="2024-06-01T10:00:00+02:00")
    [g] = store.add(["g"], "guideline")
    [msg] = store.add(["hi"], "message", timestamps="2024-06-01T10:00:00Z")
    assert store.get("memory", m).valid_from == "2024-06-01T08:00:00+00:00"
    assert store.get("guideline", g).valid_from is None
    assert store.get("message", msg).valid_from is None
    [explicit] = store.add(["e"], "memory", timestamps=iso(5), valid_from=None)
    assert store.get("memory", explicit).valid_from is None


def test_scalars_broadcast_over_every_record(store: Any) -> None:
    ids = store.add(["a", "b"], "preference", valid_from=iso(1), valid_until=iso(2))
    for rid in ids:
        r = store.get("preference", rid)
        assert (r.valid_from, r.valid_until) == (iso(1), iso(2))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"valid_from": "yesterday"}, r"valid_from.*'yesterday'"),
        ({"valid_until": 1767225600}, r"valid_until.*1767225600"),
        ({"valid_from": ["2020-01-01", "nope"]}, r"valid_from\[1\]"),
        ({"valid_from": iso(2), "valid_until": iso(1)}, "valid_until"),
        ({"valid_from": iso(2), "valid_until": iso(2)}, "valid_until"),
        ({"valid_from": [iso(0), iso(3)], "valid_until": [None, iso(3)]}, r"valid_until\[1\]"),
        ({"timestamps": iso(9), "valid_until": iso(3)}, "valid_until"),
        ({"valid_from": "2020-01-01\x00"}, "valid_from"),
        ({"valid_until": "9999-12-31T23:59:59.999999Z"}, "valid_until.*outside"),
    ],
)
def test_bad_windows_are_refused_and_nothing_is_written(
    store: Any, rejected: Any, kwargs: dict[str, Any], match: str
) -> None:
    store.add(["kept"], "memory")
    with rejected(store, match=match):
        store.add(["x", "y"], "memory", **kwargs)


@pytest.mark.parametrize("record_type", ["message", "user_profile", "agent_profile"])
@pytest.mark.parametrize("name", ["valid_from", "valid_until"])
def test_windows_on_messages_and_profiles_are_refused(
    store: Any, rejected: Any, record_type: str, name: str
) -> None:
    ids = "p1" if record_type.endswith("profile") else None
    with rejected(store, match=name):
        store.add(["x"], record_type, record_ids=ids, **{name: iso(1)})
    [rid] = store.add(["x"], record_type, record_ids=ids)
    with rejected(store, match=name):
        store.update(record_type, rid, **{name: iso(1)})
    # An explicit None is given too (omitted is not given): refused alike, nothing written.
    with rejected(store, match=f"{name}: {record_type} records have no validity window"):
        store.update(record_type, rid, **{name: None})
    with rejected(store, match=f"{name}: {record_type} records have no validity window"):
        store.add(["y"], record_type, record_ids=ids and "p2", **{name: None})
    with rejected(store, match=rf"{name}\[0\]: {record_type}"):
        store.add(
            ["y", "z"], record_type, record_ids=ids and ["p2", "p3"], **{name: [None, iso(1)]}
        )
    with rejected(store, match=name):
        store.upsert(["y"], record_type, record_ids=ids or ["m9"], **{name: None})


def test_windows_through_add_batches_and_upsert(store: Any) -> None:
    from oam_core.apis.batch import PendingRecordBatch

    [a] = store.add_batches(
        [PendingRecordBatch(texts=["a"], record_type="fact", valid_until=iso(3))]
    )
    assert store.get("fact", a).valid_until == iso(3)
    store.upsert(["a2"], "fact", record_ids=[a], valid_from=iso(1), valid_until=iso(2))
    r = store.get("fact", a)
    assert (r.content, r.valid_from, r.valid_until) == ("a2", iso(1), iso(2))
    with pytest.raises(InvalidArgumentError, match=r"batches\[1\].*valid_from"):
        store.add_batches(
            [
                PendingRecordBatch(texts=["ok"], record_type="fact"),
                PendingRecordBatch(texts=["m"], record_type="message", valid_from=iso(1)),
            ]
        )


def test_update_sets_and_clears_window_ends_against_the_stored_other_end(
    store: Any, rejected: Any
) -> None:
    [rid] = store.add(["a"], "memory", valid_from=iso(10))
    assert store.update("memory", rid, valid_until=iso(20)) == 1
    r = store.get("memory", rid)
    assert (r.valid_from, r.valid_until) == (iso(10), iso(20))
    with rejected(store, match="valid_from"):
        store.update("memory", rid, valid_from=iso(25))
    with rejected(store, match="valid_until"):
        store.update("memory", rid, valid_until=iso(5))
    with rejected(store, match="valid_until"):
        store.update("memory", rid, valid_from=iso(1), valid_until=iso(1))
    with rejected(store, match="valid_from"):
        store.update("memory", rid, valid_from="soon")
    store.update("memory", rid, valid_from=None)
    store.update("memory", rid, valid_until=None, text="b")
    r = store.get("memory", rid)
    assert (r.content, r.valid_from, r.valid_until) == ("b", None, None)
    assert store.update("memory", "missing", valid_until=iso(1)) == 0


# -- list(as_of=) ----------------------------------------------------------------------


def _windows(store: Any) -> dict[str, str]:
    """Four facts: past, current (no end), future, and one without any window."""
    ids = store.add(
        ["past fact", "open fact", "future fact", "always fact"],
        "fact",
        valid_from=[iso(0), iso(10), iso(5000), None],
        valid_until=[iso(10), None, None, None],
    )
    return dict(zip(["past", "open", "future", "always"], ids, strict=True))


def test_list_filters_by_as_of_only_when_given(store: Any) -> None:
    _windows(store)
    names = lambda rs: sorted(r.content.split()[0] for r in rs)  # noqa: E731
    assert names(store.list("fact")) == ["always", "future", "open", "past"]
    assert names(store.list("fact", as_of=None)) == ["always", "future", "open", "past"]
    assert names(store.list("fact", as_of=iso(5))) == ["always", "past"]
    assert names(store.list("fact", as_of=iso(10))) == ["always", "open"]  # end excluded
    assert names(store.list("fact", as_of=at(9.999))) == ["always", "past"]
    assert names(store.list("fact", as_of="2026-01-01")) == ["always", "open"]
    assert names(store.list("fact", as_of=at(6000))) == ["always", "future", "open"]
    # Messages have no window: always listed.
    store.add(["hello"], "message", thread_ids="t")
    assert len(store.list("message", as_of=iso(-100))) == 1
    with pytest.raises(InvalidArgumentError, match="as_of"):
        store.list("fact", as_of="whenever")
    assert names(store.list("fact", as_of=datetime.max)) == ["always", "future", "open"]


# -- search(as_of=) ----------------------------------------------------------------------


def test_keyword_search_returns_current_memories_unless_as_of_says_otherwise(
    make_store: Any,
) -> None:
    store = make_store(search_strategy="KEYWORD")
    _windows(store)
    store.add(["fact of the day"], "message", thread_ids="t")

    def found(**kwargs: Any) -> list[str]:
        return sorted(r.content for r, _ in store.search("fact", k=10, **kwargs))

    assert found() == ["always fact", "fact of the day", "open fact"]
    assert found(as_of=iso(5)) == ["always fact", "fact of the day", "past fact"]
    assert found(as_of=None) == [
        "always fact",
        "fact of the day",
        "future fact",
        "open fact",
        "past fact",
    ]
    with pytest.raises(InvalidArgumentError, match="as_of"):
        store.search("fact", as_of=12)


def test_an_updated_window_reaches_the_search_rows(make_store: Any) -> None:
    store = make_store(search_strategy="KEYWORD")
    [rid] = store.add(["the red bicycle"], "memory")
    assert [r.id for r, _ in store.search("bicycle")] == [rid]
    store.update("memory", rid, valid_until=START - timedelta(days=1))
    assert store.search("bicycle") == []
    assert [r.id for r, _ in store.search("bicycle", as_of=START - timedelta(days=2))] == [rid]
    store.update("memory", rid, valid_until=None)
    assert [r.id for r, _ in store.search("bicycle")] == [rid]


@pytest.mark.parametrize("strategy", ["KEYWORD", "VECTOR", "HYBRID"])
def test_search_returns_k_current_memories_when_older_versions_rank_higher(
    make_store: Any, backend: Any, clock: Any, strategy: str
) -> None:
    if strategy != "KEYWORD" and not vector_windows(backend):
        pytest.skip("the SQLite vector index filters windows once it takes valid_at")
    store = make_store(search_strategy=strategy)
    query = "my favourite colour is green"
    # 30 ended versions holding the query's exact words, then 3 current ones that
    # hold only some of them: every ended one ranks above every current one.
    store.add(
        [query] * 30,
        "memory",
        user_ids="u",
        valid_from=iso(0),
        valid_until=iso(1),
    )
    current = store.add(
        ["colour: green", "favourite colour", "green is nice"],
        "memory",
        user_ids="u",
    )
    got = store.search(query, k=3, user_id="u", exact_user_match=True)
    assert sorted(r.id for r, _ in got) == sorted(current)
    assert all(r.valid_until is None for r, _ in got)
    every = store.search(query, k=3, as_of=None)
    assert all(r.content == query for r, _ in every)


# -- transfer --------------------------------------------------------------------------


def test_dump_and_restore_keep_windows(store: Any, make_target: Any) -> None:
    ids = store.add(
        ["a", "b"],
        "fact",
        valid_from=[iso(1), None],
        valid_until=[iso(2), iso(3)],
        user_ids="u",
    )
    pages = list(store.dump_rows())
    rows = [r for page in pages for r in page]
    by_id = {r.id: r for r in rows}
    assert by_id[ids[0]].valid_from == at(1)
    assert by_id[ids[0]].valid_until == at(2)
    target = make_target()
    target.restore_rows(rows)
    got = {r.id: (r.valid_from, r.valid_until) for r in target.list("fact")}
    assert got == {ids[0]: (iso(1), iso(2)), ids[1]: (None, iso(3))}
    assert [r.id for r in target.list("fact", as_of=iso(2.5))] == [ids[1]]
