"""What a fresh-user review of the command line found (issues 14-17): ownership on
``--replace``/``--resume``, options every command takes, ``~`` and missing
directories, one rule for message ids and roles, and clearer messages."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli import MESSAGES, assert_clean_failure, invoke
from typer.testing import CliRunner

from oam_core import OracleAgentMemory


def _messages(db: Path, thread_id: str) -> list[str]:
    with OracleAgentMemory.open(db, embedder="hashing", extract_memories=False) as memory:
        return [m.content for m in memory.store.list_thread_messages(thread_id)]


# -- ownership -----------------------------------------------------------------------


def test_replace_and_resume_refuse_another_users_thread(
    runner: CliRunner, chat: Path, tmp_path: Path
) -> None:
    db = tmp_path / "x.db"
    first = invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing", "--user", "ana")
    assert first.exit_code == 0, first.output
    before = _messages(db, "chat")
    chat.write_text(json.dumps(MESSAGES[0]) + "\n", encoding="utf-8")
    for flag in ("--replace", "--resume"):
        result = invoke(runner, "ingest", chat, "--db", db, flag, "--user", "ben")
        assert_clean_failure(
            result, 1, f"thread 'chat' belongs to user 'ana', not 'ben'; {flag} does not"
        )
        assert _messages(db, "chat") == before
    mine = invoke(runner, "ingest", chat, "--db", db, "--replace", "--user", "ana")
    assert mine.exit_code == 0, mine.output
    assert _messages(db, "chat") == [MESSAGES[0]["content"]]
