"""The public signatures stay those of Oracle's SDK reference (docs/concepts.md#names-and-imports), and
the thread options are defined once (``ThreadConfig``) for all the entry points that
take them (docs/concepts.md#the-client-and-threads; issue 16 item 2)."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any

import pytest

from oam_core import (
    NOT_SET,
    MemoryExtractionMode,
    OracleAgentMemory,
    OracleMemoryStore,
    OracleThread,
    SQLiteMemoryStore,
)
from oam_core.memory.threadconfig import OPTION_NAMES, ThreadConfig, ThreadOptionArgs

P = inspect.Parameter
PK, KW, VK = P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY, P.VAR_KEYWORD
EMPTY = P.empty

REFERENCE_THREAD_OPTIONS = [
    ("max_message_token_length", 15_000),
    ("message_shortening_input_token_limit", 30_000),
    ("memory_extraction_window", -1),
    ("context_summary_update_frequency", -1),
    ("memory_extraction_frequency", -1),
    ("memory_extraction_token_limit", 100_000),
    ("context_card_token_limit", 100_000),
    ("enable_context_summary", False),
]
"""The options in the order and with the defaults of Oracle's SDK client (docs/memory-pipeline.md#extraction-cadence)."""
REFERENCE_ORDER = [
    "memory_extraction_window",
    "context_summary_update_frequency",
    "memory_extraction_frequency",
    "memory_extraction_token_limit",
    "context_card_token_limit",
    "max_message_token_length",
    "message_shortening_input_token_limit",
    "enable_context_summary",
]
"""The options in the order ``OracleThread`` takes them (as in Oracle's SDK)."""
DEFAULTS = dict(REFERENCE_THREAD_OPTIONS)

CREATE_THREAD = [
    ("self", PK, EMPTY),
    ("thread_id", PK, NOT_SET),
    ("user_id", PK, NOT_SET),
    ("agent_id", PK, NOT_SET),
    ("metadata", PK, None),
    ("llm", PK, NOT_SET),
    ("extract_memories", PK, NOT_SET),
    *[(name, PK, NOT_SET) for name, _ in REFERENCE_THREAD_OPTIONS],
    ("memory_extraction_config", PK, NOT_SET),
    ("query_rewrite", KW, NOT_SET),  # an oam addition, keyword only
    ("kwargs", VK, EMPTY),
]
GET_THREAD = [
    ("self", PK, EMPTY),
    ("thread_id", PK, EMPTY),
    ("llm", PK, NOT_SET),
    ("extract_memories", PK, NOT_SET),
    *[(name, PK, NOT_SET) for name, _ in REFERENCE_THREAD_OPTIONS],
    ("memory_extraction_config", PK, NOT_SET),
    ("query_rewrite", KW, NOT_SET),  # an oam addition, keyword only
    ("kwargs", VK, EMPTY),
]
THREAD_INIT = [
    ("self", PK, EMPTY),
    ("store", PK, EMPTY),
    ("thread_id", PK, NOT_SET),
    ("user_id", PK, NOT_SET),
    ("agent_id", PK, NOT_SET),
    ("metadata", PK, None),
    ("persist_messages_in_config", PK, False),
    ("llm", PK, None),
    *[(name, PK, DEFAULTS[name]) for name in REFERENCE_ORDER],
    ("client", PK, None),
    ("extract_memories", KW, True),
    ("state", KW, None),
    ("extraction_mode", KW, MemoryExtractionMode.INLINE),
    ("stored", KW, False),
    ("llm_call_timeout", KW, 600.0),
    ("query_rewrite", KW, False),
]


def _shape(fn: Callable[..., Any]) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize(
    ("fn", "expected"),
    [
        (OracleAgentMemory.create_thread, CREATE_THREAD),
        (OracleAgentMemory.create_thread_async, CREATE_THREAD),
        (OracleAgentMemory.get_thread, GET_THREAD),
        (OracleAgentMemory.get_thread_async, GET_THREAD),
        (OracleThread.__init__, THREAD_INIT),
    ],
    ids=["create_thread", "create_thread_async", "get_thread", "get_thread_async", "thread"],
)
def test_thread_entry_points_have_the_reference_signatures(
    fn: Callable[..., Any], expected: list[tuple[str, Any, Any]]
) -> None:
    assert _shape(fn) == expected


def test_the_options_are_defined_once() -> None:
    fields = {f.name: f for f in dataclasses.fields(ThreadConfig)}
    assert list(fields) == [name for name, _ in REFERENCE_THREAD_OPTIONS] == list(OPTION_NAMES)
    assert {name: f.default for name, f in fields.items()} == DEFAULTS
    hints = typing.get_type_hints(ThreadOptionArgs)
    assert hints == {name: type(DEFAULTS[name]) for name in fields}
    assert ThreadOptionArgs.__required_keys__ == frozenset()


