"""The version tools of ``oam mcp`` driven by the MCP SDK's own client, on SQLite and
PostgreSQL (docs/versions.md, docs/service.md#tools): ``update_memory``,
``invalidate_memory`` and ``memory_history``, scoped to the server's user; search
hits carry their validity window, ``include_superseded`` returns every version, and
a search asks the store for k current memories (no over-fetch)."""

from __future__ import annotations

from pathlib import Path

import anyio
from _mcp import error_text, mcp_session, structured
from _seed import EMBEDDER

from oam_core import OracleAgentMemory


def run(scenario):  # type: ignore[no-untyped-def]
    anyio.run(scenario)


def _open(url: str) -> OracleAgentMemory:
    return OracleAgentMemory.open(url, embedder=EMBEDDER, extract_memories=False)


def test_update_invalidate_and_history_over_mcp(db_url: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with mcp_session(
            db_url, "--user", "alice", "--agent", "helper", "--create", cwd=tmp_path
        ) as client:
            saved = structured(
                await client.call_tool(
                    "add_memory",
                    {"content": "Alice lives in Lisbon", "record_type": "fact"},
                )
            )
            old = saved["id"]
            updated = structured(
                await client.call_tool(
                    "update_memory",
                    {"memory_id": old, "content": "Alice lives in Berlin", "reason": "moved"},
                )
            )
            new = updated["id"]
            assert updated == {"id": new, "replaces": old} and new != old

            hits = structured(await client.call_tool("search_memories", {"query": "Alice lives"}))
            assert [h["id"] for h in hits] == [new]
            assert hits[0]["valid_until"] is None and "valid_from" in hits[0]
            every = structured(
                await client.call_tool(
                    "search_memories", {"query": "Alice lives", "include_superseded": True}
                )
            )
            by_id = {h["id"]: h for h in every}
            assert set(by_id) == {old, new}
            assert by_id[old]["valid_until"] is not None
            assert by_id[old]["superseded_by"] == new and by_id[old]["reason"] == "moved"

            history = structured(await client.call_tool("memory_history", {"memory_id": new}))
            assert [h["id"] for h in history] == [old, new]
            assert [h["content"] for h in history] == [
                "Alice lives in Lisbon",
                "Alice lives in Berlin",
            ]
            assert history[1]["record_type"] == "fact" and history[1]["user_id"] == "alice"

            stale = await client.call_tool("update_memory", {"memory_id": old, "content": "x y z"})
            assert "memory_id" in error_text(stale)

            ended = structured(
                await client.call_tool("invalidate_memory", {"memory_id": new, "reason": "left"})
            )
            assert ended == {"invalidated": True}
            again = structured(await client.call_tool("invalidate_memory", {"memory_id": new}))
            assert again == {"invalidated": False}
            assert (
                structured(await client.call_tool("search_memories", {"query": "Alice lives"}))
                == []
            )
            unknown = await client.call_tool("memory_history", {"memory_id": "no-such-id"})
            assert "in this server's scope" in error_text(unknown)

    run(scenario)
    with _open(db_url) as memory:
        facts = memory.store.list("fact")
        assert len(facts) == 2 and all(f.valid_until is not None for f in facts)


def test_version_tools_are_scoped_to_the_server_user(db_url: str, tmp_path: Path) -> None:
    with OracleAgentMemory.open(
        db_url, embedder=EMBEDDER, extract_memories=False, schema_policy="CREATE_IF_NECESSARY"
    ) as memory:
        bobs = memory.add_memory("Bob has a dog called Rex", user_id="bob", agent_id="helper")

    async def scenario() -> None:
        async with mcp_session(db_url, "--user", "alice", cwd=tmp_path) as client:
            for tool, args in (
                ("update_memory", {"memory_id": bobs, "content": "Bob has no dog"}),
                ("invalidate_memory", {"memory_id": bobs}),
                ("memory_history", {"memory_id": bobs}),
            ):
                message = error_text(await client.call_tool(tool, args))
                assert f"no memory '{bobs}' in this server's scope (user 'alice')" in message

    run(scenario)
    with _open(db_url) as memory:
        record = memory.store.get("memory", bobs)
        assert record is not None and record.valid_until is None
        assert [r.id for r in memory.get_memory_history(bobs)] == [bobs]


def test_a_search_returns_k_current_memories_when_k_exist(db_url: str, tmp_path: Path) -> None:
    """Twelve superseded versions match the query better than the two current
    memories; k=2 still returns exactly those two (the store filters before top-k)."""
    with OracleAgentMemory.open(
        db_url, embedder=EMBEDDER, extract_memories=False, schema_policy="CREATE_IF_NECESSARY"
    ) as memory:
        current = memory.add_memory("Alice rents a flat", user_id="alice")
        for n in range(12):
            current = memory.update_memory(current, f"Alice rents flat {n} flat rents flat")
        other = memory.add_memory("Alice rents a bike", user_id="alice")

    async def scenario() -> None:
        async with mcp_session(db_url, "--user", "alice", cwd=tmp_path) as client:
            hits = structured(
                await client.call_tool("search_memories", {"query": "Alice rents flat", "k": 2})
            )
            assert sorted(h["id"] for h in hits) == sorted([current, other])

    run(scenario)
