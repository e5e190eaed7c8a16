"""The write planner (``store/writeplan.py``) and the update steps
(``store/updates.py``): typed columns from one parse step, one planner per row kind,
a pure update plan, and ``InvalidArgumentError`` (an ``OAMError`` and a ``ValueError``)
for the arguments these modules refuse (docs/store.md#writing-records, docs/errors.md)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.batch import PendingRecordBatch
from oam_core.errors import InvalidArgumentError, OAMError
from oam_core.store.backend import StoredRow
from oam_core.store.options import MemoryRetentionConfig
from oam_core.store.planning import BulkPlan, PlanContext, RowPlan
from oam_core.store.sqlite import SQLiteMemoryStore
from oam_core.store.updates import SearchRows, parse_update, plan_search_rows, plan_update
from oam_core.store.writeplan import parse_batch, plan_records

NOW = datetime(2026, 12, 1, tzinfo=timezone.utc)
CTX = PlanContext(
    chunk_chars=2000,
    vector_dim=4,
    has_embedder=False,
    retention=MemoryRetentionConfig(),
    now=NOW,
)


def _vectors(n: int) -> np.ndarray:
    return np.arange(1, 4 * n + 1, dtype=np.float32).reshape(n, 4)


def test_parse_broadcasts_scalars_into_one_entry_per_record() -> None:
    batch = PendingRecordBatch(
        ["a", "b", "c"],
        "fact",
        embeddings=_vectors(3),
        record_ids=["x", "y", "z"],
        user_ids="u",
        thread_ids=[None, "t", None],
        metadata={"k": 1},
        ttl_days=2,
        timestamps=["2026-01-01T00:00:00Z", None, None],
    )
    columns = parse_batch(batch, CTX)
    assert columns.family == "memory" and columns.n == 3
    assert columns.user_ids == ["u", "u", "u"]
    assert columns.thread_ids == [None, "t", None]
    assert columns.metadata_json == ['{"k":1}'] * 3
    assert columns.expires_at == NOW + timedelta(days=2)
    assert columns.matrix is not None and columns.matrix.shape == (3, 4)
    assert columns.embeddings == [NOT_SET] * 3
    assert columns.row_name("timestamps", 2) == "timestamps[2]"
    assert columns.row_name("ttl_days", 2) == "ttl_days"


def test_the_bulk_shape_gives_one_bulk_plan_and_a_timestamp_gives_row_plans() -> None:
    bulk = plan_records(
        parse_batch(PendingRecordBatch(["a", "b"], "memory", embeddings=_vectors(2)), CTX), CTX
    )
    assert isinstance(bulk, BulkPlan) and bulk.contents == ["a", "b"]
    rows = plan_records(
        parse_batch(
            PendingRecordBatch(
                ["a", "b"], "memory", embeddings=_vectors(2), timestamps="2026-01-02T03:04:05Z"
            ),
            CTX,
        ),
        CTX,
    )
    assert isinstance(rows, list)
    assert [r.timestamp for r in rows] == ["2026-01-02T03:04:05+00:00"] * 2
    assert [len(r.chunks) for r in rows] == [1, 1]


def _rows(batch: PendingRecordBatch) -> list[RowPlan]:
    planned = plan_records(parse_batch(batch, CTX), CTX)
    assert isinstance(planned, list)
    return planned


def test_each_row_kind_has_its_rules() -> None:
    (message,) = _rows(PendingRecordBatch(["hi"], "message", roles="user", thread_ids="t"))
    assert (message.role, message.chunk_scope) == ("user", ("t", None, None))
    (memory,) = _rows(PendingRecordBatch(["hi"], "memory", roles="user", user_ids="u"))
    assert (memory.role, memory.chunk_scope) == (None, (None, "u", None))
    (user,) = _rows(PendingRecordBatch(["likes tea"], "user_profile", record_ids="ann"))
    (agent,) = _rows(PendingRecordBatch(["helps"], "agent_profile", record_ids="bot"))
    assert (user.chunk_scope, agent.chunk_scope) == ((None, "ann", None), (None, None, "bot"))
    with pytest.raises(InvalidArgumentError, match=r"contents\[0\]: message content"):
        _rows(PendingRecordBatch([None], "message"))
    with pytest.raises(InvalidArgumentError, match=r"contents\[0\]: a profile needs"):
        _rows(PendingRecordBatch([None], "user_profile", record_ids="ann"))
    (empty,) = _rows(PendingRecordBatch([None], "memory"))
    assert (empty.content, empty.chunks) == (None, [])


def _stored(metadata: dict[str, Any] | None, timestamp: str | None = None) -> StoredRow:
    return StoredRow(
        key=7,
        family="memory",
        record_type="memory",
        content="old",
        timestamp=timestamp,
        metadata=metadata,
        created_at=NOW,
        scope=(None, None, None),
        id="m1",
    )


def _update(**given: Any) -> dict[str, Any]:
    fields: dict[str, Any] = dict(
        text=NOT_SET,
        index_text=NOT_SET,
        embedding=NOT_SET,
        metadata=NOT_SET,
        timestamp=NOT_SET,
        ttl_days=NOT_SET,
        ttl_anchor=NOT_SET,
    )
    fields.update(given)
    return fields


def test_the_update_plan_reads_only_the_stored_row() -> None:
    args = parse_update("memory", "m1", **_update(metadata={"a": 1}, ttl_days=3, text="new"))
    rows = plan_search_rows(args, CTX)
    stored = _stored({"$agent_memory": {"source": "x"}, "old": True})
    changes = plan_update(stored, args, rows, MemoryRetentionConfig(), [])
    assert changes.fields() == {
        "content": "new",
        "metadata": json.dumps({"a": 1, "$agent_memory": {"source": "x"}}),
        "expires_at": NOW + timedelta(days=3),
    }
    assert changes.chunks is not None and [c.text for c in changes.chunks] == ["new"]


def test_an_embedding_alone_is_paired_with_the_stored_search_rows() -> None:
    args = parse_update("memory", "m1", **_update(embedding=[[1.0, 0, 0, 0], [0, 1.0, 0, 0]]))
    rows = plan_search_rows(args, CTX)
    assert rows.chunks is None and rows.revector is not NOT_SET
    changes = plan_update(_stored(None), args, rows, MemoryRetentionConfig(), ["p", "q"])
    assert changes.fields() == {}
    assert changes.chunks is not None and [c.text for c in changes.chunks] == ["p", "q"]
    with pytest.raises(InvalidArgumentError, match="2 vectors but the record has 3 search rows"):
        plan_update(_stored(None), args, rows, MemoryRetentionConfig(), ["p", "q", "r"])
    cleared = plan_search_rows(parse_update("memory", "m1", **_update(embedding=None)), CTX)
    assert cleared == SearchRows(None, None)


@pytest.fixture
def store(tmp_path: Path):
    s = SQLiteMemoryStore(tmp_path / "w.db", vector_dim=4)
    yield s
    s.close()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.add("abc", "memory"), "contents must be a list"),
        (lambda s: s.add(["a"], "memory", batch_size=0), "batch_size must be a positive int"),
        (lambda s: s.add(["a", "b"], "memory", record_ids=["x", None]), "all given or all"),
        (lambda s: s.add(["a"], "memory", user_ids=[""]), r"user_ids\[0\] must be a non-empty"),
        (lambda s: s.add([1], "memory"), r"contents\[0\] must be a str or None"),
        (lambda s: s.update("memory", "x"), "update needs at least one of"),
        (lambda s: s.update("message", "x", text=None), "text=None is not allowed on messages"),
        (lambda s: s.add_batches(["x"]), r"batches\[0\] must be a PendingRecordBatch"),
    ],
)
def test_refused_write_arguments_are_invalid_argument_errors(
    store: SQLiteMemoryStore, call: Any, message: str
) -> None:
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        call(store)
    assert isinstance(caught.value, OAMError) and isinstance(caught.value, ValueError)
    assert store.list("memory") == []
