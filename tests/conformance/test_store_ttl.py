"""Store conformance: time to live and retention (docs/store.md#ttl-and-retention).

Time comes from the injected ``clock`` fixture (start 2026-03-01T12:00:00Z), so no test
sleeps. Expected values come from the documented rules and Oracle's SDK, not from the implementation.
"""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.store.options import MemoryRetentionConfig

CREATED_AT = TimeToLiveAnchor.CREATED_AT
TIMESTAMP = TimeToLiveAnchor.TIMESTAMP


def retention(**kwargs):
    return MemoryRetentionConfig(**kwargs)


def views(store, record_type, rid, *, thread=None):
    """Is ``rid`` visible through each read path? (docs/store.md#ttl-and-retention: hidden from every read.)"""
    seen = {
        "get": store.get(record_type, rid) is not None,
        "list": rid in [r.id for r in store.list(record_type, limit=None)],
        "search": rid in [r.id for r, _ in store.search("ttl", 1000, record_types={record_type})],
    }
    if record_type == "message":
        seen["thread"] = rid in [m.id for m in store.list_thread_messages(thread)]
    return seen


def visible(store, record_type="memory", rid="m1", *, thread=None):
    seen = views(store, record_type, rid, thread=thread)
    assert len(set(seen.values())) == 1, f"read paths disagree: {seen}"
    return next(iter(seen.values()))


def add_memory(store, rid="m1", **kwargs):
    return store.add([f"ttl memory {rid}"], "memory", record_ids=rid, **kwargs)


# -- resolution of ttl_days (docs/store.md#ttl-and-retention) ----------------------------------


@pytest.mark.parametrize(
    ("config", "kwargs", "days"),
    [
        ({"default_ttl_days": 7}, {}, 7),
        ({"default_ttl_days": 7}, {"ttl_days": 3}, 3),
        ({"default_ttl_days": 7, "max_ttl_days": 30}, {"ttl_days": None}, 30),
        ({"max_ttl_days": 30}, {}, None),
        ({"max_ttl_days": 30}, {"ttl_days": None}, 30),
        ({"default_ttl_days": 7}, {"ttl_days": None}, None),
        ({}, {}, None),
        ({}, {"ttl_days": 2}, 2),
        ({}, {"ttl_days": 2, "ttl_anchor": CREATED_AT}, 2),
    ],
    ids=[
        "default",
        "explicit",
        "None->max",
        "omitted-no-default",
        "None->max-no-default",
        "None-no-max",
        "nothing",
        "explicit-no-config",
        "explicit-anchor",
    ],
)
def test_ttl_days_resolution(make_store, clock, config, kwargs, days):
    store = make_store(memory_retention_config=retention(**config))
    add_memory(store, **kwargs)
    if days is None:
        clock.advance(days=36500)
        assert visible(store)
        return
    clock.advance(days=days, minutes=-1)
    assert visible(store)
    clock.advance(minutes=2)
    assert not visible(store)


@pytest.mark.parametrize("record_type", ["message", "fact", "guideline", "preference"])
def test_every_expiring_type_expires(make_store, clock, record_type):
    store = make_store(memory_retention_config=retention(default_ttl_days=1))
    store.add(
        ["ttl row"],
        record_type,
        record_ids="r",
        thread_ids="t1",
        **({"roles": "user"} if record_type == "message" else {}),
    )
    assert visible(store, record_type, "r", thread="t1")
    clock.advance(days=1, minutes=1)
    assert not visible(store, record_type, "r", thread="t1")
    if record_type == "message":
        assert store.count_thread_messages("t1") == 0


def test_profiles_never_expire(make_store, clock):
    store = make_store(memory_retention_config=retention(default_ttl_days=1, max_ttl_days=2))
    store.add_user("u1", "ttl user")
    store.add_agent("a1", "ttl agent")
    clock.advance(days=3650)
    assert visible(store, "user_profile", "u1")
    assert visible(store, "agent_profile", "a1")


def test_per_row_ttl_days(make_store, clock):
    store = make_store()
    store.add(
        ["ttl a", "ttl b", "ttl c"], "memory", record_ids=["a", "b", "c"], ttl_days=[1, 5, None]
    )
    clock.advance(days=2)
    assert [visible(store, "memory", r) for r in "abc"] == [False, True, True]
    clock.advance(days=4)
    assert [visible(store, "memory", r) for r in "abc"] == [False, False, True]


def test_above_max_is_clamped_with_a_warning(make_store, clock):
    store = make_store(memory_retention_config=retention(max_ttl_days=10))
    with pytest.warns(UserWarning):
        store.add(["ttl a", "ttl b"], "memory", record_ids=["a", "b"], ttl_days=[5, 20])
    clock.advance(days=9)
    assert [visible(store, "memory", r) for r in "ab"] == [False, True]
    clock.advance(days=2)
    assert [visible(store, "memory", r) for r in "ab"] == [False, False]


