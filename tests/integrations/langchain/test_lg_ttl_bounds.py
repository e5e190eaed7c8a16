"""LangGraph ``OAMStore`` TTLs the store cannot hold (trial 37, C26): a ``ttl`` (or
``TTLConfig.default_ttl``) that is infinite, NaN, or expires past the last
representable date is an ``InvalidArgumentError`` naming it, raised before anything
is written, by ``put`` and ``aput`` alike and by the constructor for the default.
SQLite file and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_oam import OAMStore
from langgraph.store.base import PutOp

from oam_core import (
    InvalidArgumentError,
    OracleAgentMemory,
    OracleMemoryStore,
    PostgresMemoryStore,
    SQLiteMemoryStore,
)

BAD_TTLS = [10**10, 1e12, 2**63 - 1, 2**63, 10**30, float("inf"), float("nan"), -1]


@pytest.fixture
def memory(memory_both: OracleAgentMemory) -> OracleAgentMemory:
    return memory_both


def _count(memory: OracleAgentMemory) -> int:
    return len(memory.store.list("memory", None))


@pytest.mark.parametrize("ttl", BAD_TTLS, ids=repr)
def test_a_ttl_the_store_cannot_hold_is_refused_naming_it(
    memory: OracleAgentMemory, ttl: Any
) -> None:
    store = OAMStore(memory)
    store.put(("n",), "kept", {"a": 0}, ttl=5)
    with pytest.raises(InvalidArgumentError, match=r"\bttl\b"):
        store.put(("n",), "k", {"a": 1}, ttl=ttl)
    with pytest.raises(InvalidArgumentError, match=r"\bttl\b"):
        asyncio.run(store.aput(("n",), "k", {"a": 1}, ttl=ttl))
    with pytest.raises(InvalidArgumentError, match=r"\bttl\b"):
        # the bad put refuses the whole batch: the good put beside it is not written
        store.batch(
            [PutOp(("n",), "good", {"a": 2}, ttl=None), PutOp(("n",), "k", {"a": 1}, ttl=ttl)]
        )
    assert store.get(("n",), "k") is None
    assert store.get(("n",), "good") is None
    assert _count(memory) == 1


@pytest.mark.parametrize("ttl", BAD_TTLS, ids=repr)
def test_a_default_ttl_the_store_cannot_hold_is_refused_at_construction(
    memory: OracleAgentMemory, ttl: Any
) -> None:
    with pytest.raises(InvalidArgumentError, match=r"ttl\['default_ttl'\]"):
        OAMStore(memory, ttl={"default_ttl": ttl})
    assert _count(memory) == 0


def test_a_long_ttl_within_the_dates_is_kept(memory: OracleAgentMemory) -> None:
    store = OAMStore(memory, ttl={"default_ttl": 10**9})  # about 1,900 years
    store.put(("n",), "k", {"a": 1})
    item = store.get(("n",), "k")
    assert item is not None and item.value == {"a": 1}
    [record] = [
        r for r in memory.store.list("memory", None) if r.metadata["langgraph"]["key"] == "k"
    ]
    assert record.metadata["langgraph"]["ttl"] == 10**9


@pytest.fixture(params=["sqlite", "postgres"])
def clocked(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[OAMStore, list[datetime]]]:
    """An ``OAMStore`` and the list holding its (and its ``oam`` store's) clock."""
    now = [datetime(2026, 3, 1, tzinfo=timezone.utc)]
    oam: OracleMemoryStore
    if request.param == "sqlite":
        oam = SQLiteMemoryStore(tmp_path / "ttl.db", clock=lambda: now[0])
    else:
        oam = PostgresMemoryStore(
            request.getfixturevalue("pg_url"),
            schema_policy="CREATE_IF_NECESSARY",
            clock=lambda: now[0],
        )
    try:
        yield OAMStore(oam, clock=lambda: now[0]), now
    finally:
        oam.close()


LAST_DAY = datetime(9999, 12, 30, tzinfo=timezone.utc)


def test_reading_an_item_whose_refresh_would_pass_the_last_date_never_fails(
    clocked: tuple[OAMStore, list[datetime]],
) -> None:
    """Trial 40 F2: an item put with a ttl ending just before year 9999 is read (and
    refreshed, to the last expiry) days later; search of its namespace still works."""
    store, now = clocked
    ttl = (LAST_DAY - now[0]).total_seconds() / 60
    store.put(("n",), "k", {"a": 1}, ttl=ttl)
    store.put(("n",), "other", {"a": 2})
    now[0] += timedelta(days=3)
    for _ in range(2):  # the second read refreshes an already clamped expiry
        item = store.get(("n",), "k")
        assert item is not None and item.value == {"a": 1}
        assert sorted(i.key for i in store.search(("n",))) == ["k", "other"]
    item = asyncio.run(store.aget(("n",), "k"))
    assert item is not None and item.value == {"a": 1}
    [record] = [
        r for r in store.store.list("memory", None) if r.metadata["langgraph"]["key"] == "k"
    ]
    assert record.expires_at == "9999-12-31T23:59:59.000000+00:00"
    # a put with that ttl now would pass the last date: refused, the item kept
    with pytest.raises(InvalidArgumentError, match=r"\bttl\b"):
        store.put(("n",), "k", {"a": 3}, ttl=ttl)
    item = store.get(("n",), "k")
    assert item is not None and item.value == {"a": 1}


def test_a_put_expiring_in_the_last_second_is_refused(
    clocked: tuple[OAMStore, list[datetime]],
) -> None:
    store, now = clocked
    end = datetime(9999, 12, 31, 23, 59, 59, 900000, tzinfo=timezone.utc)
    with pytest.raises(InvalidArgumentError, match=r"\bttl\b"):
        store.put(("n",), "k", {"a": 1}, ttl=(end - now[0]).total_seconds() / 60)
    assert store.search(("n",)) == []
