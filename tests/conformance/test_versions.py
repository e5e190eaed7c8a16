"""Versions of memories on every back end (docs/store.md#memory-versions):
``update_memory``, ``invalidate_memory``, ``get_memory_history``, the changes of an
extraction pass (``commit_thread_pass(version_changes=)``), and two writers
superseding one memory at once."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.metadatajson import RESERVED_KEY
from oam_core.errors import InvalidArgumentError, NotFoundError
from oam_core.store.threads import thread_store
from oam_core.store.versions import VersionChange, memory_versions

START = datetime(2026, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
"""The conformance ``clock`` fixture's start time."""


def reserved(record: Any) -> dict[str, Any]:
    return dict((record.metadata or {}).get(RESERVED_KEY) or {})


def current(store: Any, record_type: str = "memory") -> list[str]:
    return sorted(r.content for r in store.list(record_type, as_of=store.clock_now()))


def test_update_memory_writes_a_new_version_and_supersedes_the_old(store: Any, clock: Any) -> None:
    [old] = store.add(
        ["I live in Lisbon"],
        "fact",
        user_ids="u",
        agent_ids="a",
        thread_ids="t",
        metadata={"topic": "home"},
    )
    store.update("fact", old, metadata={"topic": "home", "n": 1})
    clock.advance(days=3)
    versions = memory_versions(store)
    assert versions is memory_versions(store)
    new = versions.update_memory(old, "I live in Berlin", reason="moved")
    was, now = store.get("fact", old), store.get("fact", new)
    assert now.record_type == "fact" and now.content == "I live in Berlin"
    assert (now.user_id, now.agent_id, now.thread_id) == ("u", "a", "t")
    assert now.valid_from == clock.now.isoformat(timespec="seconds")
    assert was.valid_until == now.valid_from and now.valid_until is None
    assert reserved(was) == {"status": "invalid", "superseded_by": new, "reason": "moved"}
    assert reserved(now) == {"supersedes": [old]}
    assert {k: v for k, v in now.metadata.items() if k != RESERVED_KEY} == {
        "topic": "home",
        "n": 1,
    }
    assert current(store, "fact") == ["I live in Berlin"]
    assert [r.content for r in store.list("fact", as_of=START)] == ["I live in Lisbon"]


def test_update_memory_keeps_provenance_and_takes_metadata_and_valid_from(
    store: Any, clock: Any
) -> None:
    ts = thread_store(store)
    ts.create_thread_row("t", user_id="u")
    [msg] = store.add(["I moved"], "message", thread_ids="t", user_ids="u")
    [old] = ts.commit_thread_pass(
        "t",
        expected_state={},
        state={"seen": 1},
        batches=[
            PendingRecordBatch(
                texts=["lives in Lisbon"],
                record_type="memory",
                thread_ids="t",
                user_ids="u",
                metadata={RESERVED_KEY: {"source_message_ids": [msg]}, "x": 1},
            )
        ],
    ) or [None]
    start = START - timedelta(days=10)
    new = memory_versions(store).update_memory(
        old, "lives in Berlin", valid_from=start, metadata={"y": 2}
    )
    got = store.get("memory", new)
    assert got.metadata == {
        "y": 2,
        RESERVED_KEY: {"source_message_ids": [msg], "supersedes": [old]},
    }
    assert got.valid_from == start.isoformat(timespec="seconds")
    assert store.get("memory", old).valid_until == got.valid_from
    # valid_from=None: an open start cannot precede the replaced version's start, so
    # the new version starts now and the old one ends then (no overlap).
    newer = memory_versions(store).update_memory(new, "lives in Paris", valid_from=None)
    assert store.get("memory", newer).valid_from == START.isoformat(timespec="seconds")
    assert store.get("memory", new).valid_until == START.isoformat(timespec="seconds")
    # An explicit start no later than the replaced version's start is refused.
    before = store.list("memory")
    with pytest.raises(InvalidArgumentError, match="valid_from"):
        memory_versions(store).update_memory(newer, "lives in Rome", valid_from=START)
    assert store.list("memory") == before


