"""Store conformance: the oam addition ``upsert_batches``, the write of LlamaIndex's vector store
(docs/failure-modes.md#c30: re-ingesting the same node ids replaces them, in one transaction)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from oam_core import PendingRecordBatch


def _batches(texts: dict[str, str], with_vectors: bool) -> list[PendingRecordBatch]:
    ids = list(texts)
    vectors = [[1.0] + [0.0] * 63 for _ in ids]
    return [
        PendingRecordBatch(
            texts=[texts[i] for i in ids[:1]],
            record_type="memory",
            record_ids=ids[:1],
            embeddings=vectors[:1] if with_vectors else None,
        ),
        PendingRecordBatch(
            texts=[texts[i] for i in ids[1:]], record_type="memory", record_ids=ids[1:]
        ),
    ]


def test_upsert_batches_adds_then_replaces(store: Any) -> None:
    assert store.upsert_batches(_batches({"a": "old a", "b": "old b"}, True)) == ["a", "b"]
    assert store.upsert_batches(_batches({"a": "new a", "b": "new b"}, True)) == ["a", "b"]
    assert [(r.id, r.content) for r in store.list("memory")] == [("a", "new a"), ("b", "new b")]
    assert all("old" not in (r.content or "") for r, _ in store.search("old", 10))


def test_upsert_batches_needs_ids_and_writes_nothing_on_error(store: Any, rejected: Any) -> None:
    store.add(["keep"], "memory", record_ids="k")
    with rejected(store, match="record_ids"):
        store.upsert_batches([PendingRecordBatch(texts=["x"], record_type="memory")])
    with rejected(store, match="duplicate|already|repeated"):
        store.upsert_batches(
            _batches({"k": "a", "z": "b"}, False) + _batches({"k": "c"}, False)[:1]
        )


def test_a_failure_after_the_delete_rolls_the_replacement_back(store: Any) -> None:
    """The old rows are deleted and the new ones inserted in one transaction: a failure
    injected between the two leaves the old records, searchable, in place."""
    store.upsert_batches(_batches({"a": "old a", "b": "old b"}, False))
    backend = store.runtime.backend
    real = backend.transaction

    @contextlib.contextmanager
    def failing() -> Iterator[Any]:
        with real() as tx:

            def insert(*args: Any, **kwargs: Any) -> None:
                raise RuntimeError("injected failure after the delete")

            tx.insert = insert  # the deletes of the replaced ids already ran
            yield tx

    backend.transaction = failing
    try:
        with pytest.raises(RuntimeError, match="injected"):
            store.upsert_batches(_batches({"a": "new a", "b": "new b"}, False))
    finally:
        backend.transaction = real
    assert [(r.id, r.content) for r in store.list("memory")] == [("a", "old a"), ("b", "old b")]
    assert {r.id for r, _ in store.search("old", 10)} == {"a", "b"}


def test_upsert_batches_async_twin(store: Any) -> None:
    ids = asyncio.run(store.upsert_batches_async(_batches({"a": "x", "b": "y"}, False)))
    assert ids == ["a", "b"]
    assert store.get("memory", "b").content == "y"