def test_within_max_gives_no_warning(make_store):
    store = make_store(memory_retention_config=retention(max_ttl_days=10))
    add_memory(store, ttl_days=10)  # filterwarnings=error: any warning fails


REJECTED_ADDS = [
    ("negative", "memory", {"ttl_days": -1}),
    ("negative-in-list", "memory", {"ttl_days": [1, -1]}),
    ("user-profile-days", "user_profile", {"ttl_days": 1}),
    ("user-profile-None", "user_profile", {"ttl_days": None}),
    ("agent-profile-anchor", "agent_profile", {"ttl_anchor": CREATED_AT}),
    ("timestamp-anchor-without-timestamp", "memory", {"ttl_days": 1, "ttl_anchor": TIMESTAMP}),
    (
        "timestamp-anchor-one-missing",
        "memory",
        {"ttl_days": 1, "ttl_anchor": TIMESTAMP, "timestamps": ["2026-03-01T00:00:00Z", None]},
    ),
    (
        "timestamp-anchor-not-iso",
        "memory",
        {"ttl_days": 1, "ttl_anchor": TIMESTAMP, "timestamps": "yesterday"},
    ),
    (
        "timestamp-anchor-empty",
        "memory",
        {"ttl_days": 1, "ttl_anchor": TIMESTAMP, "timestamps": ""},
    ),
]


@pytest.mark.parametrize(
    ("record_type", "kwargs"), [r[1:] for r in REJECTED_ADDS], ids=[r[0] for r in REJECTED_ADDS]
)
def test_invalid_ttl_on_add_writes_nothing(make_store, rejected, record_type, kwargs):
    store = make_store(memory_retention_config=retention(default_ttl_days=7))
    ids = ["x1", "x2"]
    with rejected(store):
        store.add(
            ["ttl one", "ttl two"] if record_type == "memory" else ["info"],
            record_type,
            record_ids=ids if record_type == "memory" else "x1",
            **kwargs,
        )


# -- anchors (docs/store.md#ttl-and-retention) -----------------------------------------------------


@pytest.mark.parametrize(
    "stamp",
    [
        "2026-02-25T12:00:00+00:00",
        "2026-02-25T12:00:00Z",
        "2026-02-25T12:00:00",
        "2026-02-25T14:00:00+02:00",
        "2026-02-25T07:00:00-05:00",
    ],
    ids=["utc", "Z", "naive-is-utc", "plus-2", "minus-5"],
)
def test_timestamp_anchor_counts_from_the_event_time(make_store, clock, stamp):
    """Event 2026-02-25T12:00Z + 7 days = 2026-03-04T12:00Z; the timestamp is stored
    normalized to UTC (docs/store.md#timestamps)."""
    store = make_store()
    add_memory(store, timestamps=stamp, ttl_days=7, ttl_anchor=TIMESTAMP)
    assert store.get("memory", "m1").timestamp == "2026-02-25T12:00:00+00:00"
    clock.set(datetime(2026, 3, 4, 11, 59, tzinfo=timezone.utc))
    assert visible(store)
    clock.set(datetime(2026, 3, 4, 12, 1, tzinfo=timezone.utc))
    assert not visible(store)


def test_seed_timestamp_anchor_example(make_store, clock):
    store = make_store()
    assert store.add(
        ["Short-lived event"],
        record_type="memory",
        record_ids="mem-db-ttl-docs",
        timestamps="2026-01-01T12:00:00+00:00",
        ttl_days=7,
        ttl_anchor=TimeToLiveAnchor.TIMESTAMP,
    ) == ["mem-db-ttl-docs"]
    assert store.get("memory", "mem-db-ttl-docs") is None, "expired on 2026-01-08"


@pytest.mark.parametrize("anchor", [{}, {"ttl_anchor": CREATED_AT}], ids=["default", "explicit"])
def test_created_at_anchor_ignores_the_event_time(make_store, clock, anchor):
    store = make_store()
    add_memory(store, timestamps="2000-01-01T00:00:00+00:00", ttl_days=7, **anchor)
    assert visible(store)
    clock.advance(days=7, minutes=1)
    assert not visible(store)


def test_per_row_anchors_need_timestamps_only_where_anchored(make_store, clock):
    store = make_store()
    store.add(
        ["ttl a", "ttl b"],
        "memory",
        record_ids=["a", "b"],
        ttl_days=2,
        ttl_anchor=[TIMESTAMP, CREATED_AT],
        timestamps=["2026-02-28T12:00:00Z", None],
    )
    clock.advance(days=1, minutes=1)
    assert [visible(store, "memory", r) for r in "ab"] == [False, True]


