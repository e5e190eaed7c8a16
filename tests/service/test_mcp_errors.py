"""``oam mcp`` tool errors from the server's side (a real store failure: a table
dropped under the running server) tell the client the error class and a safe
message, never the database's location (SQLite path; PostgreSQL user, database,
socket, search_path); the details go to the server's log on stderr, with the same
error id (docs/service.md)."""

from __future__ import annotations

import re
import sqlite3
import tempfile
from pathlib import Path

import anyio
import pytest
from _mcp import error_text, server_params, structured
from mcp import Client
from mcp.client.stdio import stdio_client

from oam_core import OracleAgentMemory
from oam_core.service.mcp_server import build_server
from oam_core.service.scope import Scope


def _secrets_of(db_url: str) -> list[str]:
    """The parts of ``db_url`` a client must not learn."""
    if "=" not in db_url and "://" not in db_url:
        return [db_url, str(Path(db_url).parent)]
    from psycopg.conninfo import conninfo_to_dict

    parts = conninfo_to_dict(db_url)
    found = [str(parts[k]) for k in ("user", "dbname", "host") if parts.get(k)]
    found += re.findall(r"search_path=([^,\s']+)", str(parts.get("options", "")))
    assert len(found) >= 4, parts
    return found


def _drop_records_table(db_url: str) -> None:
    """Break the store under the running server, as a lost table would."""
    if "=" not in db_url and "://" not in db_url:
        with sqlite3.connect(db_url) as conn:
            conn.execute("DROP TABLE records")
        return
    import psycopg

    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("DROP TABLE records CASCADE")


def test_a_store_failure_does_not_show_the_database_to_the_client(
    db_url: str, tmp_path: Path
) -> None:
    """issue 15: the message was ``SQLite error on '/abs/path/store.db': ...`` or
    ``database error on PostgreSQL user=... dbname=... host=/socket options='-c
    search_path=...'``."""
    params = server_params(db_url, "--user", "alice", "--create", cwd=tmp_path)
    secrets = _secrets_of(db_url)

    async def scenario() -> list[str]:
        texts = []
        with tempfile.TemporaryFile("w+") as errlog:
            async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as c:
                structured(await c.call_tool("add_memory", {"content": "Alice likes tea"}))
                # a client's own mistake gets the library's message
                bad = error_text(await c.call_tool("delete_memory", {"memory_id": "nope"}))
                assert "no memory 'nope' in this server's scope" in bad
                _drop_records_table(db_url)
                for tool, args in (
                    ("search_memories", {"query": "tea"}),
                    ("list_memories", {}),
                    ("add_memory", {"content": "Alice likes coffee"}),
                ):
                    texts.append(error_text(await c.call_tool(tool, args)))
                with pytest.raises(Exception) as raised:
                    await c.read_resource("oam://memories")
                texts.append(str(raised.value))
            errlog.seek(0)
            log = errlog.read()
        for text in texts:
            assert "StoreError: the database failed (error " in text, text
            assert "the details are in the server's log" in text
            for secret in secrets:
                assert secret not in text, (secret, text)
            assert "records" not in text
            ref = re.search(r"\(error ([0-9a-f]{8});", text)
            assert ref and f"oam mcp: ERROR: error {ref.group(1)}: StoreError: " in log, log
        assert "no such table: records" in log or 'relation "records" does not exist' in log
        assert secrets[0] in log  # the details are there for the operator
        return texts

    anyio.run(scenario)


def test_an_unexpected_error_is_summarised_too(
    db_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    memory = OracleAgentMemory.open(db_url, embedder="hashing/64", extract_memories=False)
    server = build_server(memory, Scope(user_id="alice"))

    def fail(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"cannot read {db_url}")

    async def scenario() -> None:
        async with Client(server) as client:
            monkeypatch.setattr(type(memory.store), "search", fail)
            text = error_text(await client.call_tool("search_memories", {"query": "cat"}))
            assert "RuntimeError: internal error (error " in text and db_url not in text
            monkeypatch.setattr(type(memory.store), "search", lambda *a, **k: [])
            assert structured(await client.call_tool("search_memories", {"query": "cat"})) == []

    try:
        with caplog.at_level("ERROR", logger="oam.service.mcp"):
            anyio.run(scenario)
    finally:
        memory.close()
    assert any(db_url in r.getMessage() for r in caplog.records)
