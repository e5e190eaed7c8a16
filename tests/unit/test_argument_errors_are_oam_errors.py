"""Bad arguments of the store, the client and threads raise ``InvalidArgumentError``
(or another ``OAMError`` that is also a ``ValueError``), so ``except OAMError``
catches them, and the message names the argument and the value (docs/errors.md).

Each call runs against a real SQLite file; nothing it refused may be written."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import ClientClosedError, InvalidArgumentError, OAMError


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteMemoryStore]:
    s = SQLiteMemoryStore(str(tmp_path / "memory.db"), embedder=HashingEmbedder(16))
    s.add(["a stored memory"], record_type="memory", user_ids="u1")
    yield s
    s.close()


@pytest.fixture
def client(store: SQLiteMemoryStore) -> Iterator[OracleAgentMemory]:
    c = OracleAgentMemory(store=store, extract_memories=False)
    yield c
    c.close()


def _caught(call: Callable[[], Any]) -> OAMError:
    """Run ``call`` and return what ``except OAMError`` caught (fails if nothing)."""
    try:
        call()
    except OAMError as exc:
        assert isinstance(exc, ValueError)  # code written for the reference still catches it
        return exc
    pytest.fail("no OAMError raised")


STORE_CALLS: list[tuple[str, Callable[[SQLiteMemoryStore], Any], str]] = [
    ("get record_id", lambda s: s.get("memory", 5), "record_id must be a str, got 5"),  # type: ignore[arg-type]
    (
        "list limit",
        lambda s: s.list("memory", limit=-1),
        "limit must be a non-negative int or None, got -1",
    ),
    ("search k", lambda s: s.search("x", k=0), "k must be an int >= 1, got 0"),
    ("search k bool", lambda s: s.search("x", k=True), "k must be an int >= 1, got True"),
    (
        "search record_types",
        lambda s: s.search("x", record_types="memory"),
        "record_types must be a set of type names, got the bare string 'memory'",
    ),
    (
        "search user_id",
        lambda s: s.search("x", user_id=7, exact_user_match=True),  # type: ignore[arg-type]
        "user_id must be a str, None or omitted, got 7",
    ),
    (
        "search user_id without exact match",
        lambda s: s.search("x", user_id=7),  # type: ignore[arg-type]
        "user_id must be a str, None or omitted, got 7",
    ),
    (
        "search exact_user_match",
        lambda s: s.search("x", user_id="u1", exact_user_match="yes"),  # type: ignore[arg-type]
        "exact_user_match must be a bool, got 'yes'",
    ),
    (
        "search exact_thread_match",
        lambda s: s.search("x", exact_thread_match=1),  # type: ignore[arg-type]
        "exact_thread_match must be a bool, got 1",
    ),
    (
        "delete cascade",
        lambda s: s.delete("memory", s.list("memory")[0].id, cascade="yes"),  # type: ignore[arg-type]
        "cascade must be a bool, got 'yes'",
    ),
    ("get record_type", lambda s: s.get("memo", "a"), "record_type must be one of"),
    (
        "delete a list of ids (the value shown cut, with its type)",
        lambda s: s.delete("memory", [f"r{i}" for i in range(100_000)]),  # type: ignore[arg-type]
        "record_id must be a non-empty string, got list ['r0', 'r1', 'r2', 'r3', 'r4', ...]",
    ),
    (
        "add thread_ids",
        lambda s: s.add(["t"], record_type="memory", thread_ids=""),
        "thread_ids[0] must be a non-empty string or None, got ''",
    ),
    (
        "add contents NUL",
        lambda s: s.add(["a\x00b"], record_type="memory"),
        "contents[0] contains a NUL character (U+0000) at index 1",
    ),
    (
        "add embeddings NaN",
        lambda s: s.add(["t"], record_type="memory", embeddings=[[float("nan")] * 16]),
        "embeddings[0] contains NaN or infinite values (as float32)",
    ),
    (
        "search metadata_filter NUL",
        lambda s: s.search("x", metadata_filter={"a": "b\x00"}),
        "metadata_filter['a'] contains a NUL character (U+0000) at index 1",
    ),
]


@pytest.mark.parametrize(("what", "call", "message"), STORE_CALLS, ids=[c[0] for c in STORE_CALLS])
def test_store_argument_errors_are_oam_errors(
    store: SQLiteMemoryStore, what: str, call: Callable[[SQLiteMemoryStore], Any], message: str
) -> None:
    before = [r.id for r in store.list("memory")]
    exc = _caught(lambda: call(store))
    assert isinstance(exc, InvalidArgumentError)
    assert str(exc).startswith(message), str(exc)
    assert [r.id for r in store.list("memory")] == before  # nothing written


CLIENT_CALLS: list[tuple[str, Callable[[OracleAgentMemory], Any], str]] = [
    (
        "create_thread thread_id",
        lambda c: c.create_thread(thread_id="  "),
        "thread_id must be a non-empty str, got '  '",
    ),
    (
        "create_thread option",
        lambda c: c.create_thread(memory_extraction_window=0),
        "memory_extraction_window must be -1 or a positive int, got 0",
    ),
    (
        "create_thread option type",
        lambda c: c.create_thread(max_message_token_length="10"),  # type: ignore[arg-type]
        "max_message_token_length must be an int, got '10'",
    ),
    (
        "get_thread thread_id",
        lambda c: c.get_thread(None),  # type: ignore[arg-type]
        "thread_id must be a non-empty str",
    ),
    (
        "delete_user cascade",
        lambda c: c.delete_user("u1", cascade="yes"),  # type: ignore[arg-type]
        "cascade must be a bool, got 'yes'",
    ),
    (
        "wait timeout",
        lambda c: c.wait_for_memory_extraction(timeout=-1),
        "timeout must be a finite number of seconds >= 0, or None, got -1",
    ),
    (
        "search user_id",
        lambda c: c.search("x", user_id=""),
        "user_id must be a non-empty str or None, got ''",
    ),
]


@pytest.mark.parametrize(
    ("what", "call", "message"), CLIENT_CALLS, ids=[c[0] for c in CLIENT_CALLS]
)
def test_client_argument_errors_are_oam_errors(
    client: OracleAgentMemory,
    what: str,
    call: Callable[[OracleAgentMemory], Any],
    message: str,
) -> None:
    threads = client.list_threads()
    exc = _caught(lambda: call(client))
    assert isinstance(exc, InvalidArgumentError)
    assert str(exc).startswith(message), str(exc)
    assert client.list_threads() == threads  # no thread was created


THREAD_CALLS: list[tuple[str, Callable[[Any], Any], str]] = [
    (
        "get_context_card count",
        lambda t: t.get_context_card(max_recent_messages=-1),
        "max_recent_messages must be an int >= 0, got -1",
    ),
    (
        "get_summary except_last",
        lambda t: t.get_summary(except_last=1.5),
        "except_last must be an int >= 0, got 1.5",
    ),
    (
        "add_messages store_kwargs",
        lambda t: t.add_messages([{"role": "user", "content": "hi"}], record_ids=["m"]),
        "add_messages() sets ['record_ids'] itself; they cannot be passed as store_kwargs",
    ),
    (
        "get_messages start",
        lambda t: t.get_messages(start="0"),
        "start must be an int, got '0'",
    ),
    (
        "delete_message id",
        lambda t: t.delete_message(""),
        "message_id must be a non-empty str, got ''",
    ),
]


@pytest.mark.parametrize(
    ("what", "call", "message"), THREAD_CALLS, ids=[c[0] for c in THREAD_CALLS]
)
def test_thread_argument_errors_are_oam_errors(
    client: OracleAgentMemory, what: str, call: Callable[[Any], Any], message: str
) -> None:
    thread = client.create_thread(thread_id="t1", user_id="u1")
    thread.add_messages([{"role": "user", "content": "hello"}])
    exc = _caught(lambda: call(thread))
    assert isinstance(exc, InvalidArgumentError)
    assert str(exc).startswith(message), str(exc)
    assert [m.content for m in thread.get_messages()] == ["hello"]


def test_closed_client_is_an_oam_error(store: SQLiteMemoryStore) -> None:
    client = OracleAgentMemory(store=store, extract_memories=False)
    client.close()
    exc = _caught(lambda: client.create_thread(thread_id="t2"))
    assert re.search("this OracleAgentMemory is closed", str(exc))


CLOSED_CALLS: list[tuple[str, Callable[[OracleAgentMemory, str], Any]]] = [
    ("add_memory", lambda c, m: c.add_memory("again", user_id="u")),
    ("add_user", lambda c, m: c.add_user("u2", "likes tea")),
    ("delete_memory", lambda c, m: c.delete_memory(m)),
    ("delete_user", lambda c, m: c.delete_user("u")),
    ("delete_thread", lambda c, m: c.delete_thread("t")),
    ("list_threads", lambda c, m: c.list_threads()),
    ("search", lambda c, m: c.search("again")),
    ("update_memory", lambda c, m: c.update_memory(m, "changed")),
    ("invalidate_memory", lambda c, m: c.invalidate_memory(m)),
    ("get_memory_history", lambda c, m: c.get_memory_history(m)),
    ("update_memory_async", lambda c, m: asyncio.run(c.update_memory_async(m, "changed"))),
]


@pytest.mark.parametrize(("what", "call"), CLOSED_CALLS, ids=[c[0] for c in CLOSED_CALLS])
def test_every_call_on_a_closed_client_raises_client_closed_error(
    tmp_path: Path, what: str, call: Callable[[OracleAgentMemory, str], Any]
) -> None:
    client = OracleAgentMemory.open(
        f"sqlite:///{tmp_path / 'm.db'}", embedder="hashing", extract_memories=False
    )
    memory_id = client.add_memory("Ana lives in Lisbon", user_id="u")
    client.close()
    with pytest.raises(ClientClosedError, match="this OracleAgentMemory is closed"):
        call(client, memory_id)