# -- expiry is immediate and applies before top-k (docs/store.md#ttl-and-retention) ------------------


def test_expired_rows_are_hidden_at_once_from_every_read(make_store, clock):
    store = make_store()
    store.add(
        ["ttl hello", "ttl reply"],
        "message",
        record_ids=["x1", "x2"],
        thread_ids="t1",
        roles=["user", "assistant"],
        ttl_days=[1, None],
    )
    add_memory(store, ttl_days=1)
    clock.advance(days=1, seconds=1)
    assert views(store, "message", "x1", thread="t1") == dict.fromkeys(
        ("get", "list", "search", "thread"), False
    )
    assert views(store, "message", "x2", thread="t1") == dict.fromkeys(
        ("get", "list", "search", "thread"), True
    )
    assert [m.id for m in store.list_thread_messages("t1", last_n=1)] == ["x2"]
    assert store.count_thread_messages("t1") == 1
    assert not visible(store)


@pytest.mark.parametrize("strategy", ["VECTOR", "KEYWORD", "HYBRID"])
def test_expired_rows_are_filtered_before_top_k(make_store, clock, strategy):
    store = make_store(search_strategy=strategy)
    store.add(["pizza pizza"] * 50, "memory", ttl_days=1)
    store.add(["pizza among many other words about harbors"], "memory", record_ids="far")
    clock.advance(days=2)
    assert [r.id for r, _ in store.search("pizza", 1)] == ["far"]


# -- update (docs/store.md#ttl-and-retention) -----------------------------------------------------------


def test_update_without_ttl_options_keeps_the_expiry(make_store, clock):
    store = make_store()
    add_memory(store, ttl_days=7)
    clock.advance(days=5)
    assert store.update("memory", "m1", text="ttl changed", metadata={"a": 1}) == 1
    clock.advance(days=2, minutes=1)
    assert not visible(store)


def test_refresh_makes_an_expired_row_visible_again(make_store, clock):
    store = make_store()
    add_memory(store, ttl_days=7)
    clock.advance(days=8)
    assert not visible(store)
    assert store.update("memory", "m1", ttl_days=30) == 1  # CREATED_AT: created + 30
    assert visible(store)
    clock.advance(days=22, minutes=1)  # day 30 + 1 minute
    assert not visible(store)


@pytest.mark.parametrize(
    ("config", "days"), [({}, None), ({"max_ttl_days": 30}, 30)], ids=["no-max", "max"]
)
def test_update_ttl_none_clears_or_uses_max(make_store, clock, config, days):
    store = make_store(memory_retention_config=retention(**config))
    add_memory(store, ttl_days=7)
    assert store.update("memory", "m1", ttl_days=None) == 1
    clock.advance(days=29)
    assert visible(store)
    clock.advance(days=2)
    assert visible(store) == (days is None)


def test_update_anchor_without_days_uses_the_default(make_store, clock):
    store = make_store(memory_retention_config=retention(default_ttl_days=7))
    add_memory(store, ttl_days=None)  # never expires (no max)
    assert store.update("memory", "m1", ttl_anchor=CREATED_AT) == 1
    clock.advance(days=7, minutes=1)
    assert not visible(store)


def test_update_timestamp_anchor_uses_the_replacement_timestamp(make_store, clock):
    store = make_store()
    add_memory(store, timestamps="2026-01-01T00:00:00+00:00")
    assert (
        store.update(
            "memory", "m1", timestamp="2026-03-05T12:00:00", ttl_days=2, ttl_anchor=TIMESTAMP
        )
        == 1
    )  # naive = UTC; expires 03-07 12:00Z
    clock.set(datetime(2026, 3, 7, 11, 59, tzinfo=timezone.utc))
    assert visible(store)
    clock.set(datetime(2026, 3, 7, 12, 1, tzinfo=timezone.utc))
    assert not visible(store)


def test_update_timestamp_anchor_uses_the_stored_timestamp(make_store, clock):
    store = make_store()
    add_memory(store, timestamps="2026-03-02T12:00:00+00:00")
    assert store.update("memory", "m1", ttl_days=1, ttl_anchor=TIMESTAMP) == 1
    clock.set(datetime(2026, 3, 3, 11, 59, tzinfo=timezone.utc))
    assert visible(store)
    clock.set(datetime(2026, 3, 3, 12, 1, tzinfo=timezone.utc))
    assert not visible(store)


def test_update_above_max_is_clamped_with_a_warning(make_store, clock):
    store = make_store(memory_retention_config=retention(max_ttl_days=10))
    add_memory(store, ttl_days=1)
    with pytest.warns(UserWarning):
        assert store.update("memory", "m1", ttl_days=100) == 1
    clock.advance(days=9)
    assert visible(store)
    clock.advance(days=2)
    assert not visible(store)


