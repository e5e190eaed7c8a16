"""Concurrent ``add_messages`` on one PostgreSQL thread with extraction on (B58): the
message write of one call and the extraction pass of another take their locks in
one order (docs/postgres.md#concurrency-and-durability), so they never deadlock and
every message is stored.

The interleaving is injected: client B's extraction pass is held at its LLM call
until client A's message write has inserted its search rows (A then holds its
``chunk_stats`` row); A pauses there until B's pass is seen waiting on a lock A
holds, then goes on to move the thread's sequence mark (the thread row). The two
sessions are picked with the same ``chunk_stats`` row (backend pid modulo 16), as
happens among the connections of a pool.
"""

from __future__ import annotations

import threading
import time
import warnings
from contextlib import ExitStack
from typing import Any

import pytest
from _fixtures import ScriptedLlm, memories_reply

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.memory.client import OracleAgentMemory

psycopg = pytest.importorskip("psycopg")


def _same_stats_row(conninfo: str, stack: ExitStack) -> tuple[Any, Any]:
    """Two autocommit connections whose sessions write the same ``chunk_stats`` row
    (equal backend pid modulo ``STATS_SHARDS``); the others opened are closed."""
    from oam_core.store.postgres.schema import STATS_SHARDS

    seen: dict[int, Any] = {}
    spare: list[Any] = []
    for _ in range(STATS_SHARDS + 1):  # pigeonhole: two of 17 share a row
        conn = psycopg.connect(conninfo, autocommit=True)
        shard = conn.info.backend_pid % STATS_SHARDS
        if shard in seen:
            for other in spare:
                if other is not seen[shard]:
                    other.close()
            stack.callback(conn.close)
            stack.callback(seen[shard].close)
            return seen[shard], conn
        seen[shard] = conn
        spare.append(conn)
    raise AssertionError("no two sessions share a chunk_stats row")  # pragma: no cover


def _blocked_by(conninfo: str, waiter: int, holder: int, deadline_s: float = 30.0) -> bool:
    """Whether session ``waiter`` comes to wait on a lock that ``holder`` holds."""
    end = time.monotonic() + deadline_s
    with psycopg.connect(conninfo, autocommit=True) as admin:
        while time.monotonic() < end:
            row = admin.execute("SELECT %s = ANY(pg_blocking_pids(%s))", (holder, waiter))
            if row.fetchone() == (True,):
                return True
            time.sleep(0.01)
    return False


def test_a_message_write_and_an_extraction_pass_of_one_thread_do_not_deadlock(
    conninfo: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oam_core.store.postgres import PostgresMemoryStore, backend

    with ExitStack() as stack:
        conn_a, conn_b = _same_stats_row(conninfo, stack)
        store_a = PostgresMemoryStore(
            conn_a, embedder=HashingEmbedder(16), schema_policy="CREATE_IF_NECESSARY"
        )
        store_b = PostgresMemoryStore(conn_b, embedder=HashingEmbedder(16))
        b_at_llm, a_inserted = threading.Event(), threading.Event()

        def b_extracts(prompt: str, schema: Any) -> str:
            b_at_llm.set()
            assert a_inserted.wait(60)
            return memories_reply({"text": "Ana likes tea"})

        client_a = OracleAgentMemory(
            store=store_a, llm=ScriptedLlm(extraction=[memories_reply({"text": "Ana owns a cat"})])
        )
        client_b = OracleAgentMemory(store=store_b, llm=ScriptedLlm(extraction=[b_extracts]))
        client_a.create_thread(thread_id="t1", user_id="u1", agent_id="a1")
        thread_a = client_a.get_thread("t1")
        thread_b = client_b.get_thread("t1")

        real = backend.PgTx.insert_chunk_columns
        blocked: list[bool] = []

        def pausing(self: Any, *args: Any, **kwargs: Any) -> None:
            real(self, *args, **kwargs)
            if self.c is conn_a and b_at_llm.is_set() and not a_inserted.is_set():
                a_inserted.set()  # A holds the thread's lock and its chunk_stats row
                blocked.append(
                    _blocked_by(conninfo, conn_b.info.backend_pid, conn_a.info.backend_pid)
                )

        monkeypatch.setattr(backend.PgTx, "insert_chunk_columns", pausing)
        outcome: dict[str, Any] = {}

        def run_b() -> None:
            try:
                outcome["b"] = thread_b.add_messages([{"role": "user", "content": "I like tea"}])
            except Exception as exc:  # asserted below
                outcome["b"] = exc

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            worker = threading.Thread(target=run_b)
            worker.start()
            assert b_at_llm.wait(60)
            try:
                outcome["a"] = thread_a.add_messages([{"role": "user", "content": "I own a cat"}])
            except Exception as exc:  # asserted below
                outcome["a"] = exc
            worker.join(60)
        monkeypatch.undo()

        assert blocked == [True], "B's pass never waited on A's write"
        errors = {k: v for k, v in outcome.items() if isinstance(v, Exception)}
        assert errors == {}
        problems = [str(w.message) for w in caught if "deadlock" in str(w.message).lower()]
        assert problems == []
        messages = [m.content for m in thread_a.get_messages()]
        assert messages == ["I like tea", "I own a cat"]
        assert "Ana likes tea" in {r.content for r in store_a.list("fact")}
        store_a.close()
        store_b.close()
