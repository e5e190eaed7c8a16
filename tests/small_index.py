"""A SQLite store whose vector index ranks through its ANN index from a few rows, for
the tests of the embedded index (tests/unit/test_vector*.py)."""

from __future__ import annotations

from pathlib import Path

from oam_core import SQLiteMemoryStore


def open_store(path: Path, dim: int = 8) -> SQLiteMemoryStore:
    """A store of ``dim``-dimensional vectors at ``path`` ranking through its ANN
    index from 8 rows, with 4 candidates ranked exactly per result."""
    store = SQLiteMemoryStore(str(path), vector_dim=dim)
    store._impl.index.ann_min_rows = 8
    store._impl.index.exact_max = 4
    return store