def test_update_memory_refuses_unknown_and_non_current_versions(
    store: Any, rejected: Any, snapshot: Any
) -> None:
    versions = memory_versions(store)
    [old] = store.add(["v1"], "memory")
    [msg] = store.add(["a message"], "message", record_ids="m1")
    before = snapshot(store)
    with pytest.raises(NotFoundError, match="nope"):
        versions.update_memory("nope", "x")
    with pytest.raises(NotFoundError):
        versions.update_memory(msg, "x")  # a message is no memory
    assert snapshot(store) == before
    new = versions.update_memory(old, "v2")
    with rejected(store, match=f"memory_id {old!r}.*no longer current.*{new}"):
        versions.update_memory(old, "v3")
    for bad in (
        {"valid_from": "someday"},
        {"reason": 5},
        {"metadata": {RESERVED_KEY: {}}},
        {"metadata": "not a dict"},
        {"content": None},
        {"content": "nul\x00"},
    ):
        with rejected(store):
            versions.update_memory(new, **{"content": "v3", **bad})
    with rejected(store, match="memory_id"):
        versions.update_memory("", "v3")


def test_invalidate_memory_ends_the_window_once(store: Any, clock: Any) -> None:
    versions = memory_versions(store)
    [a, b] = store.add(["has a car", "has a bike"], "memory", valid_from=START - timedelta(1))
    with pytest.raises(NotFoundError):
        versions.invalidate_memory("nope")
    clock.advance(hours=5)
    assert versions.invalidate_memory(a, reason="sold it") is True
    assert versions.invalidate_memory(a) is False
    got = store.get("memory", a)
    assert got.valid_until == clock.now.isoformat(timespec="seconds")
    assert reserved(got) == {"status": "invalid", "superseded_by": None, "reason": "sold it"}
    assert current(store) == ["has a bike"]
    # An explicit end no later than valid_from is refused, naming it; nothing changes.
    with pytest.raises(InvalidArgumentError, match="valid_until"):
        versions.invalidate_memory(b, valid_until=START - timedelta(days=5))
    assert store.get("memory", b).valid_until is None
    assert current(store) == ["has a bike"]
    # A memory whose window starts later is not current yet: False, nothing written.
    [c] = store.add(["has a boat"], "memory", valid_from=clock.now + timedelta(days=9))
    planned = store.get("memory", c)
    assert versions.invalidate_memory(c, reason="no boat after all") is False
    assert versions.invalidate_memory(c, valid_until=clock.now + timedelta(days=20)) is False
    assert store.get("memory", c) == planned
    assert planned.valid_until is None and reserved(planned) == {}
    with pytest.raises(InvalidArgumentError, match="valid_until"):
        versions.invalidate_memory(a, valid_until="tomorrow-ish")


def test_history_follows_links_in_both_directions_oldest_first(store: Any, clock: Any) -> None:
    versions = memory_versions(store)
    [v1] = store.add(["v1"], "preference", valid_from=START - timedelta(days=30))
    [alone] = store.add(["alone"], "preference")
    clock.advance(days=1)
    v2 = versions.update_memory(v1, "v2")
    clock.advance(days=1)
    v3 = versions.update_memory(v2, "v3")
    for member in (v1, v2, v3):
        assert [r.content for r in versions.get_memory_history(member)] == ["v1", "v2", "v3"]
    assert [r.id for r in versions.get_memory_history(alone)] == [alone]
    with pytest.raises(NotFoundError):
        versions.get_memory_history("nope")
    # Ties of valid_from (None) are ordered by created_at.
    [n1] = store.add(["n1"], "memory")
    clock.advance(seconds=1)
    n2 = versions.update_memory(n1, "n2", valid_from=None)
    assert [r.id for r in versions.get_memory_history(n2)] == [n1, n2]


