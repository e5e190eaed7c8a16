"""Process entry points for the PostgreSQL concurrency tests (spawned processes import
this module, so it holds no pytest fixtures)."""

from __future__ import annotations

import time
from typing import Any

from oam_core.embedders.hashing import HashingEmbedder


def open_store(conninfo: str) -> Any:
    from oam_core.store.postgres import PostgresMemoryStore

    return PostgresMemoryStore(conninfo, embedder=HashingEmbedder(16))


def writer(conninfo: str, w: int, n: int, thread_id: str, start: Any) -> None:
    """Add ``n`` messages of writer ``w`` to ``thread_id``, one store call each, the
    odd ones in a batch of two (metadata ``{"w": w, "i": i}``)."""
    store = open_store(conninfo)
    start.wait(60)
    i = 0
    while i < n:
        size = 2 if (i % 2 and i + 1 < n) else 1
        store.add(
            [f"writer {w} message {j}" for j in range(i, i + size)],
            "message",
            record_ids=[f"w{w}-{j}" for j in range(i, i + size)],
            thread_ids=thread_id,
            roles="user",
            metadata=[{"w": w, "i": j} for j in range(i, i + size)],
        )
        i += size
    store.close()


def adder_until(conninfo: str, w: int, thread_id: str, seconds: float, start: Any) -> None:
    """Add messages and thread-scoped memories to ``thread_id`` for ``seconds``."""
    store = open_store(conninfo)
    start.wait(60)
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        store.add(
            [f"racer {w} message {i}", f"racer {w} reply {i}"],
            "message",
            thread_ids=thread_id,
            roles=["user", "assistant"],
            metadata={"w": w},
        )
        store.add([f"racer {w} memory {i}"], "memory", thread_ids=thread_id)
        i += 1
    store.close()


def deleter_until(conninfo: str, thread_id: str, seconds: float, start: Any) -> None:
    """Delete ``thread_id`` (cascade) over and over for ``seconds``."""
    store = open_store(conninfo)
    start.wait(60)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        store.delete_thread(thread_id)
        time.sleep(0.01)
    store.close()


def stalled_writer(conninfo: str, n: int, inside: Any) -> None:
    """Start adding ``n`` messages in one call, then stall inside the transaction after
    the record rows are written (before the search rows and the commit), signalling
    ``inside``; the parent kills the process there."""
    from oam_core.store.postgres import backend

    original = backend.PgTx.insert_chunks

    def stall(self: Any, rows: Any, batch_size: int) -> None:
        original(self, rows[: len(rows) // 2], batch_size)
        inside.set()
        time.sleep(600)

    backend.PgTx.insert_chunks = stall  # type: ignore[method-assign]
    store = open_store(conninfo)
    store.add(
        [f"doomed {i}" for i in range(n)],
        "message",
        record_ids=[f"doomed-{i}" for i in range(n)],
        thread_ids="killed",
        roles="user",
        batch_size=50,
    )
