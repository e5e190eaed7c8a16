"""A SQLite store whose vector index ranks through its ANN index from a few rows, for
the tests of the embedded index (tests/unit/test_vector*.py)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import numpy as np

from oam_core import SQLiteMemoryStore


def open_store(path: Path, dim: int = 8) -> SQLiteMemoryStore:
    """A store of ``dim``-dimensional vectors at ``path`` ranking through its ANN
    index from 8 rows, with 4 candidates ranked exactly per result."""
    store = SQLiteMemoryStore(str(path), vector_dim=dim)
    store._impl.index.ann_min_rows = 8
    store._impl.index.exact_max = 4
    return store


def brute_force(path: Path, q: np.ndarray, k: int) -> list[str]:
    """Top-k record ids by exact cosine over the unexpired vector chunks SQLite holds."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT r.id, c.embedding FROM chunks c JOIN records r ON r.pk = c.record_pk "
            "WHERE c.has_vector = 1 AND (c.expires_at IS NULL OR c.expires_at > ?)",
            (time.time(),),
        ).fetchall()
    ids = [r[0] for r in rows]
    mat = np.stack([np.frombuffer(r[1], dtype="<f4") for r in rows])
    sims = mat @ q / np.linalg.norm(mat, axis=1) / np.linalg.norm(q)
    return [ids[i] for i in np.argsort(-sims, kind="stable")[:k]]


def ids(store: SQLiteMemoryStore, q: np.ndarray, k: int) -> list[str]:
    """The ids of ``store``'s top-k for the query vector ``q``."""
    return [r.id for r, _ in store.search(query_vector=list(q), k=k)]
