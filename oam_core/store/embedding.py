"""``OracleMemoryStore.reindex``: embed the search rows stored without a vector
(docs/store.md#embedder-identity). Every embedder call itself, the identity that
records or checks the embedder and the dimension learned from a first vector are the
store runtime's (store/runtime.py).
"""

from __future__ import annotations

import builtins

from oam_core.store.planning import ChunkPlan
from oam_core.store.runtime import StoreRuntime

__all__ = ["reindex"]


def reindex(runtime: StoreRuntime, batch_size: int) -> int:
    """Embed the search rows stored without a vector, ``batch_size`` records per
    transaction (``OracleMemoryStore.reindex``); return how many records got vectors."""
    done = 0
    seen: set[tuple[str, str]] = set()
    backend = runtime.backend
    while todo := backend.unembedded(batch_size):
        if seen.issuperset(todo):
            break  # nothing left that this embedder can fill
        seen.update(todo)
        with runtime.writing() as tx:
            rows = [row for f, rid in todo if (row := tx.fetch(f, rid)) is not None]
            chunked = [(row, tx.chunk_texts(row.key)) for row in rows]
            plans: builtins.list[builtins.list[ChunkPlan]] = [
                [ChunkPlan(t, needs_embedding=bool(t)) for t in ts] for _, ts in chunked
            ]
            runtime.embed_plans([c for cs in plans for c in cs])
            for (row, _), chunks in zip(chunked, plans, strict=True):
                tx.replace_chunks(row, chunks)
            runtime.storing_rows(tx, [c for cs in plans for c in cs])
        done += len(rows)
    return done
