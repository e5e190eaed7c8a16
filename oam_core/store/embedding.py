"""Everything a store asks of its embedder: embedding planned search rows and queries,
the identity that records or checks the embedder, the vector dimension learned
from a first explicit vector, and ``reindex`` (docs/store.md#embedder-identity).
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from oam_core.checks import lengthen_short_rows
from oam_core.store.backend import Tx
from oam_core.store.identity import META_KEY as IDENTITY_META_KEY
from oam_core.store.planning import ChunkPlan
from oam_core.telemetry import traced_embed

if TYPE_CHECKING:
    from oam_core.store.base import OracleMemoryStore

__all__ = ["embed_plans", "embed_texts", "learn_dim", "reindex", "write_identity"]


def embed_plans(store: OracleMemoryStore, plans: Iterable[ChunkPlan]) -> None:
    """Give every chunk plan that needs one a vector from the store's embedder (one
    call for all of them); a store without an embedder leaves them as they are.

    Raises:
        ValueError: when the embedder returns another shape than ``(n, dim)``.
    """
    todo = [c for c in plans if c.needs_embedding and c.text]
    if not todo or store.embedder is None:
        return
    vectors = embed_texts(store, [c.text or "" for c in todo], is_query=False)
    if vectors.shape != (len(todo), store.vector_dim):
        raise ValueError(
            f"embedder returned shape {vectors.shape}, expected ({len(todo)}, {store.vector_dim})"
        )
    for c, v in zip(todo, vectors, strict=True):
        c.vector = v
        c.needs_embedding = False


def embed_texts(store: OracleMemoryStore, texts: Sequence[str], *, is_query: bool) -> np.ndarray:
    """Every embedder call of the store: float32 array of shape ``(len(texts), dim)``,
    rows of tiny components lengthened (``checks.lengthen_short_rows``).

    The embedder sees only ``texts`` (what the caller wrote or searched) and, once per
    store object when a fingerprint is recorded, the recorded probe: a text the caller
    wrote to this store, sent with a write's texts (not at all when the write holds
    it) or, before a search, on its own as a document (docs/store.md#embedder-identity).
    A first write records the identity from its own texts.

    Raises:
        EmbedderMismatchError: (a ValueError) when the embedder's embedding of the
            recorded probe differs from the recorded fingerprint.
    """
    embedder = store.embedder
    assert embedder is not None
    check = store._embedder_check
    step = check.step(texts, writing=not is_query)
    if step is None:
        vectors = np.asarray(traced_embed(embedder, texts, is_query=is_query), dtype=np.float32)
    elif step.verify is not None:
        probe = step.verify
        if is_query:  # the fingerprint is a document embedding: its own call
            own = np.asarray(traced_embed(embedder, [probe]), dtype=np.float32)[0]
            vectors = np.asarray(traced_embed(embedder, texts, is_query=True), dtype=np.float32)
        elif probe in texts:
            vectors = np.asarray(traced_embed(embedder, texts), dtype=np.float32)
            own = vectors[list(texts).index(probe)]
        else:
            both = np.asarray(traced_embed(embedder, [*texts, probe]), dtype=np.float32)
            vectors, own = both[:-1], both[-1]
        check.verify(embedder, own)
    else:
        vectors = np.asarray(traced_embed(embedder, texts, is_query=is_query), dtype=np.float32)
        if step.record is not None:
            check.record(embedder, texts[step.record], vectors[step.record])
        elif step.bare:
            check.record(embedder, None, None)
    if vectors.ndim == 2:
        vectors = lengthen_short_rows(vectors)
    return vectors


def write_identity(store: OracleMemoryStore, tx: Tx) -> None:
    """Record the embedder's identity in the write transaction that stores the
    vectors it was taken from (see ``embed_texts``)."""
    pending = store._embedder_check.pending()
    if pending is not None:
        tx.write_meta({IDENTITY_META_KEY: pending})


def learn_dim(store: OracleMemoryStore, plans: Iterable[ChunkPlan], dim: int | None = None) -> None:
    """Adopt the dimension of the first vector written by a store that has none yet:
    ``dim`` (that of vectors given as columns, ``planning.BulkPlan``) or that of the
    first chunk plan holding a vector."""
    if store.vector_dim is None:
        if dim is not None:
            store._remember_vector_dim(dim)
            return
        for c in plans:
            if c.vector is not None:
                store._remember_vector_dim(int(c.vector.shape[0]))
                return


def reindex(store: OracleMemoryStore, batch_size: int) -> int:
    """Embed the search rows stored without a vector, ``batch_size`` records per
    transaction (``OracleMemoryStore.reindex``); return how many records got vectors."""
    done = 0
    seen: set[tuple[str, str]] = set()
    backend = store._backend
    while todo := backend.unembedded(batch_size):
        if seen.issuperset(todo):
            break  # nothing left that this embedder can fill
        seen.update(todo)
        with store._writing() as tx:
            rows = [row for f, rid in todo if (row := tx.fetch(f, rid)) is not None]
            chunked = [(row, tx.chunk_texts(row.key)) for row in rows]
            plans: builtins.list[builtins.list[ChunkPlan]] = [
                [ChunkPlan(t, needs_embedding=bool(t)) for t in ts] for _, ts in chunked
            ]
            store._embed_plans([c for cs in plans for c in cs])
            for (row, _), chunks in zip(chunked, plans, strict=True):
                tx.replace_chunks(row, chunks)
            learn_dim(store, [c for cs in plans for c in cs])
            write_identity(store, tx)
        store._embedder_check.recorded()
        done += len(rows)
    return done