def test_async_twins(store: Any) -> None:
    import asyncio

    versions = memory_versions(store)
    [old] = store.add(["v1"], "memory")

    async def run() -> tuple[str, bool, list[Any]]:
        new = await versions.update_memory_async(old, "v2")
        gone = await versions.invalidate_memory_async(new)
        return new, gone, await versions.get_memory_history_async(old)

    new, gone, history = asyncio.run(run())
    assert gone is True and [r.id for r in history] == [old, new]


# -- the changes of an extraction pass ---------------------------------------------------


def _pass(store: Any, texts: list[str], changes: list[VersionChange], state: int) -> list[str]:
    return (
        thread_store(store).commit_thread_pass(
            "t",
            expected_state={} if state == 1 else {"n": state - 1},
            state={"n": state},
            batches=[
                PendingRecordBatch(texts=texts, record_type="memory", thread_ids="t", user_ids="u")
            ]
            if texts
            else [],
            version_changes=changes,
        )
        or []
    )


def test_commit_thread_pass_applies_version_changes_after_its_batches(
    store: Any, clock: Any
) -> None:
    thread_store(store).create_thread_row("t", user_id="u")
    [car, city] = _pass(store, ["has a car", "lives in Lisbon"], [], 1)
    clock.advance(days=1)
    ids = [f"new-{i}" for i in range(1)]
    written = thread_store(store).commit_thread_pass(
        "t",
        expected_state={"n": 1},
        state={"n": 2},
        batches=[
            PendingRecordBatch(
                texts=["lives in Berlin"],
                record_type="memory",
                thread_ids="t",
                user_ids="u",
                record_ids=ids,
                valid_from=clock.now - timedelta(hours=2),
            )
        ],
        version_changes=[
            VersionChange("supersede", city, ids[0], reason="moved"),
            VersionChange("invalidate", car, reason="sold"),
            VersionChange("invalidate", "unknown"),
            VersionChange("supersede", "unknown", ids[0]),
        ],
    )
    assert written == ids
    assert store.get("memory", city).valid_until == store.get("memory", ids[0]).valid_from
    assert reserved(store.get("memory", ids[0])) == {"supersedes": [city]}
    assert reserved(store.get("memory", car))["reason"] == "sold"
    assert current(store) == ["lives in Berlin"]
    # A lost compare-and-set applies nothing.
    lost = thread_store(store).commit_thread_pass(
        "t",
        expected_state={"n": 1},
        state={"n": 3},
        version_changes=[VersionChange("invalidate", ids[0])],
    )
    assert lost is None and current(store) == ["lives in Berlin"]


def test_a_supersede_of_an_old_version_ends_the_current_head(store: Any, clock: Any) -> None:
    thread_store(store).create_thread_row("t", user_id="u")
    [v1] = _pass(store, ["v1"], [], 1)
    clock.advance(days=1)
    v2 = memory_versions(store).update_memory(v1, "v2")
    clock.advance(days=1)
    _pass(store, ["v3"], [VersionChange("supersede", v1, "x")], 2)  # unknown successor
    assert current(store) == ["v2", "v3"]
    _pass(store, ["v4"], [VersionChange("supersede", "unknown", "placeholder")], 3)
    assert current(store) == ["v2", "v3", "v4"]
    # The stale target v1 is followed to its current head v2.
    ts = thread_store(store)
    written = ts.commit_thread_pass(
        "t",
        expected_state={"n": 3},
        state={"n": 4},
        batches=[
            PendingRecordBatch(
                texts=["v5"], record_type="memory", thread_ids="t", record_ids=["v5"]
            )
        ],
        version_changes=[VersionChange("supersede", v1, "v5")],
    )
    assert written == ["v5"]
    assert reserved(store.get("memory", v2))["superseded_by"] == "v5"
    assert reserved(store.get("memory", "v5"))["supersedes"] == [v2]
    assert current(store) == ["v3", "v4", "v5"]
    # An invalidated head: the chain has no current version, nothing more ends.
    memory_versions(store).invalidate_memory("v5")
    written = ts.commit_thread_pass(
        "t",
        expected_state={"n": 4},
        state={"n": 5},
        batches=[
            PendingRecordBatch(
                texts=["v6"], record_type="memory", thread_ids="t", record_ids=["v6"]
            )
        ],
        version_changes=[VersionChange("supersede", v1, "v6")],
    )
    assert written == ["v6"] and reserved(store.get("memory", "v6")) == {}
    assert current(store) == ["v3", "v4", "v6"]


