"""``oam mcp`` applies the library's rules for message roles (any non-blank role) and
answers a bad one with a tool error that writes nothing (not even the new thread), on
SQLite and PostgreSQL (in-process, with the SDK's own client)."""

from __future__ import annotations

import anyio
from _mcp import error_text, structured
from _seed import EMBEDDER
from mcp import Client

from oam_core import OracleAgentMemory
from oam_core.service.mcp_server import build_server
from oam_core.service.scope import Scope


def test_roles_follow_the_library_rule(db_url: str) -> None:
    memory = OracleAgentMemory.open(db_url, embedder=EMBEDDER, extract_memories=False)
    server = build_server(memory, Scope(user_id="alice"))

    async def scenario() -> None:
        async with Client(server) as client:
            added = structured(
                await client.call_tool(
                    "add_messages",
                    {
                        "messages": [
                            {"role": "developer", "content": "Be brief."},
                            {"role": "user", "content": "Hi"},
                        ]
                    },
                )
            )
            stored = memory.store.list_thread_messages(added["thread_id"])
            assert [m.role for m in stored] == ["developer", "user"]
            bad = await client.call_tool(
                "add_messages", {"messages": [{"role": "   ", "content": "x"}]}
            )
            assert "role must be a non-empty string" in error_text(bad)
            threads = structured(await client.call_tool("list_threads", {}))
            assert [t["message_count"] for t in threads] == [2]

    try:
        anyio.run(scenario)
    finally:
        memory.close()
