"""``oam mcp --llm``: an LLM that cannot answer is refused before the server starts,
and an ``add_messages`` whose extraction fails after the messages were stored says
what it stored (the thread id and message ids), so a client does not send them again
(docs/service.md#tools)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import anyio
from _fake_openai import fake_openai
from _mcp import mcp_session, structured

LLM = "openai/gpt-4o-mini"


def _oam_mcp(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``oam mcp ARGS`` with no OpenAI key in its environment, stdin closed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    return subprocess.run(
        [sys.executable, "-m", "oam_core.cli", "mcp", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_missing_api_key_refuses_to_start_with_one_line(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    args = ["--db", str(db), "--user", "alice", "--embedder", "hashing/64", "--create"]
    done = _oam_mcp([*args, "--llm", LLM], tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"Error: LiteLLM model '{LLM}' has no API key: set OPENAI_API_KEY in the "
        "environment of this command (or --llm-api-base for a server that needs none)"
    ]
    assert not db.exists()  # refused before the store was created


def test_an_unknown_model_id_refuses_to_start(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    args = ["--db", str(db), "--user", "alice", "--embedder", "hashing/64", "--create"]
    done = _oam_mcp([*args, "--llm", "gpt4o"], tmp_path)
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("Error: model 'gpt4o' names no provider LiteLLM knows")
    assert not db.exists()


def test_stored_messages_whose_extraction_fails_are_reported_not_an_error(
    tmp_path: Path,
) -> None:
    """The key passes the start check (an api base is given), the provider then
    refuses it: the messages are stored once, and the result says so."""
    db = tmp_path / "memory.db"
    refusal = "The api_key client option must be set"

    def reply(prompt: str) -> str:
        return refusal

    with fake_openai(reply, status=401) as (api_base, requests):

        async def scenario() -> tuple[dict, dict, list]:  # type: ignore[type-arg]
            args = ("--user", "alice", "--create", "--llm", LLM, "--llm-api-base", api_base)
            async with mcp_session(str(db), *args, cwd=tmp_path) as client:
                message = {"role": "user", "content": "I fly to Lisbon in March."}
                first = structured(await client.call_tool("add_messages", {"messages": [message]}))
                again = {"messages": [message], "thread_id": first["thread_id"]}
                second = structured(await client.call_tool("add_messages", again))
                threads = structured(await client.call_tool("list_threads", {}))
                return first, second, threads

        first, second, threads = anyio.run(scenario)
    assert requests, "the extraction pass reached the LLM"
    for added in (first, second):
        assert added["extraction"] == "failed"
        assert added["memories"] == []
        assert f"LiteLLM model {LLM!r} has no API key" in added["extraction_error"]
        assert len(added["message_ids"]) == 1
    assert second["thread_id"] == first["thread_id"]
    assert [(t["thread_id"], t["message_count"]) for t in threads] == [(first["thread_id"], 2)]
    with sqlite3.connect(db) as conn:
        found = conn.execute("SELECT id FROM records WHERE record_type = 'message'").fetchall()
    assert sorted(i for (i,) in found) == sorted(first["message_ids"] + second["message_ids"])


def test_a_skipped_extraction_pass_is_reported_with_its_warning(tmp_path: Path) -> None:
    """The LLM answers an error no retry fixes: the pass is skipped with a warning
    (not raised); the result says extraction failed and why, the messages stored."""
    db = tmp_path / "memory.db"

    def reply(prompt: str) -> str:
        return "the model is overloaded"

    with fake_openai(reply, status=400) as (api_base, requests):

        async def scenario() -> dict:  # type: ignore[type-arg]
            args = ("--user", "alice", "--create", "--llm", LLM, "--llm-api-base", api_base)
            async with mcp_session(str(db), *args, cwd=tmp_path) as client:
                message = {"role": "user", "content": "My cat is called Miso."}
                return structured(await client.call_tool("add_messages", {"messages": [message]}))  # type: ignore[no-any-return]

        added = anyio.run(scenario)
    assert len(requests) == 1
    assert added["extraction"] == "failed"
    assert added["memories"] == []
    [warning] = added["extraction_warnings"]
    assert f"thread {added['thread_id']!r}: extraction pass skipped: LLM error" in warning
    assert "the model is overloaded" in warning
    assert added["extraction_error"] == warning
    with sqlite3.connect(db) as conn:
        found = conn.execute("SELECT id FROM records WHERE record_type = 'message'").fetchall()
    assert [i for (i,) in found] == added["message_ids"]
