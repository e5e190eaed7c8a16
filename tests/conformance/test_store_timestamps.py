"""Event timestamps are parsed and stored normalized to UTC on every back end
(docs/store.md#timestamps); an unparseable one is a ValueError naming the argument
and the value, raised before anything is written."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from oam_core import Message, OracleAgentMemory

ACCEPTED = [
    ("2026-03-01T09:30:00+00:00", "2026-03-01T09:30:00+00:00"),
    ("2026-03-01T09:30:00Z", "2026-03-01T09:30:00+00:00"),
    ("2026-03-01T09:30:00", "2026-03-01T09:30:00+00:00"),
    ("2026-03-01T11:30:00+02:00", "2026-03-01T09:30:00+00:00"),
    ("2026-03-01", "2026-03-01T00:00:00+00:00"),
    ("20260301T093000Z", "2026-03-01T09:30:00+00:00"),
    ("2026-03-01T09:30:00.250+01:00", "2026-03-01T08:30:00.250000+00:00"),
    (datetime(2026, 3, 1, 9, 30), "2026-03-01T09:30:00+00:00"),
    (
        datetime(2026, 3, 1, 4, 30, tzinfo=timezone(timedelta(hours=-5))),
        "2026-03-01T09:30:00+00:00",
    ),
]
REJECTED = ["yesterday", "", "   ", "2026-13-01", "March 1st", 1767225600, b"2026-03-01"]


@pytest.mark.parametrize(("given", "stored"), ACCEPTED, ids=[str(a) for a, _ in ACCEPTED])
def test_add_stores_the_normalized_utc_time(store: Any, given: object, stored: str) -> None:
    [rid] = store.add(["event"], "memory", timestamps=given)
    assert store.get("memory", rid).timestamp == stored


def test_a_stored_normalized_value_round_trips_unchanged(store: Any) -> None:
    value = "2026-03-01T12:00:00.000000+00:00"
    [rid] = store.add(["event"], "memory", timestamps=value)
    assert store.get("memory", rid).timestamp == value


@pytest.mark.parametrize("given", REJECTED, ids=[repr(v) for v in REJECTED])
def test_add_rejects_an_unparseable_timestamp_and_writes_nothing(
    store: Any, rejected: Any, given: object
) -> None:
    with rejected(store, match="timestamps"):
        store.add(["event"], "memory", timestamps=given)


def test_the_error_names_the_row_and_the_value(store: Any, rejected: Any) -> None:
    with rejected(store, match=r"timestamps\[1\] must be an ISO-8601 .*'yesterday'"):
        store.add(["a", "b"], "memory", timestamps=["2026-03-01", "yesterday"])


def test_update_parses_and_normalizes(store: Any, rejected: Any) -> None:
    [rid] = store.add(["event"], "memory")
    assert store.update("memory", rid, timestamp="2026-03-01T11:30:00+02:00") == 1
    assert store.get("memory", rid).timestamp == "2026-03-01T09:30:00+00:00"
    with rejected(store, match=r"timestamp must be an ISO-8601 .*'soon'"):
        store.update("memory", rid, timestamp="soon")
    assert store.update("memory", rid, timestamp=None) == 1
    assert store.get("memory", rid).timestamp is None


def test_messages_take_datetimes_and_reject_free_text(make_store: Any, rejected: Any) -> None:
    store = make_store()
    thread = OracleAgentMemory(store=store, extract_memories=False).create_thread(thread_id="t")
    thread.add_messages(
        [
            Message("user", "hello", timestamp=datetime(2026, 3, 1, 9, 30)),
            {"role": "assistant", "content": "hi", "timestamp": "2026-03-01T10:30:00+01:00"},
        ]
    )
    assert [m.timestamp for m in thread.get_messages()] == [
        "2026-03-01T09:30:00+00:00",
        "2026-03-01T09:30:00+00:00",
    ]
    with rejected(store, match="Message timestamp must be an ISO-8601 .*'yesterday'"):
        thread.add_messages([{"role": "user", "content": "x", "timestamp": "yesterday"}])
