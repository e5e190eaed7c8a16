"""Conformance: errors about record ids name the first few ids and their count, not
every id (a clash of 9,000 ids gave a message of 97,916 characters;
docs/concepts.md#ids-and-times).
"""

from __future__ import annotations

from typing import Any

import pytest

from oam_core.apis.batch import PendingRecordBatch
from oam_core.store.planning import name_ids

N = 1200
IDS = [f"id-{i:05d}" for i in range(N)]


def _short(message: str) -> None:
    assert len(message) < 300, message[:400]
    assert "'id-00000', 'id-00001', 'id-00002', 'id-00003', 'id-00004', ..." in message
    assert f"({N} ids)" in message
    assert "id-00005" not in message


def test_name_ids_lists_a_few_sorted_and_counts_the_rest() -> None:
    assert name_ids(["b", "a"]) == "['a', 'b']"
    assert name_ids([f"x{i}" for i in range(7)]) == "['x0', 'x1', 'x2', 'x3', 'x4', ...] (7 ids)"


def test_ids_stored_before_are_named_by_the_first_few_and_the_count(store: Any) -> None:
    store.add(["t"] * N, "memory", record_ids=IDS)
    with pytest.raises(ValueError, match="already exist") as info:
        store.add(["again"] * N, "memory", record_ids=IDS)
    _short(str(info.value))
    assert {r.content for r in store.list("memory", limit=None)} == {"t"}


def test_duplicate_ids_of_one_call_are_named_by_the_first_few_and_the_count(store: Any) -> None:
    with pytest.raises(ValueError, match="duplicate record ids") as info:
        store.add(["t"] * (2 * N), "memory", record_ids=IDS + IDS)
    _short(str(info.value))
    assert store.list("memory", limit=None) == []


def test_ids_repeated_across_batches_are_named_by_the_first_few_and_the_count(
    store: Any,
) -> None:
    batch = PendingRecordBatch(texts=["t"] * N, record_type="memory", record_ids=IDS)
    with pytest.raises(ValueError, match="across batches") as info:
        store.add_batches([batch, batch])
    _short(str(info.value))
    assert store.list("memory", limit=None) == []
