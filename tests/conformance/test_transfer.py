"""Moving memory between stores (docs/transfer.md): ``copy_store``, ``export_store`` and
``import_store`` between every pair of back ends, on real SQLite files and the real
PostgreSQL server; the source back end is this suite's ``backend``, the target each
entry of ``TRANSFER_TARGETS`` (conftest.py)."""

from __future__ import annotations

import gzip
import io
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from oam_core import (
    EmbedderMismatchError,
    InvalidArgumentError,
    copy_store,
    export_store,
    import_store,
)
from oam_core.apis.batch import PendingRecordBatch
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.options import SearchStrategy
from oam_core.store.quotes import QuotingChunk
from oam_core.store.threads import ReservedUpdate, thread_store
from oam_core.transfer import TransferError

RECORDS = int(os.environ.get("OAM_TRANSFER_TEST_RECORDS", "120"))
"""About how many records the lossless tests write (``populate``); CI keeps the
default, a longer run sets ``OAM_TRANSFER_TEST_RECORDS`` (bench/README.md#transferpy)."""
MEMORY_TYPES = ("memory", "guideline", "fact", "preference")
LISTED_TYPES = ("message", *MEMORY_TYPES, "user_profile", "agent_profile")
WORDS = [
    "lisbon",
    "berlin",
    "coffee",
    "tea",
    "dog",
    "cat",
    "piano",
    "violin",
    "train",
    "plane",
    "rust",
    "python",
]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 6)))


