"""Two PostgreSQL store objects, opened before any vector was written, whose first
writes carry different dimensions at the same moment: the second waits for the first
(``oam_meta`` is locked while a dimension is learned) and is then refused with the
error naming both dimensions (docs/store.md#schema). The interleaving is injected:
the first write pauses right after its check until the second is seen waiting."""

from __future__ import annotations

import threading
import time
from typing import Any

import _pg
import numpy as np
import pytest

psycopg = pytest.importorskip("psycopg")


def _waiting_on_a_lock(conninfo: str, deadline_s: float = 30.0) -> bool:
    """Whether another session of the server comes to wait on a lock in time."""
    end = time.monotonic() + deadline_s
    with psycopg.connect(conninfo, autocommit=True) as conn:
        while time.monotonic() < end:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                "AND pid <> pg_backend_pid()"
            ).fetchone()
            if row and int(row[0]) > 0:
                return True
            time.sleep(0.01)
    return False


def test_concurrent_first_writes_of_two_dimensions(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        info = _pg.conninfo_for(_pg.new_schema())
    except _pg.ServerUnavailable as exc:
        pytest.skip(str(exc))
    from oam_core.store.postgres import PostgresMemoryStore
    from oam_core.store.runtime import StoreRuntime

    first = PostgresMemoryStore(info, schema_policy="CREATE_IF_NECESSARY")
    second = PostgresMemoryStore(info, schema_policy="REQUIRE_EXISTING")
    assert first.vector_dim is None and second.vector_dim is None
    outcome: dict[str, Any] = {}
    check = StoreRuntime.check_recorded_dim
    seen: list[bool] = []

    def second_write() -> None:
        try:
            second.add(["four"], "memory", embeddings=np.ones((1, 4), np.float32))
            outcome["second"] = "written"
        except Exception as exc:  # the test reads it below
            outcome["second"] = exc

    thread = threading.Thread(target=second_write)

    def paused(self: Any, recorded: str | None, dim: int) -> None:
        check(self, recorded, dim)
        if self is first.runtime and not seen:
            thread.start()  # the second write starts while the first holds its check
            seen.append(_waiting_on_a_lock(info))

    monkeypatch.setattr(StoreRuntime, "check_recorded_dim", paused)
    first.add(["eight"], "memory", embeddings=np.ones((1, 8), np.float32), record_ids=["e"])
    thread.join(60)
    assert seen == [True], "the second write did not wait for the first"
    error = outcome["second"]
    assert isinstance(error, ValueError)
    assert "dimension 4" in str(error) and "dimension 8" in str(error)
    assert second.vector_dim == 8
    monkeypatch.undo()
    hits = second.search(query_vector=np.ones(8).tolist(), k=5)
    assert [r.id for r, _ in hits] == ["e"]
    first.close()
    second.close()
