"""``oam mcp`` over stdio, the way a new user starts it (``--user`` only, ``--create``):
what the agent saves in a thread shows in that thread's context card, the server says
on stderr that it serves, and it reports oam's version (docs/service.md)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
from _mcp import server_params, structured
from mcp import Client
from mcp.client.stdio import stdio_client

import oam_core


def test_a_memory_saved_in_a_thread_is_in_its_context_card_without_agent(
    db_url: str, tmp_path: Path
) -> None:
    """issue 19: the thread got a generated agent id and the memory none, so the
    thread's card (memories of its user and agent) never showed it."""
    params = server_params(db_url, "--user", "alice", "--create", cwd=tmp_path)

    async def scenario() -> None:
        with tempfile.TemporaryFile("w+") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as c:
                assert c.server_info.name == "oam"
                assert c.server_info.version == oam_core.__version__
                added = structured(
                    await c.call_tool(
                        "add_messages",
                        {"messages": [{"role": "user", "content": "I have a cat."}]},
                    )
                )
                tid = added["thread_id"]
                saved = structured(
                    await c.call_tool(
                        "add_memory",
                        {"content": "Alice's cat is called Miso", "thread_id": tid},
                    )
                )
                threads = structured(await c.call_tool("list_threads", {}))
                assert saved["agent_id"] == threads[0]["agent_id"] is not None
                card = (await c.call_tool("get_context_card", {"thread_id": tid})).content[0]
                assert "Alice's cat is called Miso" in getattr(card, "text", "")
                hits = structured(await c.call_tool("search_memories", {"query": "cat Miso"}))
                assert hits[0]["id"] == saved["id"]
            errlog.seek(0)
            lines = errlog.read().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"oam {oam_core.__version__}: MCP server for user 'alice'")
        assert "on stdio" in lines[0]

    anyio.run(scenario)