def test_an_option_given_by_position_lands_in_its_place(tmp_path: Any) -> None:
    store = SQLiteMemoryStore(str(tmp_path / "s.db"))
    try:
        thread = OracleThread(store, "t", "u", "a", None, False, None, 3, 4, 5)
        assert thread.config == ThreadConfig(
            memory_extraction_window=3,
            context_summary_update_frequency=4,
            memory_extraction_frequency=5,
        )
        client = OracleAgentMemory(store=store, extract_memories=False)
        created = client.create_thread("c", "u", "a", None, NOT_SET, NOT_SET, 111)
        assert created.config.max_message_token_length == 111
        reopened = client.get_thread("c", NOT_SET, NOT_SET, NOT_SET, 222)
        assert reopened.config.message_shortening_input_token_limit == 222
        assert reopened.config.max_message_token_length == 111  # persisted
        with pytest.raises(TypeError, match="bogus"):
            OracleThread(store, "t", bogus=1)
        with pytest.raises(TypeError, match="bogus"):
            client.create_thread(thread_id="d", bogus=1)
    finally:
        store.close()


PAIRS = {
    OracleAgentMemory: [
        "add_user",
        "add_agent",
        "delete_user",
        "delete_agent",
        "add_memory",
        "delete_memory",
        "search",
        "update_memory",
        "invalidate_memory",
        "get_memory_history",
        "create_thread",
        "get_thread",
        "delete_thread",
        "list_threads",
        "get_thread_row",
        "write_thread",
    ],
    OracleThread: [
        "add_messages",
        "add_memory",
        "get_messages",
        "delete_message",
        "delete_memory",
        "get_summary",
        "get_context_card",
    ],
}


@pytest.mark.parametrize(
    ("owner", "name"), [(owner, name) for owner, names in PAIRS.items() for name in names]
)
def test_every_sync_method_and_its_async_twin_share_one_signature(owner: type, name: str) -> None:
    sync, twin = getattr(owner, name), getattr(owner, name + "_async")
    assert inspect.iscoroutinefunction(twin) and not inspect.iscoroutinefunction(sync)
    assert _shape(sync) == _shape(twin)
    assert sync.__name__ == name and twin.__name__ == name + "_async"
    assert sync.__doc__ and name in twin.__doc__


STORE_API = {
    # Oracle's SDK (docs/store.md)
    "add",
    "add_batches",
    "update",
    "get",
    "list",
    "list_thread_messages",
    "search",
    "delete",
    "delete_thread",
    "add_user",
    "add_agent",
    # oam additions (docs/store.md)
    "upsert",
    "upsert_batches",
    "delete_records",
    "purge_expired",
    "count_thread_messages",
    "reindex",
    "close",
}
STORE_PROPERTIES = {"chunk_chars", "embedder_identity"}
STORE_ADDITIONS = {"searching_with", "fusion"}
"""oam additions: a per-call search strategy (docs/store.md#search-strategies), and
how HYBRID fuses its lists (docs/retrieval.md#one-fusion-for-every-back-end)."""
STORE_ATTRIBUTES = {"embedder", "vector_dim", "memory_retention_config"}
"""Constructor arguments a store exposes as attributes, as it always did; properties
over the store's runtime (store/runtime.py), so they show on the class."""
TRANSFER_API = {
    "dump_rows",
    "dump_counts",
    "dump_ids",
    "stored_ids",
    "restore_rows",
    "restore_columns",
    "clock_now",
}
"""oam additions that export/import/copy (docs/transfer.md) read and write through:
sync only, like the functions that use them."""


def test_the_public_store_class_holds_only_the_public_store_api() -> None:
    public = {n for n in dir(OracleMemoryStore) if not n.startswith("_")}
    twins = {n + "_async" for n in STORE_API - {"close"}}
    assert public == (
        STORE_API | twins | STORE_PROPERTIES | STORE_ATTRIBUTES | STORE_ADDITIONS | TRANSFER_API
    )
    for name in STORE_API - {"close"}:
        assert _shape(getattr(OracleMemoryStore, name)) == _shape(
            getattr(OracleMemoryStore, name + "_async")
        ), name


def test_a_thread_reaches_its_client_through_the_thread_client_protocol(tmp_path: Any) -> None:
    """Issue 16 item 5: ``OracleThread`` needs of its client only ``closed`` and
    ``extraction_worker()`` (``ThreadClient``), nothing private."""
    from oam_core.memory.thread import ThreadClient
    from oam_core.memory.worker import ExtractionWorker

    store = SQLiteMemoryStore(str(tmp_path / "c.db"))
    try:
        client = OracleAgentMemory(store=store, extract_memories=False)
        assert isinstance(client, ThreadClient)
        thread = client.create_thread(thread_id="t1")
        assert thread._worker() is client.extraction_worker()

        class Closed:
            closed = True

            def extraction_worker(self) -> ExtractionWorker:
                raise AssertionError("a closed client is not asked for its worker")

        handle = OracleThread(store, "t2", client=Closed(), extract_memories=False)
        with pytest.raises(ValueError, match="is closed"):
            handle.add_messages([{"role": "user", "content": "hi"}])
        assert client.get_thread_row("t2") is None
    finally:
        store.close()
