"""``thread.add_messages(..., embeddings=...)``: the caller's vectors are a message's
only search rows, no context row, for the thread's first message and every later one,
sync and async (docs/concepts.md#the-client-and-threads, docs/retrieval.md)."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest

from oam_core.memory.client import OracleAgentMemory

DIM = 64  # the conformance stores' HashingEmbedder(64)


def unit(i: int) -> list[float]:
    v = np.zeros(DIM, dtype=np.float32)
    v[i] = 1.0
    return v.tolist()


def msg(content: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": content, **extra}


ANA = {"$message": {"name": "Ana"}}


def _thread(store: Any) -> Any:
    client = OracleAgentMemory(store=store, extract_memories=False)
    return client.create_thread(thread_id="t", user_id="u")


def _writes(thread: Any, is_async: bool) -> list[list[str]]:
    """Four calls: a first message and later ones, one at a time and in a batch,
    each message with its own unit vector; then one without vectors."""
    calls = [
        ([msg("hello there")], {"embeddings": [unit(0)]}),
        (
            [msg("I sold my car", timestamp="2024-04-01T08:00:00Z", metadata=ANA)],
            {"embeddings": [unit(1)]},
        ),
        ([msg("cycling now"), msg("it is fun")], {"embeddings": [unit(2), unit(3)]}),
        ([msg("what about trains?")], {}),
    ]
    if not is_async:
        return [thread.add_messages(m, **kw) for m, kw in calls]

    async def run() -> list[list[str]]:
        return [await thread.add_messages_async(m, **kw) for m, kw in calls]

    return anyio.run(run)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_caller_vectors_are_the_only_rows_of_first_and_later_messages(
    make_store: Any, search_rows: Any, is_async: bool
) -> None:
    store = make_store(search_strategy="VECTOR")
    thread = _thread(store)
    (hello,), (car,), (cycling, fun), (trains,) = _writes(thread, is_async)
    assert search_rows(store, "message", hello) == [("hello there", True)]
    assert search_rows(store, "message", car) == [("[1 April 2024] Ana: I sold my car", True)]
    assert search_rows(store, "message", cycling) == [("cycling now", True)]
    assert search_rows(store, "message", fun) == [("it is fun", True)]
    # Without vectors a later message still gets its own row and a context row.
    rows = search_rows(store, "message", trains)
    assert len(rows) == 2 and rows[0] == ("what about trains?", True)
    assert rows[1][0] is not None and rows[1][0].endswith("it is fun\nwhat about trains?")
    # Each message is found by its own vector, at distance 0.
    for i, message_id in enumerate([hello, car, cycling, fun]):
        (record, distance), *_ = store.search(query_vector=unit(i), k=1)
        assert record.id == message_id and distance == pytest.approx(0.0, abs=1e-6)
    assert [m.content for m in thread.get_messages()] == [
        "hello there",
        "I sold my car",
        "cycling now",
        "it is fun",
        "what about trains?",
    ]


def test_embeddings_none_is_the_same_as_leaving_it_out(make_store: Any, search_rows: Any) -> None:
    store = make_store()
    thread = _thread(store)
    thread.add_messages([msg("first words")])
    (second,) = thread.add_messages([msg("second words")], embeddings=None)
    rows = search_rows(store, "message", second)
    assert [t for t, _ in rows] == ["second words", "first words\nsecond words"]
