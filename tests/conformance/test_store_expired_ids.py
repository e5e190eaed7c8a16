"""A row that expired but is not purged yet is absent for a write as for every read
(docs/store.md#ttl-and-retention): a write of its id replaces it, in the write's own
transaction, on every back end of the suite (real SQLite files and the real
PostgreSQL server); a write that fails leaves it as it was."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oam_core import InvalidArgumentError, copy_store, export_store, import_store
from oam_core.apis.batch import PendingRecordBatch
from oam_core.store.threads import thread_store
from oam_core.store.versions import memory_versions

OLD = "walrus tuba"
NEW = "heron violin"


def _expired(store: Any, clock: Any, rtype: str = "fact", rid: str = "x", **kw: Any) -> None:
    store.add([OLD], rtype, record_ids=[rid], ttl_days=1, **kw)
    clock.advance(days=2)
    assert store.get(rtype, rid) is None


def _raw_ids(snapshot: Callable[[Any], dict[str, Any]], store: Any) -> int:
    """How many raw rows (records and search rows) a store holds, expired included."""
    raw = snapshot(store).get("raw", {})
    return sum(len(rows) for rows in raw.values())


def _only_new(store: Any, rtype: str, rid: str, search_rows: Any) -> None:
    assert store.get(rtype, rid).content == NEW
    assert [r.id for r in store.list(rtype)] == [rid]
    assert search_rows(store, rtype, rid) == [(NEW, True)]
    for query in (OLD, "walrus", "tuba"):
        for _record, _ in store.search(query, k=5):
            assert _record.content != OLD
    assert [r.id for r, _ in store.search(NEW, k=5)] == [rid]
    assert store.purge_expired() == 0  # nothing of the old row was left


@pytest.mark.parametrize("rtype", ["fact", "memory", "preference", "message"])
@pytest.mark.parametrize("how", ["add", "upsert", "add_batches"])
def test_a_write_with_the_id_of_an_expired_row_replaces_it(
    make_store: Callable[..., Any], clock: Any, search_rows: Any, rtype: str, how: str
) -> None:
    store = make_store()
    scope: dict[str, Any] = {"user_ids": "ana"}
    if rtype == "message":
        scope.update(thread_ids="t1", roles="user")
    _expired(store, clock, rtype, "x", **scope)
    if how == "add":
        assert store.add([NEW], rtype, record_ids=["x"], **scope) == ["x"]
    elif how == "upsert":
        assert store.upsert([NEW], rtype, record_ids=["x"], **scope) == ["x"]
    else:
        batch = PendingRecordBatch(texts=[NEW], record_type=rtype, record_ids=["x"], **scope)
        assert store.add_batches([batch]) == ["x"]
    _only_new(store, rtype, "x", search_rows)


def test_thread_messages_with_the_id_of_an_expired_message_replace_it(
    make_store: Callable[..., Any], clock: Any, search_rows: Any
) -> None:
    store = make_store()
    threads = thread_store(store)
    threads.create_thread_row("t1", user_id="ana", agent_id="bot")
    _expired(store, clock, "message", "m1", thread_ids="t1", user_ids="ana", agent_ids="bot")
    batch = PendingRecordBatch(
        texts=[NEW],
        record_type="message",
        record_ids=["m1"],
        thread_ids="t1",
        user_ids="ana",
        agent_ids="bot",
        roles="user",
    )
    threads.add_to_thread("t1", [batch])
    _only_new(store, "message", "m1", search_rows)


@pytest.mark.parametrize("on_conflict", ["error", "skip", "replace"])
@pytest.mark.parametrize("how", ["import", "copy"])
def test_import_and_copy_replace_an_expired_row_in_every_mode(
    make_store: Callable[..., Any],
    clock: Any,
    search_rows: Any,
    tmp_path: Path,
    on_conflict: str,
    how: str,
) -> None:
    source = make_store(name="source")
    source.add([NEW], "fact", record_ids=["x"], user_ids="ana")
    target = make_store(name="target")
    target.add([OLD], "fact", record_ids=["x"], user_ids="ana", ttl_days=1)
    clock.advance(days=2)
    if how == "copy":
        summary = copy_store(source, target, on_conflict=on_conflict)  # type: ignore[arg-type]
    else:
        export_store(source, tmp_path / "d.jsonl")
        summary = import_store(target, tmp_path / "d.jsonl", on_conflict=on_conflict)  # type: ignore[arg-type]
    assert summary.records == {"fact": 1} and summary.skipped_existing == 0
    _only_new(target, "fact", "x", search_rows)


def test_a_failed_write_leaves_the_expired_row_as_it_was(
    make_store: Callable[..., Any],
    clock: Any,
    snapshot: Callable[[Any], dict[str, Any]],
    tmp_path: Path,
) -> None:
    store = make_store()
    store.add(["live one"], "fact", record_ids=["live"])
    _expired(store, clock)
    before = snapshot(store)
    assert _raw_ids(snapshot, store) > 2 or "raw" not in before
    with pytest.raises(InvalidArgumentError, match="already exist"):
        store.add([NEW, "again"], "fact", record_ids=["x", "live"])
    assert snapshot(store) == before
    dump = io.BytesIO()
    other = make_store(name="other")
    other.add([NEW], "fact", record_ids=["x"])
    other.add(["live two"], "fact", record_ids=["live"])
    export_store(other, dump)
    for mode in ("error", "skip", "replace"):
        # a row the write path refuses in the same batch: nothing of it is written
        bad = dump.getvalue().replace(b'"live two"', b'"live \\u0000"')
        with pytest.raises(InvalidArgumentError):
            import_store(store, io.BytesIO(bad), on_conflict=mode)  # type: ignore[arg-type]
        assert snapshot(store) == before
    with pytest.raises(InvalidArgumentError, match="'live'"):
        import_store(store, io.BytesIO(dump.getvalue()))  # first pass: 'live' is held
    assert snapshot(store) == before
    assert store.purge_expired() == 1  # the expired row was still there, whole


def test_version_links_to_a_replaced_expired_memory_are_joined_as_for_a_delete(
    make_store: Callable[..., Any], clock: Any
) -> None:
    store = make_store()
    versions = memory_versions(store)
    store.add(["v1 lives in Lisbon"], "memory", record_ids=["v1"], user_ids="ana")
    v2 = versions.update_memory("v1", "v2 lives in Porto")
    v3 = versions.update_memory(v2, "v3 lives in Faro")
    assert [r.id for r in versions.get_memory_history("v1")] == ["v1", v2, v3]
    assert store.update("memory", v2, ttl_days=1) == 1
    clock.advance(days=2)
    store.add(["an unrelated memory"], "memory", record_ids=[v2], user_ids="bob")
    assert [r.id for r in versions.get_memory_history("v1")] == ["v1", v3]
    assert [r.id for r in versions.get_memory_history(v3)] == ["v1", v3]
    assert [r.id for r in versions.get_memory_history(v2)] == [v2]
    reserved = store.get("memory", v2).metadata or {}
    assert "$agent_memory" not in reserved
