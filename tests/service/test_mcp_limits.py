"""``oam mcp`` refuses content and queries over its size limits with a clear tool
error, before anything is embedded or written, and ``add_memory`` answers with the
id and a preview instead of echoing the content (docs/service.md)."""

from __future__ import annotations

import inspect
from pathlib import Path

import anyio
import pytest
from _mcp import error_text, mcp_session, structured
from _proc import free_port, start_cli, stop, wait_for_port
from _seed import EMBEDDER
from mcp import Client

from oam_core import OracleAgentMemory
from oam_core.errors import InvalidArgumentError
from oam_core.service import commands
from oam_core.service.mcp_server import (
    DEFAULT_MAX_CONTENT_CHARS,
    DEFAULT_MAX_QUERY_CHARS,
    Limits,
)


def test_default_limits_refuse_huge_content_and_queries(db_url: str, tmp_path: Path) -> None:
    """issue 16: a 50 MB add_memory took 61 s and 838 MB and came back whole; a
    3.5 MB query cost 30 s of CPU."""
    huge = "word " * 400_000  # 2,000,000 characters
    long = long_text()

    async def scenario() -> None:
        async with mcp_session(db_url, "--user", "alice", "--create", cwd=tmp_path) as c:
            refused = error_text(await c.call_tool("add_memory", {"content": huge}))
            assert refused.endswith(
                "content is 2,000,000 characters; this server takes at most 100,000 "
                "(oam mcp --max-content-chars); split it or shorten it"
            ), refused[:300]
            query = error_text(await c.call_tool("search_memories", {"query": huge[:5000]}))
            assert "query is 5,000 characters; this server takes at most 4,000 " in query
            assert "(oam mcp --max-query-chars)" in query
            half = "x" * 60_000
            both = [{"role": "user", "content": half}, {"role": "assistant", "content": half}]
            total = error_text(await c.call_tool("add_messages", {"messages": both}))
            assert "the messages' content is 120,000 characters" in total
            one = error_text(
                await c.call_tool(
                    "add_messages", {"messages": [{"role": "user", "content": huge[:100_001]}]}
                )
            )
            assert "messages[0].content is 100,001 characters" in one
            meta = error_text(
                await c.call_tool(
                    "add_memory", {"content": "x", "metadata": {"blob": huge[:200_000]}}
                )
            )
            assert "metadata is 200," in meta

            saved = structured(await c.call_tool("add_memory", {"content": long}))
            assert set(saved) == {
                "id",
                "record_type",
                "thread_id",
                "user_id",
                "agent_id",
                "preview",
                "content_chars",
            }
            assert saved["preview"] == long[:200] + "…" and saved["content_chars"] == len(long)
            assert saved["user_id"] == "alice" and saved["record_type"] == "memory"
            assert structured(await c.call_tool("list_threads", {})) == []
            [stored] = structured(await c.call_tool("list_memories", {}))
            assert stored["id"] == saved["id"] and stored["content"] == long

    anyio.run(scenario)
    with OracleAgentMemory.open(db_url, embedder=EMBEDDER, extract_memories=False) as memory:
        assert [len(r.content or "") for r in memory.store.list("memory")] == [len(long)]
        assert memory.list_threads() == []


def long_text() -> str:
    return "Alice's travel notes: " + "trains and window seats, " * 40


def test_the_limits_are_set_by_flags_and_named_in_the_tool_descriptions(
    db_url: str, tmp_path: Path
) -> None:
    async def scenario() -> None:
        args = ("--user", "alice", "--create", "--max-content-chars", "40")
        async with mcp_session(db_url, *args, "--max-query-chars", "12", cwd=tmp_path) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert "at most 12 characters" in (tools["search_memories"].description or "")
            assert "at most 40 characters" in (tools["add_memory"].description or "")
            assert "at most 40 characters" in (tools["add_messages"].description or "")
            text = "A" * 41
            refused = error_text(await c.call_tool("add_memory", {"content": text}))
            assert "content is 41 characters; this server takes at most 40" in refused
            assert structured(await c.call_tool("add_memory", {"content": text[:40]}))["id"]
            query = error_text(await c.call_tool("search_memories", {"query": "where is it?!"}))
            assert "query is 13 characters; this server takes at most 12" in query
            hits = structured(await c.call_tool("search_memories", {"query": "AAAA"}))
            assert len(hits) == 1

    anyio.run(scenario)


@pytest.mark.parametrize("value", [0, -1, True, 2.5])
def test_a_limit_must_be_a_positive_whole_number(value: object) -> None:
    with pytest.raises(InvalidArgumentError, match="max_query_chars must be a whole number"):
        Limits(max_query_chars=value)  # type: ignore[arg-type]


def test_the_cli_defaults_are_the_library_defaults() -> None:
    params = inspect.signature(commands.mcp).parameters
    assert params["max_content_chars"].default == DEFAULT_MAX_CONTENT_CHARS
    assert params["max_query_chars"].default == DEFAULT_MAX_QUERY_CHARS


def test_a_huge_query_over_http_is_refused(db_url: str, tmp_path: Path) -> None:
    """issue 16: over streamable HTTP a 3.5 MB query cost 30 s of CPU."""
    port = free_port()
    args = ["mcp", "--db", db_url, "--embedder", EMBEDDER, "--user", "alice", "--create"]
    process = start_cli([*args, "--http", "--port", str(port)], cwd=tmp_path)
    try:
        wait_for_port(port, process)

        async def scenario() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                query = "where " * 600_000  # 3.6 MB
                refused = error_text(await client.call_tool("search_memories", {"query": query}))
                assert "query is 3,600,000 characters; this server takes at most 4,000" in refused
                hits = await client.call_tool("search_memories", {"query": "where"})
                assert structured(hits) == []

        anyio.run(scenario)
    finally:
        stop(process)
