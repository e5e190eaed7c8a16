"""The LlamaIndex chat stores' delete paths leave no deleted text inside the context
rows of the remaining messages (docs/store.md#search-rows-that-quote-other-messages)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index_oam import OAMChatStore, OAMDBChatStore

from oam_core import OracleAgentMemory

SECRET = "zebracorn"


def _texts_in_file(path: Path) -> list[str]:
    """Every text value of every ordinary table of the SQLite file, read directly."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [
            n
            for (n,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE '%chunks_fts%'"
            )
        ]
        return [
            v
            for t in tables
            for row in conn.execute(f'SELECT * FROM "{t}"')
            for v in row
            if isinstance(v, str)
        ]
    finally:
        conn.close()


def _chat(first: str) -> list[ChatMessage]:
    return [
        ChatMessage(role="user", content=first),
        ChatMessage(role="assistant", content="noted carefully"),
        ChatMessage(role="user", content="thanks friend"),
    ]


def _sync(cs: Any, call: Callable[[Any], Any]) -> Any:
    return call(cs)


def _async(cs: Any, call: Callable[[Any], Any]) -> Any:
    return asyncio.run(call(cs))


@pytest.mark.parametrize(
    ("make", "run", "delete", "first"),
    [
        (OAMChatStore, _sync, lambda cs: cs.delete_message("s", 0), True),
        (OAMChatStore, _sync, lambda cs: cs.delete_messages("s"), True),
        (OAMDBChatStore, _async, lambda cs: cs.delete_message("s", 0), True),
        (OAMDBChatStore, _async, lambda cs: cs.delete_oldest_messages("s", 1), True),
        (OAMDBChatStore, _async, lambda cs: cs.delete_messages("s"), True),
        (OAMChatStore, _sync, lambda cs: cs.delete_last_message("s"), False),
    ],
    ids=[
        "delete_message",
        "delete_messages",
        "async-delete_message",
        "delete_oldest",
        "async-delete_messages",
        "delete_last_message",
    ],
)
def test_deleted_text_is_not_found_nor_stored(
    memory: OracleAgentMemory, db_path: Path, make: Any, run: Any, delete: Any, first: bool
) -> None:
    cs = make(memory)
    chat = _chat(f"my {SECRET} code") if first else _chat("hello there")
    if not first:
        chat[-1] = ChatMessage(role="user", content=f"thanks {SECRET}")
    if make is OAMChatStore:
        cs.set_messages("s", chat)
    else:
        asyncio.run(cs.add_messages("s", chat))
    store = memory.store
    assert len(store.search(SECRET, 10)) >= 1
    assert [t for t in _texts_in_file(db_path) if SECRET in t]
    run(cs, delete)
    assert not [t for t in _texts_in_file(db_path) if SECRET in t]
    for r, _ in store.search(SECRET, 10):
        assert SECRET not in (r.content or "")
    kept = store.list("message", limit=None, thread_id="s")
    for record in kept:
        assert [r.id for r, _ in store.search(record.content, 1)] == [record.id]
