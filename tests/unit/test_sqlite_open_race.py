"""Two store objects opening one new SQLite file with different dimensions at the same
moment: the configuration is read again under the write lock before it is recorded,
so the second never writes its dimension over the first's (docs/store.md#schema)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore
from oam_core.errors import SchemaError


def _recorded_dim(path: Path) -> str | None:
    store = SQLiteMemoryStore(path)
    try:
        return None if store.vector_dim is None else str(store.vector_dim)
    finally:
        store.close()


def test_a_dimension_recorded_between_the_read_and_the_write_is_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "race.db"
    adopt = SQLiteMemoryStore._adopt_config
    other: list[SQLiteMemoryStore] = []

    def interleaved(self: SQLiteMemoryStore, meta: dict[str, str], *args: Any, **kw: Any) -> None:
        adopt(self, meta, *args, **kw)
        if self.vector_dim == 4 and not other:  # the first store, after its read
            other.append(SQLiteMemoryStore(path, vector_dim=8))  # records 8 meanwhile

    monkeypatch.setattr(SQLiteMemoryStore, "_adopt_config", interleaved)
    with pytest.raises(SchemaError, match=r"dimension 8.*dimension 4"):
        SQLiteMemoryStore(path, vector_dim=4)
    monkeypatch.undo()
    (second,) = other
    second.add(["eight"], "memory", embeddings=np.ones((1, 8), np.float32), record_ids=["e"])
    assert [r.id for r, _ in second.search(query_vector=np.ones(8).tolist(), k=1)] == ["e"]
    second.close()
    assert _recorded_dim(path) == "8"


def test_a_store_without_a_dimension_adopts_one_recorded_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "race.db"
    adopt = SQLiteMemoryStore._adopt_config
    other: list[SQLiteMemoryStore] = []
    started: list[bool] = []

    def interleaved(self: SQLiteMemoryStore, meta: dict[str, str], *args: Any, **kw: Any) -> None:
        adopt(self, meta, *args, **kw)
        if not started:
            started.append(True)
            other.append(SQLiteMemoryStore(path, vector_dim=8))

    monkeypatch.setattr(SQLiteMemoryStore, "_adopt_config", interleaved)
    first = SQLiteMemoryStore(path)
    monkeypatch.undo()
    assert first.vector_dim == 8
    with pytest.raises(ValueError, match="dimension"):
        first.add(["four"], "memory", embeddings=np.ones((1, 4), np.float32))
    first.close()
    other[0].close()
    assert _recorded_dim(path) == "8"