REJECTED_UPDATES = [
    ("negative", "memory", "m1", {"ttl_days": -1}),
    ("profile-days", "user_profile", "u1", {"ttl_days": 5}),
    ("profile-None", "user_profile", "u1", {"ttl_days": None}),
    ("profile-anchor", "user_profile", "u1", {"ttl_anchor": CREATED_AT}),
    (
        "timestamp-anchor-without-any-timestamp",
        "memory",
        "m1",
        {"ttl_days": 1, "ttl_anchor": TIMESTAMP},
    ),
    (
        "timestamp-anchor-cleared-timestamp",
        "memory",
        "m2",
        {"ttl_days": 1, "ttl_anchor": TIMESTAMP, "timestamp": None},
    ),
    (
        "timestamp-anchor-replacement-not-iso",
        "memory",
        "m2",
        {"ttl_days": 1, "ttl_anchor": TIMESTAMP, "timestamp": "soon"},
    ),
]


@pytest.mark.parametrize(
    ("record_type", "rid", "kwargs"),
    [r[1:] for r in REJECTED_UPDATES],
    ids=[r[0] for r in REJECTED_UPDATES],
)
def test_invalid_ttl_on_update_writes_nothing(store, rejected, record_type, rid, kwargs):
    add_memory(store, "m1")
    add_memory(store, "m2", timestamps="2026-03-01T00:00:00Z")
    store.add_user("u1", "ttl user")
    with rejected(store):
        store.update(record_type, rid, **kwargs)


# -- purge (docs/store.md#ttl-and-retention) --------------------------------------------------------------


def test_purge_expired_removes_rows_and_returns_the_count(make_store, clock, backend, search_rows):
    store = make_store()
    store.add(["ttl a", "ttl b"], "memory", record_ids=["a", "b"], ttl_days=1)
    store.add(["ttl msg"], "message", record_ids="x", thread_ids="t1", roles="user", ttl_days=1)
    store.add(["ttl kept"], "memory", record_ids="kept", ttl_days=None)
    store.add_user("u1", "ttl user")
    assert store.purge_expired() == 0
    raw_before = backend.dump(store) if backend.dump else None
    clock.advance(days=2)
    assert store.purge_expired() == 3
    assert store.purge_expired() == 0
    for record_type, rid in (("memory", "a"), ("memory", "b"), ("message", "x")):
        assert search_rows(store, record_type, rid) == []
        assert store.update(record_type, rid, ttl_days=30) == 0, "purged rows cannot come back"
    assert visible(store, "memory", "kept")
    assert visible(store, "user_profile", "u1")
    if raw_before is not None:
        removed = sum(map(len, raw_before.values())) - sum(map(len, backend.dump(store).values()))
        assert removed == 6, "3 records and their 3 search rows"


def test_purge_does_not_touch_refreshed_rows(make_store, clock):
    store = make_store()
    add_memory(store, ttl_days=1)
    clock.advance(days=2)
    store.update("memory", "m1", ttl_days=10)
    assert store.purge_expired() == 0
    assert visible(store)


# -- persistence of the retention config (docs/store.md#ttl-and-retention) ------------------------------


def test_reopen_without_config_keeps_the_stored_retention(backend, make_store, clock):
    if not backend.shared_storage:
        pytest.skip(f"{backend.id} storage does not outlive the store object")
    make_store(memory_retention_config=retention(default_ttl_days=7)).close()
    store = make_store()
    add_memory(store)
    clock.advance(days=7, minutes=1)
    assert not visible(store)


def test_reopen_with_a_new_config_keeps_existing_expiry(backend, make_store, clock):
    """Seed 004: an explicit config replaces the stored one; stored expiries stay."""
    if not backend.shared_storage:
        pytest.skip(f"{backend.id} storage does not outlive the store object")
    first = make_store(memory_retention_config=retention(default_ttl_days=7))
    add_memory(first, "old")
    first.close()
    second = make_store(memory_retention_config=retention(default_ttl_days=30))
    add_memory(second, "new")
    second.close()
    third = make_store()
    add_memory(third, "newest")
    clock.advance(days=8)
    assert [visible(third, "memory", r) for r in ("old", "new", "newest")] == [False, True, True]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"timestamps": "0001-01-01T00:00:00+01:00", "ttl_days": 1, "ttl_anchor": "TIMESTAMP"},
        {"ttl_days": 10**9},
    ],
)
def test_expiry_outside_representable_dates_is_a_value_error(store, rejected, kwargs):
    if kwargs.get("ttl_anchor") == "TIMESTAMP":
        kwargs = {**kwargs, "ttl_anchor": TimeToLiveAnchor.TIMESTAMP}
    with rejected(store, match="representable"):
        store.add(["x"], "fact", **kwargs)
