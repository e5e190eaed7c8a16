"""``oam mcp`` takes the roles a file may hold (user, assistant, system, tool; the
library itself takes any non-blank role) and
answers a bad one with a tool error that writes nothing (not even the new thread), on
SQLite and PostgreSQL (in-process, with the SDK's own client)."""

from __future__ import annotations

import anyio
import pytest
from _mcp import error_text, structured
from _seed import EMBEDDER
from mcp import Client

from oam_core import OracleAgentMemory, StoreConnectionError, StoreError
from oam_core.service.mcp_server import build_server
from oam_core.service.scope import Scope


def test_roles_are_the_four_known_ones(db_url: str) -> None:
    memory = OracleAgentMemory.open(db_url, embedder=EMBEDDER, extract_memories=False)
    server = build_server(memory, Scope(user_id="alice"))

    async def scenario() -> None:
        async with Client(server) as client:
            added = structured(
                await client.call_tool(
                    "add_messages",
                    {
                        "messages": [
                            {"role": "system", "content": "Be brief."},
                            {"role": "user", "content": "Hi"},
                        ]
                    },
                )
            )
            stored = memory.store.list_thread_messages(added["thread_id"])
            assert [m.role for m in stored] == ["system", "user"]
            for role in ("   ", "bot"):
                bad = await client.call_tool(
                    "add_messages", {"messages": [{"role": role, "content": "x"}]}
                )
                assert "role" in error_text(bad), role
            threads = structured(await client.call_tool("list_threads", {}))
            assert [t["message_count"] for t in threads] == [2]

    try:
        anyio.run(scenario)
    finally:
        memory.close()


def test_a_store_error_is_a_tool_error_and_the_server_keeps_serving(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = OracleAgentMemory.open(db_url, embedder=EMBEDDER, extract_memories=False)
    server = build_server(memory, Scope(user_id="alice"))
    real = type(memory.store).search

    async def scenario() -> None:
        async with Client(server) as client:
            # issue 15: the class and a safe message, not the text (it names the database)
            for error, summary in (
                (
                    StoreConnectionError("cannot connect to the test database: connection lost"),
                    "StoreConnectionError: the server cannot reach its database",
                ),
                (
                    StoreError("database error on the test database: disk I/O error"),
                    "StoreError: the database failed",
                ),
            ):

                def fail(*args: object, error: Exception = error, **kwargs: object) -> None:
                    raise error

                monkeypatch.setattr(type(memory.store), "search", fail)
                failed = await client.call_tool("search_memories", {"query": "cat"})
                assert f"search_memories: {summary} (error " in error_text(failed)
                assert "test database" not in error_text(failed)
            monkeypatch.setattr(type(memory.store), "search", real)
            assert structured(await client.call_tool("search_memories", {"query": "cat"})) == []

    try:
        anyio.run(scenario)
    finally:
        memory.close()


def test_the_tool_schema_lists_the_roles_a_file_may_hold() -> None:
    from typing import get_args

    from oam_core.apis.thread import COMMON_ROLES
    from oam_core.service.mcp_server import MessageIn

    role = MessageIn.model_fields["role"].annotation
    assert get_args(role) == COMMON_ROLES
