"""``oam mcp`` driven over stdio by the MCP SDK's own client, on SQLite and PostgreSQL:
tools and their schemas, a write-then-read round trip, scope isolation between two
servers, and tool errors that leave the server serving (docs/service.md)."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from _fake_openai import extraction_reply, fake_openai
from _mcp import error_text, mcp_session, resource_json, structured
from _proc import free_port, run_cli, start_cli, stop, wait_for_port
from _seed import EMBEDDER, SCRIPT, Seeded
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from oam_core import OracleAgentMemory
from oam_core.service.mcp_server import TOOL_NAMES


def run(scenario):  # type: ignore[no-untyped-def]
    anyio.run(scenario)


def test_tools_have_typed_schemas_and_descriptions(db_url: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with mcp_session(db_url, "--user", "alice", "--create", cwd=tmp_path) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert list(tools) == list(TOOL_NAMES)
            for tool in tools.values():
                assert tool.description and len(tool.description) > 30
                for name, prop in tool.input_schema.get("properties", {}).items():
                    assert prop.get("description"), f"{tool.name}.{name} has no description"
            search = tools["search_memories"].input_schema["properties"]
            assert search["k"]["minimum"] == 1 and search["k"]["default"] == 5
            assert tools["search_memories"].input_schema["required"] == ["query"]
            types = search["record_types"]["anyOf"][0]["items"]["enum"]
            assert set(types) == {
                "memory",
                "fact",
                "preference",
                "guideline",
                "message",
                "user_profile",
            }
            assert tools["add_messages"].input_schema["required"] == ["messages"]
            assert tools["search_memories"].output_schema is not None

    run(scenario)


def test_add_search_list_and_read_back(db_url: str, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with mcp_session(
            db_url, "--user", "alice", "--agent", "helper", "--create", cwd=tmp_path
        ) as client:
            added = structured(
                await client.call_tool(
                    "add_messages",
                    {
                        "messages": [
                            {
                                "role": "user",
                                "content": "My cat is called Miso.",
                                "timestamp": "2026-04-01T08:00:00Z",
                            },
                            {"role": "assistant", "content": "Miso is a lovely name."},
                        ]
                    },
                )
            )
            thread_id = added["thread_id"]
            assert len(added["message_ids"]) == 2
            assert added["extraction"] == "off" and added["memories"] == []
            more = structured(
                await client.call_tool(
                    "add_messages",
                    {
                        "thread_id": thread_id,
                        "messages": [{"role": "user", "content": "Miso is 3."}],
                    },
                )
            )
            assert more["thread_id"] == thread_id

            fact = structured(
                await client.call_tool(
                    "add_memory",
                    {
                        "content": "The user's cat is called Miso",
                        "record_type": "fact",
                        "thread_id": thread_id,
                        "metadata": {"topic": "pets"},
                    },
                )
            )
            assert fact["record_type"] == "fact" and fact["user_id"] == "alice"
            assert fact["agent_id"] == "helper" and fact["thread_id"] == thread_id
            structured(await client.call_tool("add_memory", {"content": "The user likes jazz"}))

            hits = structured(
                await client.call_tool("search_memories", {"query": "cat called Miso", "k": 2})
            )
            assert hits[0]["id"] == fact["id"]
            assert hits[0]["distance"] <= hits[-1]["distance"]
            filtered = structured(
                await client.call_tool(
                    "search_memories", {"query": "user", "metadata_filter": {"topic": "pets"}}
                )
            )
            assert [h["id"] for h in filtered] == [fact["id"]]
            messages = structured(
                await client.call_tool(
                    "search_memories", {"query": "Miso", "record_types": ["message"], "k": 10}
                )
            )
            assert {h["record_type"] for h in messages} == {"message"} and len(messages) == 3

            listed = structured(await client.call_tool("list_memories", {}))
            assert [m["content"] for m in listed] == [
                "The user's cat is called Miso",
                "The user likes jazz",
            ]
            threads = structured(await client.call_tool("list_threads", {}))
            assert [(t["thread_id"], t["message_count"]) for t in threads] == [(thread_id, 3)]
            got = structured(await client.call_tool("get_messages", {"thread_id": thread_id}))
            assert [(m["role"], m["content"]) for m in got] == [
                ("user", "My cat is called Miso."),
                ("assistant", "Miso is a lovely name."),
                ("user", "Miso is 3."),
            ]
            assert got[0]["timestamp"].startswith("2026-04-01T08:00:00")
            card = (
                (await client.call_tool("get_context_card", {"thread_id": thread_id}))
                .content[0]
                .text
            )
            assert card.startswith("<context_card>") and "The user's cat is called Miso" in card

            listed_resources = {str(r.uri) for r in (await client.list_resources()).resources}
            assert listed_resources == {"oam://threads", "oam://memories"}
            templates = {
                t.uri_template for t in (await client.list_resource_templates()).resource_templates
            }
            assert templates == {"oam://threads/{thread_id}", "oam://memories/{memory_id}"}
            body = resource_json(await client.read_resource(f"oam://threads/{thread_id}"))
            assert [m["content"] for m in body["messages"]][-1] == "Miso is 3."
            assert resource_json(await client.read_resource(f"oam://memories/{fact['id']}"))[
                "metadata"
            ] == {"topic": "pets"}
            assert len(resource_json(await client.read_resource("oam://memories"))) == 2

            deleted = structured(await client.call_tool("delete_memory", {"memory_id": fact["id"]}))
            assert deleted == {"deleted": 1}
            again = await client.call_tool("delete_memory", {"memory_id": fact["id"]})
            assert "no memory" in error_text(again)

    run(scenario)
    with OracleAgentMemory.open(db_url, embedder="hashing/64", extract_memories=False) as memory:
        assert [r.content for r in memory.store.list("memory")] == ["The user likes jazz"]


def test_without_embedder_the_server_uses_the_one_the_store_recorded(
    seeded: Seeded, tmp_path: Path
) -> None:
    # The store was written with hashing/64: the default 'local' model would not match.
    async def scenario() -> None:
        async with mcp_session(seeded.url, "--user", "alice", cwd=tmp_path, embedder=None) as c:
            found = structured(
                await c.call_tool("search_memories", {"query": "Porto Lisbon March"})
            )
            assert seeded.porto in {m["id"] for m in found}

    run(scenario)


def test_a_server_for_another_user_sees_nothing_of_the_first(
    seeded: Seeded, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with mcp_session(seeded.url, "--user", "alice", cwd=tmp_path) as alice:
            own = structured(await alice.call_tool("list_memories", {}))
            assert {m["id"] for m in own} == {seeded.lisbon, seeded.porto, seeded.window_seat}
            found = structured(
                await alice.call_tool("search_memories", {"query": "Porto Lisbon March"})
            )
            assert found[0]["id"] == seeded.porto
            assert seeded.lisbon not in [h["id"] for h in found]  # superseded: left out
            everything = structured(
                await alice.call_tool(
                    "search_memories", {"query": "Porto Lisbon March", "include_superseded": True}
                )
            )
            old = next(h for h in everything if h["id"] == seeded.lisbon)
            assert old["status"] == "invalid" and old["superseded_by"] == seeded.porto

        async with mcp_session(seeded.url, "--user", "mallory", cwd=tmp_path) as mallory:
            assert structured(await mallory.call_tool("list_threads", {})) == []
            assert structured(await mallory.call_tool("list_memories", {})) == []
            every_type = ["memory", "fact", "preference", "guideline", "message", "user_profile"]
            for query in ("Porto Lisbon March", "Rex dog", "traveller trains"):
                hits = await mallory.call_tool(
                    "search_memories",
                    {
                        "query": query,
                        "k": 100,
                        "record_types": every_type,
                        "include_superseded": True,
                    },
                )
                assert structured(hits) == []
            probes = [
                ("get_messages", {"thread_id": "trip"}),
                ("get_context_card", {"thread_id": "trip"}),
                ("list_memories", {"thread_id": "trip"}),
                ("search_memories", {"query": "Porto", "thread_id": "trip"}),
                (
                    "add_messages",
                    {"thread_id": "trip", "messages": [{"role": "user", "content": "x"}]},
                ),
                ("add_memory", {"content": "planted", "thread_id": "trip"}),
                ("delete_memory", {"memory_id": seeded.porto}),
                ("memory_history", {"memory_id": seeded.porto}),
                ("update_memory", {"memory_id": seeded.porto, "content": "planted"}),
                ("invalidate_memory", {"memory_id": seeded.porto}),
            ]
            for tool, args in probes:
                message = error_text(await mallory.call_tool(tool, args))
                assert "in this server's scope (user 'mallory')" in message, (tool, message)
            for uri in ("oam://threads/trip", f"oam://memories/{seeded.porto}"):
                with pytest.raises(Exception, match="scope"):
                    await mallory.read_resource(uri)
            assert resource_json(await mallory.read_resource("oam://threads")) == []

    run(scenario)
    with OracleAgentMemory.open(
        seeded.url, embedder="hashing/64", extract_memories=False
    ) as memory:
        assert memory.store.count_thread_messages("trip") == 3
        assert memory.store.get("fact", seeded.porto) is not None
        assert not [r for r in memory.store.list("memory") if r.content == "planted"]


def test_add_messages_cannot_probe_which_thread_ids_exist(seeded: Seeded, tmp_path: Path) -> None:
    """review F4: an unknown thread id and another user's are answered alike (same
    error, same text but the id), and neither creates nor changes a thread; a new
    thread gets a server-generated id."""

    async def scenario() -> None:
        async with mcp_session(seeded.url, "--user", "mallory", cwd=tmp_path) as mallory:
            answers = []
            for thread_id in ("no-such-thread", "trip"):
                result = await mallory.call_tool(
                    "add_messages",
                    {"thread_id": thread_id, "messages": [{"role": "user", "content": "x"}]},
                )
                answers.append(error_text(result).replace(repr(thread_id), "<id>"))
            assert answers[0] == answers[1], answers
            assert answers[0] == (
                "Error executing tool add_messages: no thread <id> in this server's scope "
                "(user 'mallory'); "
                "omit thread_id to start a new thread"
            )
            assert structured(await mallory.call_tool("list_threads", {})) == []
            added = structured(
                await mallory.call_tool(
                    "add_messages", {"messages": [{"role": "user", "content": "hello"}]}
                )
            )
            assert added["thread_id"] not in ("no-such-thread", "trip")
            threads = structured(await mallory.call_tool("list_threads", {}))
            assert [t["thread_id"] for t in threads] == [added["thread_id"]]

    run(scenario)
    with OracleAgentMemory.open(
        seeded.url, embedder="hashing/64", extract_memories=False
    ) as memory:
        assert memory.get_thread_row("no-such-thread") is None
        assert memory.get_thread_row("trip").user_id == "alice"
        assert memory.store.count_thread_messages("trip") == 3


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(
    seeded: Seeded, tmp_path: Path
) -> None:
    async def scenario() -> None:
        async with mcp_session(seeded.url, "--user", "alice", cwd=tmp_path) as client:
            cases = [
                ("search_memories", {"query": "x", "k": 0}, "greater than or equal to 1"),
                ("search_memories", {}, "query"),
                ("search_memories", {"query": "x", "record_types": ["thread"]}, "record_types"),
                ("search_memories", {"query": "x", "metadata_filter": {"$bogus": 1}}, "$bogus"),
                ("search_memories", {"query": "   "}, "non-blank"),
                ("add_messages", {"messages": []}, "at least 1"),
                ("add_messages", {"messages": [{"role": "user"}]}, "content"),
                (
                    "add_messages",
                    {"messages": [{"role": "user", "content": "hi", "id": "a"}]},
                    "id",
                ),
                ("add_memory", {"content": "x", "record_type": "message"}, "record_type"),
                ("add_memory", {"content": "   "}, "content must be non-blank text"),
                ("add_memory", {"content": "x", "metadata": {"$agent_memory": {}}}, "reserved"),
                ("get_context_card", {"thread_id": "no-such-thread"}, "no thread 'no-such-thread'"),
                ("delete_memory", {"memory_id": "no-such-memory"}, "no memory 'no-such-memory'"),
                ("no_such_tool", {}, "Unknown tool"),
            ]
            for tool, args, expected in cases:
                message = error_text(await client.call_tool(tool, args))
                assert expected in message, (tool, args, message)
            hits = structured(await client.call_tool("search_memories", {"query": "Porto"}))
            assert hits[0]["id"] == seeded.porto
            assert SCRIPT in hits[0]["content"]  # stored text comes back verbatim

    run(scenario)


def test_add_messages_runs_extraction_when_an_llm_is_configured(
    db_url: str, tmp_path: Path
) -> None:
    with fake_openai(extraction_reply("The user's cat is called Miso")) as (api_base, requests):

        async def scenario() -> None:
            args = ("--user", "alice", "--create", "--llm", "openai/fake-model")
            args += ("--llm-api-base", api_base)
            async with mcp_session(db_url, *args, cwd=tmp_path) as client:
                added = structured(
                    await client.call_tool(
                        "add_messages",
                        {"messages": [{"role": "user", "content": "My cat is called Miso."}]},
                    )
                )
                assert added["extraction"] == "ran"
                [memory] = added["memories"]
                assert memory["content"] == "The user's cat is called Miso"
                assert memory["record_type"] == "fact" and memory["user_id"] == "alice"
                assert memory["source_message_ids"] == added["message_ids"]
                hits = structured(await client.call_tool("search_memories", {"query": "cat Miso"}))
                assert hits[0]["id"] == memory["id"]

        run(scenario)
    prompts = [m["content"] for r in requests for m in r["messages"]]
    assert any("My cat is called Miso." in p for p in prompts)
    assert all(r["model"] == "fake-model" for r in requests)


def test_streamable_http_with_a_token(seeded: Seeded, tmp_path: Path) -> None:
    port = free_port()
    token = "a-long-test-token-0123456789"
    process = start_cli(
        [
            "mcp",
            "--db",
            seeded.url,
            "--embedder",
            "hashing/64",
            "--user",
            "alice",
            "--http",
            "--port",
            str(port),
            "--token",
            token,
        ],
        cwd=tmp_path,
    )
    try:
        wait_for_port(port, process)
        url = f"http://127.0.0.1:{port}/mcp"
        refused = httpx.post(url, json={})
        assert refused.status_code == 401
        assert "'Authorization: Bearer YOUR_TOKEN'" in refused.text
        assert "?token=" not in refused.text
        # the token in the URL (or a cookie) is not accepted: URLs end up in logs
        assert httpx.post(f"{url}?token={token}", json={}).status_code == 401
        assert httpx.post(url, json={}, cookies={"oam_token": token}).status_code == 401

        async def scenario() -> None:
            headers = {"Authorization": f"Bearer {token}"}
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                names = [t.name for t in (await client.list_tools()).tools]
                assert names == list(TOOL_NAMES)
                hits = structured(await client.call_tool("search_memories", {"query": "Porto"}))
                assert hits[0]["id"] == seeded.porto

        run(scenario)
    finally:
        stop(process)


def test_http_off_loopback_needs_a_token(tmp_path: Path) -> None:
    result = run_cli(
        ["mcp", "--db", str(tmp_path / "x.db"), "--user", "alice", "--http", "--host", "0.0.0.0"],
        cwd=tmp_path,
    )
    assert result.returncode == 1
    assert "Error: binding to 0.0.0.0 exposes the store" in result.stderr
    assert "--token" in result.stderr and not (tmp_path / "x.db").exists()


def test_a_scope_is_required(tmp_path: Path) -> None:
    result = run_cli(["mcp", "--db", str(tmp_path / "x.db")], cwd=tmp_path)
    assert result.returncode == 1
    assert "Error: a scope needs a user_id, an agent_id or both (--user / --agent)" in result.stderr


def test_a_missing_store_is_refused_unless_create(db_url: str, tmp_path: Path) -> None:
    """Like ``oam serve``, ``oam mcp`` does not create a store by accident (a
    fresh-user review saw a mistyped --db silently create a new file)."""
    result = run_cli(["mcp", "--db", db_url, "--user", "alice"], cwd=tmp_path)
    # a missing file and a database without a store exit 2, as in every command
    assert result.returncode == 2, result.stderr
    assert "pass --create to start a new store there" in result.stderr
    if "://" not in db_url:
        assert f"Error: {db_url}: no such database;" in result.stderr
        assert not Path(db_url).exists()
    else:
        assert "has no oam store" in result.stderr
        with pytest.raises(ValueError, match="has no oam store"):
            OracleAgentMemory.open(db_url, embedder=EMBEDDER, schema_policy="REQUIRE_EXISTING")