def test_an_invalidate_following_the_head_ends_the_version_that_holds(
    store: Any, clock: Any
) -> None:
    """``follow_head`` (an extraction DELETE): a target replaced meanwhile ends its
    chain's current head; without it (``invalidate_memory``) nothing ends. A chain
    whose head was invalidated ends nothing more; a target that still holds while
    its next version is planned for later ends itself, and the plan stays."""
    thread_store(store).create_thread_row("t", user_id="u")
    [v1] = _pass(store, ["v1"], [], 1)
    clock.advance(days=1)
    v2 = memory_versions(store).update_memory(v1, "v2")
    clock.advance(days=1)
    _pass(store, [], [VersionChange("invalidate", v1, reason="stale")], 2)
    assert current(store) == ["v2"]
    _pass(store, [], [VersionChange("invalidate", v1, reason="gone", follow_head=True)], 3)
    assert current(store) == []
    ended = store.get("memory", v2)
    assert reserved(ended)["reason"] == "gone" and reserved(ended)["superseded_by"] is None
    assert datetime.fromisoformat(ended.valid_until) == store.clock_now()
    _pass(store, [], [VersionChange("invalidate", v1, reason="again", follow_head=True)], 4)
    assert reserved(store.get("memory", v2))["reason"] == "gone"
    # The next version is planned for later: w1 ends now, the plan begins as planned.
    [w1] = _pass(store, ["w1"], [], 5)
    plan = memory_versions(store).update_memory(
        w1, "w2", valid_from=store.clock_now() + timedelta(days=30)
    )
    _pass(store, [], [VersionChange("invalidate", w1, reason="gone", follow_head=True)], 6)
    assert reserved(store.get("memory", plan)).get("status") is None
    assert store.get("memory", plan).valid_until is None
    ended = store.get("memory", w1)
    assert datetime.fromisoformat(ended.valid_until) == store.clock_now()
    assert (reserved(ended)["reason"], reserved(ended)["superseded_by"]) == ("gone", plan)
    assert current(store) == []
    _pass(store, [], [VersionChange("invalidate", w1, reason="again", follow_head=True)], 7)
    assert reserved(store.get("memory", w1))["reason"] == "gone"  # the plan is not ended


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (VersionChange("supersede", "a"), "successor_id"),
        (VersionChange("delete", "a"), "kind"),  # type: ignore[arg-type]
        (VersionChange("invalidate", ""), "target_id"),
        (VersionChange("invalidate", "a", at=datetime(2026, 1, 1)), "aware"),
        ("not a change", "VersionChange"),
    ],
)
def test_bad_version_changes_are_refused_before_anything_is_written(
    store: Any, rejected: Any, change: Any, match: str
) -> None:
    thread_store(store).create_thread_row("t")
    with rejected(store, match=match):
        thread_store(store).commit_thread_pass(
            "t",
            expected_state={},
            state={"n": 1},
            batches=[PendingRecordBatch(texts=["x"], record_type="memory")],
            version_changes=[change],
        )


# -- two writers at once -------------------------------------------------------------------


