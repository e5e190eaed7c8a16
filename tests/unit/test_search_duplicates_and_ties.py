"""Search over stored duplicates and tied scores, against brute force (review rev4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from oam_core import SQLiteMemoryStore


def test_ann_recall_with_duplicate_vectors(tmp_path: Path) -> None:
    """30,000 rows (IVF index built), each vector stored 20 times (the same text
    embedded again: repeated messages). Calibration uses stored vectors as queries,
    whose 10 nearest others are their own copies, so it passes at 8 probes; fresh
    queries then miss their true nearest group. Recall@10 must stay at the documented
    0.99 target (docs/sqlite.md#calibration)."""
    n, dim, copies = 30_000, 32, 20
    rng = np.random.default_rng(0)
    base = rng.standard_normal((n // copies, dim)).astype(np.float32)
    x = np.repeat(base, copies, axis=0)
    store = SQLiteMemoryStore(tmp_path / "d.db", vector_dim=dim, search_strategy="VECTOR")
    for i in range(0, n, 5000):
        store.add(
            [f"t{j}" for j in range(i, i + 5000)],
            "memory",
            embeddings=[v.tolist() for v in x[i : i + 5000]],
            record_ids=[f"r{j}" for j in range(i, i + 5000)],
        )
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    hits = 0
    queries = 40
    for _ in range(queries):
        q = rng.standard_normal(dim).astype(np.float32)
        sims = unit @ (q / np.linalg.norm(q))
        kth = np.sort(sims)[-10] - 1e-6
        got = [int(r.id[1:]) for r, _ in store.search(query_vector=q.tolist(), k=10)]
        hits += sum(bool(sims[g] >= kth) for g in got)
    assert hits / (10 * queries) >= 0.99


@pytest.mark.xfail(
    strict=True,
    reason="known: back ends cut ties at k by insertion order, the final sort orders "
    "them by (record type, id); the fix makes both use one tie-break",
)
def test_keyword_ties_top_k_is_prefix_of_larger_k(tmp_path: Path) -> None:
    """Tied records: the back end cuts ties at k by record pk (insertion order), the
    final sort orders them by (record_type, id), so search(k=1) returns a record
    that is not first in search(k=3)."""
    store = SQLiteMemoryStore(tmp_path / "t.db", search_strategy="KEYWORD")
    store.add(["apple pie", "apple pie", "apple pie"], "memory", record_ids=["b", "a", "c"])
    top1 = [r.id for r, _ in store.search("apple", 1)]
    top3 = [r.id for r, _ in store.search("apple", 3)]
    assert top1 == top3[:1], (top1, top3)