def populate(store: Any, clock: Any, n: int, seed: int) -> None:
    """About ``n`` records of every kind: threads with config and state, messages
    (some quoting earlier ones in a context row), memory-like records of every type
    and scope with metadata, timestamps, TTLs and supersede links, profiles."""
    rng = random.Random(seed)
    threads = thread_store(store)
    tids = []
    for i in range(max(2, n // 40)):
        tid = f"t{i}"
        threads.create_thread_row(
            tid,
            user_id=rng.choice(["u1", "u2", None]),
            agent_id=rng.choice(["a1", None]),
            metadata={"title": _text(rng)} if rng.random() < 0.5 else None,
            config={"extract": bool(i % 2), "window": i},
        )
        tids.append(tid)
    message_ids: dict[str, list[str]] = {t: [] for t in tids}
    for _ in range(n // 2):
        tid = rng.choice(tids)
        row = threads.get_thread_row(tid)
        assert row is not None
        earlier = message_ids[tid][-2:]
        text = _text(rng)
        index: Any = None
        if earlier and rng.random() < 0.3:
            index = [text, QuotingChunk(f"context: {text}", earlier)]
        ids = threads.add_to_thread(
            tid,
            [
                PendingRecordBatch(
                    texts=[text],
                    record_type="message",
                    index_texts=[index] if index is not None else None,
                    thread_ids=tid,
                    user_ids=row.user_id,
                    agent_ids=row.agent_id,
                    roles=rng.choice(["user", "assistant"]),
                    timestamps=f"2026-02-{rng.randint(1, 28):02d}T10:00:00Z"
                    if rng.random() < 0.5
                    else None,
                    ttl_days=rng.choice([None, 5, 30]),
                )
            ],
        )
        message_ids[tid].extend(ids)
        if rng.random() < 0.1:
            clock.advance(minutes=1)
    for i, tid in enumerate(tids):
        memories = threads.commit_thread_pass(
            tid,
            expected_state={},
            state={"watermark": len(message_ids[tid]) - 1, "summary": f"summary {i}"},
            batches=[
                PendingRecordBatch(
                    texts=[_text(rng)],
                    record_type="memory",
                    thread_ids=tid,
                    metadata={"$agent_memory": {"source_message_ids": message_ids[tid][:2]}},
                )
            ],
        )
        assert memories
    for _ in range(n // 2):
        rtype = rng.choice(MEMORY_TYPES)
        store.add(
            [_text(rng)],
            rtype,
            user_ids=rng.choice(["u1", "u2", None]),
            agent_ids=rng.choice(["a1", None]),
            thread_ids=rng.choice([*tids, None]),
            metadata=rng.choice([None, {"topic": rng.choice(WORDS), "n": rng.randint(0, 9)}]),
            timestamps=rng.choice([None, "2025-12-24T08:30:00+01:00"]),
            ttl_days=rng.choice([None, 2, 90]),
        )
    old = store.list("fact", limit=3)
    new = store.add(["i moved to berlin"], "fact", user_ids="u1")
    if old:
        tid = tids[0]
        done = threads.commit_thread_pass(
            tid,
            expected_state=threads.get_thread_row(tid).state,
            state={"watermark": 99},
            reserved_updates=[
                ReservedUpdate("fact", old[0].id, {"status": "invalid", "superseded_by": new[0]})
            ],
        )
        assert done is not None
    store.add(["likes trains"], "user_profile", record_ids="u1")
    store.add(["a helpful agent"], "agent_profile", record_ids="a1")
    store.add(["unscoped text only"], "memory", index_texts=[""], embeddings=None)
    clock.advance(days=3)  # some TTLs have passed: those rows are not copied


def state(store: Any) -> dict[str, Any]:
    """Everything ``get``/``list``/``search`` shows of a store."""
    threads = thread_store(store)
    rows = threads.list_thread_rows()
    out: dict[str, Any] = {t: store.list(t, limit=None) for t in LISTED_TYPES}
    out["threads"] = rows
    out["messages"] = {r.thread_id: store.list_thread_messages(r.thread_id) for r in rows}
    for strategy in (SearchStrategy.VECTOR, SearchStrategy.KEYWORD):
        for query in ("berlin coffee", "dog piano", "context train"):
            for scope in ({}, {"user_id": "u1", "exact_user_match": True}):
                found = _search(store, strategy, query, scope)
                out[f"{strategy.name}:{query}:{scope}"] = found
    return out


def _search(store: Any, strategy: SearchStrategy, query: str, scope: dict[str, Any]) -> Any:
    """Every hit (k above the store's size, so ties never straddle the cut) as
    ``(distance to 1e-4, id, record)``, sorted: back ends compute distances in float32
    or float64, so equal distances may differ in their last bits and tie otherwise."""
    from oam_core.store.strategy import searching_with

    with searching_with(store, strategy):
        hits = store.search(query, k=10_000 + 4 * RECORDS, **scope)
    return sorted((round(d, 4), r.id, r) for r, d in hits)


def dump_lines(store: Any) -> list[bytes]:
    """The store's dump, without the header's time."""
    buf = io.BytesIO()
    export_store(store, buf)
    lines = buf.getvalue().splitlines()
    head = orjson.loads(lines[0])
    del head["created_at"]
    return [orjson.dumps(head), *lines[1:]]


def test_copy_is_lossless(
    make_store: Callable[..., Any], make_target: Callable[..., Any], clock: Any
) -> None:
    source = make_store()
    populate(source, clock, RECORDS, seed=7)
    target = make_target()
    summary = copy_store(source, target)
    assert summary.records["thread"] == len(thread_store(source).list_thread_rows())
    assert summary.skipped_expired > 0
    assert summary.total == sum(source.dump_counts().values())
    # Expired rows not yet purged still weigh in the source's BM25 statistics.
    source.purge_expired()
    assert state(target) == state(source)
    assert dump_lines(target) == dump_lines(source)
    # The thread's message numbers go on where they were on both.
    row = thread_store(source).list_thread_rows()[0]
    for store in (source, target):
        thread_store(store).add_to_thread(
            row.thread_id,
            [
                PendingRecordBatch(
                    texts=["next"],
                    record_type="message",
                    record_ids=["next-1"],
                    thread_ids=row.thread_id,
                    roles="user",
                )
            ],
        )
    assert state(target) == state(source)
    assert target.get("message", "next-1").seq_no == source.get("message", "next-1").seq_no


def test_export_import_gzip_round_trip(
    make_store: Callable[..., Any],
    make_target: Callable[..., Any],
    clock: Any,
    tmp_path: Path,
) -> None:
    source = make_store()
    populate(source, clock, 60, seed=3)
    source.purge_expired()
    path = tmp_path / "dump.jsonl.gz"
    exported = export_store(source, path)
    with gzip.open(path) as f:
        lines = f.read().splitlines()
    head = orjson.loads(lines[0])
    assert head["format"] == "oam-dump" and head["version"] == 1
    assert head["embedder"]["id"] == "hashing/64" and head["embedder"]["dimension"] == 64
    assert head["record_counts"] == source.dump_counts()
    assert orjson.loads(lines[-1])["kind"] == "end"
    assert exported.bytes == sum(len(line) + 1 for line in lines)
    target = make_target()
    imported = import_store(target, path)
    assert imported.records == exported.records
    assert imported.search_rows == exported.search_rows
    assert state(target) == state(source)
    # Re-running with skip writes nothing twice; replace rewrites the same rows.
    again = import_store(target, path, on_conflict="skip")
    assert again.total == 0 and again.skipped_existing == exported.total
    assert state(target) == state(source)
    replaced = import_store(target, path, on_conflict="replace")
    assert replaced.records == exported.records
    assert state(target) == state(source)


def test_user_ids_limit_the_dump(
    make_store: Callable[..., Any], make_target: Callable[..., Any], clock: Any
) -> None:
    source = make_store()
    populate(source, clock, 60, seed=5)
    target = make_target()
    copy_store(source, target, user_ids=["u1"])
    assert thread_store(target).list_thread_rows() == thread_store(source).list_thread_rows(
        user_id="u1"
    )
    for rtype in MEMORY_TYPES:
        assert {r.id for r in target.list(rtype, limit=None)} == {
            r.id
            for r in source.list(rtype, limit=None)
            if r.user_id == "u1"
            or (
                r.thread_id is not None
                and r.thread_id
                in {t.thread_id for t in thread_store(source).list_thread_rows(user_id="u1")}
            )
        }
    assert [r.id for r in target.list("user_profile")] == ["u1"]
    assert target.list("agent_profile") == []


def test_id_clash_names_the_id_and_writes_nothing_of_the_batch(
    make_store: Callable[..., Any], make_target: Callable[..., Any], tmp_path: Path
) -> None:
    source = make_store()
    ids = source.add(["alpha", "beta", "gamma"], "fact", user_ids="u1")
    path = tmp_path / "d.jsonl"
    export_store(source, path)
    target = make_target()
    target.add(["already here"], "fact", record_ids=ids[1])
    before = state(target)
    with pytest.raises(TransferError, match=ids[1]) as caught:
        import_store(target, path)
    assert caught.value.summary.total == 0
    assert isinstance(caught.value, InvalidArgumentError)
    assert state(target) == before


def test_another_embedder_needs_reembed(
    make_store: Callable[..., Any], make_target: Callable[..., Any], tmp_path: Path
) -> None:
    source = make_store()
    source.add(["the dog likes the piano"], "fact", user_ids="u1")
    path = tmp_path / "d.jsonl"
    export_store(source, path)
    target = make_target(embedder=HashingEmbedder(32))
    with pytest.raises(EmbedderMismatchError, match=r"hashing/64.*hashing/32"):
        import_store(target, path)
    assert target.list("fact") == []
    done = import_store(target, path, reembed=True)
    assert done.records == {"fact": 1}
    [(record, distance)] = target.search("dog piano", k=1)
    assert record.content == "the dog likes the piano"
    assert distance < 0.5