@contextmanager
def interleaved(store: Any, other: Any, second: Any) -> Iterator[list[Any]]:
    """Run ``second()`` (on ``other``, another store object of the same storage) right
    before ``store``'s next write transaction begins: the first writer has read and
    embedded the memory, the second one commits meanwhile."""
    backend = store.runtime.backend
    original = backend.transaction
    outcome: list[Any] = []
    fired = threading.Event()

    @contextmanager
    def transaction() -> Iterator[Any]:
        if not fired.is_set():
            fired.set()
            try:
                outcome.append(second())
            except Exception as exc:  # recorded for the test to assert
                outcome.append(exc)
        with original() as tx:
            yield tx

    backend.transaction = transaction
    try:
        yield outcome
    finally:
        del backend.transaction


def test_two_concurrent_updates_leave_exactly_one_current_version(
    make_store: Any, backend: Any
) -> None:
    if not backend.shared_storage:
        pytest.skip("needs two store objects of one storage")
    first = make_store(name="race.db")
    second = make_store(name="race.db")
    [old] = first.add(["v1"], "memory", user_ids="u")
    racing = interleaved(first, second, lambda: memory_versions(second).update_memory(old, "B"))
    with racing as out, pytest.raises(InvalidArgumentError, match="no longer current"):
        memory_versions(first).update_memory(old, "A")
    [b_id] = out
    assert current(first) == ["B"]
    assert [r.id for r in memory_versions(first).get_memory_history(old)] == [old, b_id]
    assert len(first.list("memory")) == 2  # the loser wrote nothing


def test_two_concurrent_invalidations_end_the_memory_once(make_store: Any, backend: Any) -> None:
    if not backend.shared_storage:
        pytest.skip("needs two store objects of one storage")
    first = make_store(name="race.db")
    second = make_store(name="race.db")
    [old] = first.add(["v1"], "memory")
    with interleaved(
        first, second, lambda: memory_versions(second).invalidate_memory(old, reason="B")
    ) as out:
        assert memory_versions(first).invalidate_memory(old, reason="A") is False
    assert out == [True]
    assert reserved(first.get("memory", old))["reason"] == "B"


def test_a_supersede_racing_an_update_follows_to_the_new_head(
    make_store: Any, backend: Any, clock: Any
) -> None:
    """An extraction pass superseding a memory that a person updated meanwhile ends
    the person's version, not the stale one: one current version remains."""
    if not backend.shared_storage:
        pytest.skip("needs two store objects of one storage")
    first = make_store(name="race.db")
    second = make_store(name="race.db")
    thread_store(first).create_thread_row("t")
    [old] = first.add(["v1"], "memory", thread_ids="t")
    clock.advance(hours=1)
    with interleaved(first, second, lambda: memory_versions(second).update_memory(old, "B")) as out:
        thread_store(first).commit_thread_pass(
            "t",
            expected_state={},
            state={"n": 1},
            batches=[
                PendingRecordBatch(
                    texts=["C"], record_type="memory", thread_ids="t", record_ids=["c"]
                )
            ],
            version_changes=[VersionChange("supersede", old, "c")],
        )
    [b_id] = out
    assert current(first) == ["C"]
    assert reserved(first.get("memory", b_id))["superseded_by"] == "c"
    assert reserved(first.get("memory", "c"))["supersedes"] == [b_id]


def test_metadata_json_stays_valid(store: Any) -> None:
    [old] = store.add(["ü"], "memory", metadata={"k": "ß"})
    new = memory_versions(store).update_memory(old, "ö", reason="naïve")
    raw = store.get("memory", old).metadata
    assert json.loads(json.dumps(raw))[RESERVED_KEY]["reason"] == "naïve"
    assert store.get("memory", new).metadata["k"] == "ß"


def test_postgres_row_lock_makes_a_second_invalidation_wait_and_see_the_first(
    make_store: Any, backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both writers are inside their transactions at once: the second one's locked
    read (``SELECT ... FOR UPDATE``) waits for the first to commit, then reads the
    ended window, so only one of them ends it."""
    if backend.id != "postgres":
        pytest.skip("row locks of a server")
    import _pg
    import psycopg

    from oam_core.store.postgres.backend import PgTx

    first = make_store(name="lock.db")
    second = make_store(name="lock.db")
    [old] = first.add(["v1"], "memory")
    original = PgTx.fetch_locked
    results: dict[str, Any] = {}
    threads: list[threading.Thread] = []

    def run_second() -> None:
        try:
            results["second"] = memory_versions(second).invalidate_memory(old, reason="B")
        except Exception as exc:  # reported by the assertion below
            results["second"] = exc

    def locked(self: Any, family: str, record_id: str) -> Any:
        row = original(self, family, record_id)
        if self.b is first.runtime.backend and not threads:
            threads.append(threading.Thread(target=run_second))
            threads[0].start()
            _wait_for_a_lock_wait(psycopg, _pg.server_uri(), threads[0])
        return row

    monkeypatch.setattr(PgTx, "fetch_locked", locked)
    results["first"] = memory_versions(first).invalidate_memory(old, reason="A")
    threads[0].join(timeout=60)
    assert results == {"first": True, "second": False}
    assert reserved(first.get("memory", old))["reason"] == "A"


def _wait_for_a_lock_wait(psycopg: Any, uri: str, writer: threading.Thread) -> None:
    """Return once a session of the server waits on a lock (the second writer's
    locked read), polling ``pg_stat_activity``; fail when ``writer`` ends first."""
    done = threading.Event()
    with psycopg.connect(uri, autocommit=True) as conn:
        for _ in range(3000):
            waiting = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            ).fetchone()[0]
            if waiting:
                return
            if not writer.is_alive():
                break
            done.wait(0.01)
    raise AssertionError("the second writer never waited on the row lock")


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="seconds")


def test_a_version_replaced_by_a_plan_is_current_until_the_plan_begins(
    store: Any, clock: Any
) -> None:
    """A version replaced by one planned for later still holds until the plan begins:
    its window decides, not its marks. It can be updated (the new version goes in
    before the plan) and invalidated (keeping its link to the plan); once ended it is
    refused, naming the version its links lead to; the plan can be corrected before
    it holds but, not being current, not invalidated."""
    versions = memory_versions(store)
    [home] = store.add(["Ana lives in Lisbon"], "memory", user_ids="ana")
    moving = clock.now + timedelta(days=60)
    berlin = versions.update_memory(home, "Ana lives in Berlin", valid_from=moving)
    assert current(store) == ["Ana lives in Lisbon"]
    clock.advance(days=1)
    porto = versions.update_memory(home, "Ana lives in Porto", reason="moved early")
    lisbon, got, plan = (store.get("memory", i) for i in (home, porto, berlin))
    assert (lisbon.valid_until, reserved(lisbon)["superseded_by"]) == (_iso(clock.now), porto)
    assert (got.valid_from, got.valid_until) == (_iso(clock.now), _iso(moving))
    assert reserved(got)["superseded_by"] == berlin and reserved(plan)["supersedes"] == [porto]
    assert current(store) == ["Ana lives in Porto"]
    history = [r.content for r in versions.get_memory_history(berlin)]
    assert history == ["Ana lives in Lisbon", "Ana lives in Porto", "Ana lives in Berlin"]
    before = store.list("memory")
    with pytest.raises(InvalidArgumentError, match=f"no longer current.*{porto}"):
        versions.update_memory(home, "Ana lives in Faro")
    assert store.list("memory") == before
    # Corrected before it starts: the new version takes its start, Berlin never holds.
    munich = versions.update_memory(berlin, "Ana lives in Munich")
    assert store.get("memory", munich).valid_from == _iso(moving)
    assert store.get("memory", berlin).valid_until == _iso(moving)
    later = [r.content for r in store.list("memory", as_of=moving + timedelta(days=1))]
    assert later == ["Ana lives in Munich"]
    assert versions.invalidate_memory(berlin) is False
    assert versions.invalidate_memory(munich) is False  # planned: not current yet
    # Invalidated now, Porto keeps its link to the plan: the history stays whole.
    clock.advance(days=1)
    assert versions.invalidate_memory(porto, reason="left Porto") is True
    ended = store.get("memory", porto)
    assert ended.valid_until == _iso(clock.now)
    assert reserved(ended) == {
        "supersedes": [home],
        "status": "invalid",
        "superseded_by": berlin,
        "reason": "left Porto",
    }
    assert current(store) == []
    assert [r.id for r in versions.get_memory_history(porto)] == [home, porto, berlin, munich]
    with pytest.raises(InvalidArgumentError, match=f"next version {munich!r} starts"):
        versions.update_memory(porto, "Ana lives in Faro")
    assert versions.invalidate_memory(porto) is False


def test_a_memory_invalidated_for_later_is_current_until_then(store: Any, clock: Any) -> None:
    """``invalidate_memory(valid_until=<later>)`` leaves a memory current until then: it
    can be invalidated now (the end moves earlier, never later) and updated."""
    versions = memory_versions(store)
    [car, bike] = store.add(["has a car", "has a bike"], "memory", user_ids="u")
    june = clock.now + timedelta(days=90)
    for memory_id in (car, bike):
        assert versions.invalidate_memory(memory_id, valid_until=june, reason="selling") is True
    assert current(store) == ["has a bike", "has a car"]
    clock.advance(days=1)
    assert versions.invalidate_memory(car, valid_until=june + timedelta(days=9)) is True
    assert store.get("memory", car).valid_until == _iso(june)  # never moved later
    assert versions.invalidate_memory(car, reason="sold early") is True
    got = store.get("memory", car)
    assert got.valid_until == _iso(clock.now)
    assert reserved(got) == {"status": "invalid", "superseded_by": None, "reason": "sold early"}
    assert versions.invalidate_memory(car) is False
    new = versions.update_memory(bike, "has a red bike", reason="painted")
    old = store.get("memory", bike)
    assert old.valid_until == _iso(clock.now)
    assert reserved(old) == {"status": "invalid", "superseded_by": new, "reason": "painted"}
    assert reserved(store.get("memory", new)) == {"supersedes": [bike]}
    assert current(store) == ["has a red bike"]
    assert [r.id for r in versions.get_memory_history(new)] == [bike, new]


def _marked(store: Any, metadata: dict[str, dict[str, Any]]) -> list[str]:
    """Memories (text -> metadata) written with reserved marks, as a pass writes them."""
    batches = [
        PendingRecordBatch(
            texts=[text], record_type="memory", thread_ids="t", user_ids="u", metadata=meta
        )
        for text, meta in metadata.items()
    ]
    ts = thread_store(store)
    return ts.commit_thread_pass("t", expected_state={}, state={"n": 1}, batches=batches) or []


def test_a_successor_that_is_not_stored_is_no_link(store: Any, clock: Any) -> None:
    """Marks naming a successor that is gone (written by an older release, which did
    not join neighbours on delete), or an invalid status with an open window: the
    memory is current, so it can be updated and invalidated, and no error names
    the missing id."""
    versions = memory_versions(store)
    gone = {RESERVED_KEY: {"status": "invalid", "superseded_by": "missing-id", "reason": "r"}}
    marked = {RESERVED_KEY: {"status": "invalid", "superseded_by": None, "reason": "r"}}
    thread_store(store).create_thread_row("t", user_id="u")
    [ghost, flag, other] = _marked(store, {"ghost": gone, "flag": marked, "other": gone})
    assert current(store) == ["flag", "ghost", "other"]
    new = versions.update_memory(ghost, "ghost 2")
    assert reserved(store.get("memory", ghost))["superseded_by"] == new
    assert [r.id for r in versions.get_memory_history(new)] == [ghost, new]
    assert versions.invalidate_memory(flag, reason="gone") is True
    assert current(store) == ["ghost 2", "other"]
    clock.advance(days=1)
    with pytest.raises(InvalidArgumentError) as raised:
        versions.update_memory(flag, "flag 2")
    assert "missing-id" not in str(raised.value)
    assert versions.invalidate_memory(other) is True
    assert reserved(store.get("memory", other))["superseded_by"] is None
    with pytest.raises(InvalidArgumentError) as raised:
        versions.update_memory(other, "other 2")
    assert "missing-id" not in str(raised.value)


def test_a_pass_replacing_a_version_corrected_meanwhile_starts_now(store: Any, clock: Any) -> None:
    """A pass whose messages predate a correction made while it ran supersedes the
    corrected version (the open end of the chain), and starts when it commits: the
    windows follow one another without overlap or an empty one."""
    ts = thread_store(store)
    ts.create_thread_row("t", user_id="u")
    [home] = store.add(
        ["lives in Lisbon"], "memory", user_ids="u", valid_from=START - timedelta(30)
    )
    clock.advance(hours=1)
    porto = memory_versions(store).update_memory(home, "lives in Porto", reason="by hand")
    clock.advance(hours=1)
    batch = PendingRecordBatch(
        texts=["lives in Berlin"],
        record_type="memory",
        record_ids=["b1"],
        user_ids="u",
        valid_from=START - timedelta(days=1),
    )
    ts.commit_thread_pass(
        "t",
        expected_state={},
        state={"n": 1},
        batches=[batch],
        version_changes=[VersionChange("supersede", home, "b1", reason="moved")],
    )
    berlin, corrected = store.get("memory", "b1"), store.get("memory", porto)
    assert berlin.valid_from == _iso(clock.now)
    assert corrected.valid_from == _iso(START + timedelta(hours=1))
    assert corrected.valid_until == berlin.valid_from
    assert reserved(corrected)["superseded_by"] == "b1"
    assert reserved(berlin)["supersedes"] == [porto]
    history = [r.content for r in memory_versions(store).get_memory_history("b1")]
    assert history == ["lives in Lisbon", "lives in Porto", "lives in Berlin"]


def test_a_pass_replacing_what_holds_now_goes_in_before_a_planned_version(
    store: Any, clock: Any
) -> None:
    """A person planned a move for later; a pass then replaces the version that holds
    now: the new version holds from its start until the plan begins, and the plan
    stays, now replacing the new version."""
    ts = thread_store(store)
    ts.create_thread_row("t", user_id="u")
    [home] = store.add(["lives in Lisbon"], "memory", user_ids="u", valid_from=START)
    june = START + timedelta(days=180)
    plan = memory_versions(store).update_memory(
        home, "will live in Berlin", reason="planned", valid_from=june
    )
    clock.advance(hours=2)
    moved = clock.now - timedelta(hours=1)
    batch = PendingRecordBatch(
        texts=["lives in Porto"],
        record_type="memory",
        record_ids=["p1"],
        user_ids="u",
        valid_from=moved,
    )
    ts.commit_thread_pass(
        "t",
        expected_state={},
        state={"n": 1},
        batches=[batch],
        version_changes=[VersionChange("supersede", home, "p1", reason="moved")],
    )
    lisbon, porto, berlin = (store.get("memory", i) for i in (home, "p1", plan))
    assert (lisbon.valid_until, reserved(lisbon)["superseded_by"]) == (_iso(moved), "p1")
    assert reserved(lisbon)["reason"] == "moved"
    assert (porto.valid_from, porto.valid_until) == (_iso(moved), _iso(june))
    assert reserved(porto) == {
        "supersedes": [home],
        "status": "invalid",
        "superseded_by": plan,
        "reason": "planned",
    }
    assert (berlin.valid_from, berlin.valid_until) == (_iso(june), None)
    assert reserved(berlin)["supersedes"] == ["p1"]
    assert current(store) == ["lives in Porto"]
    later = store.list("memory", as_of=june + timedelta(days=1))
    assert [r.content for r in later] == ["will live in Berlin"]
    history = [r.content for r in memory_versions(store).get_memory_history(home)]
    assert history == ["lives in Lisbon", "lives in Porto", "will live in Berlin"]
