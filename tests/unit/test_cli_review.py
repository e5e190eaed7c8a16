"""What a fresh-user review of the command line found (issues 14-17): ownership on
``--replace``/``--resume``, options every command takes, ``~`` and missing
directories, one rule for message ids and roles, and clearer messages."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import MESSAGES, assert_clean_failure, invoke
from typer.testing import CliRunner

from oam_core import OracleAgentMemory, SQLiteMemoryStore


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


# -- --schema-policy on every command that opens a store ------------------------------


def test_every_store_command_takes_schema_policy(runner: CliRunner) -> None:
    for command in ("ingest", "search", "card", "threads", "reindex", "demo", "mcp", "serve"):
        result = invoke(runner, command, "--help")
        assert result.exit_code == 0 and "--schema-policy" in result.stdout, command


def test_schema_policy_is_honoured_by_the_reading_commands(
    runner: CliRunner, tmp_path: Path
) -> None:
    db = tmp_path / "new.db"
    refused = invoke(runner, "threads", "--db", db)
    assert_clean_failure(refused, 2, "no such database")
    created = invoke(runner, "threads", "--db", db, "--schema-policy", "create_if_necessary")
    assert created.exit_code == 0 and "No threads in" in created.stdout, created.output
    assert db.exists()
    found = invoke(
        runner,
        "search",
        "x",
        "--db",
        db,
        "--embedder",
        "none",
        "--strategy",  # without an embedder only KEYWORD ranks text (docs/store.md#searching)
        "keyword",
        "--schema-policy",
        "require_existing",
    )
    assert found.exit_code == 0 and "No results." in found.stdout, found.output
    recreate = invoke(runner, "reindex", "--db", db, "--schema-policy", "recreate")
    assert_clean_failure(recreate, 1, "--schema-policy recreate is not supported by the embedded")
    other = tmp_path / "other.db"
    card = invoke(runner, "card", "t", "--db", other, "--schema-policy", "create_if_empty")
    assert_clean_failure(card, 1, "no thread 't' in the database")
    assert other.exists()


def test_serve_takes_schema_policy(tmp_path: Path) -> None:
    from oam_core.service.web.app import create_app

    db = tmp_path / "inspect.db"
    with pytest.raises(ValueError, match="no such database"):
        create_app(str(db), embedder="hashing/64")
    assert not db.exists()
    app = create_app(str(db), embedder="hashing/64", schema_policy="create_if_necessary")
    assert db.exists() and app.state.inspector.memory.store is not None
    app.state.inspector.memory.close()


# -- ~ and missing directories --------------------------------------------------------


def test_home_is_expanded_and_a_missing_directory_is_named(
    runner: CliRunner, chat: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from oam_core import StoreConnectionError

    monkeypatch.setenv("HOME", str(tmp_path))
    for connection, name in (("~/a.db", "a.db"), ("sqlite:///~/b.db", "b.db")):
        with OracleAgentMemory.open(connection, embedder=None) as memory:
            memory.store.add(["kept"], "memory")
        assert (tmp_path / name).exists(), connection
        assert not Path("~").exists()
    for connection in (str(tmp_path / "nodir" / "c.db"), "sqlite:///~/nodir/c.db"):
        with pytest.raises(StoreConnectionError) as raised:
            OracleAgentMemory.open(connection, embedder=None)
        message = str(raised.value)
        assert f"'{tmp_path / 'nodir'}' does not exist" in message, message
        assert not isinstance(raised.value, sqlite3.Error)
    assert not (tmp_path / "nodir").exists()
    assert chat == tmp_path / "chat.jsonl"
    result = invoke(runner, "ingest", "~/chat.jsonl", "--db", "~/cli.db", "--embedder", "hashing")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "cli.db").exists()


# -- embedder identity wording ------------------------------------------------------


def test_a_dimension_error_names_the_recorded_embedder(
    runner: CliRunner, chat: Path, tmp_path: Path
) -> None:
    db = tmp_path / "x.db"
    assert invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing/16").exit_code == 0
    args = ("search", "dog", "--db", db, "--embedder", "hashing/32")
    for extra in ((), ("--allow-embedder-change",)):
        result = invoke(runner, *args, *extra)
        assert_clean_failure(result, 1, "hashing/16")
        assert "has not recorded" not in result.stderr
        assert "--embedder hashing/16" in result.stderr
    forced = invoke(runner, *args, "--allow-embedder-change")
    assert "written by embedder 'hashing/16'" in forced.stderr
    assert "allow_embedder_change" not in forced.stderr  # spelled as the CLI flag


# -- one rule for ids and roles ---------------------------------------------------------


def test_ingest_applies_the_library_rules_for_ids_and_roles(
    runner: CliRunner, tmp_path: Path
) -> None:
    db = tmp_path / "x.db"
    mixed = tmp_path / "mixed.jsonl"
    lines = [
        {"role": "user", "content": "a", "id": "a"},
        {"role": "assistant", "content": "b", "id": "b"},
        {"role": "user", "content": "c"},
    ]
    mixed.write_text("".join(json.dumps(m) + "\n" for m in lines), encoding="utf-8")
    # each message's id is optional on its own: given ones kept, the rest generated
    kept = tmp_path / "mixed.db"
    result = invoke(runner, "ingest", mixed, "--db", kept, "--embedder", "hashing")
    assert result.exit_code == 0, result.stderr
    store = SQLiteMemoryStore(kept)
    stored = store.list_thread_messages("mixed")
    store.close()
    assert [m.id for m in stored][:2] == ["a", "b"] and len(stored[2].id) == 36
    roles = tmp_path / "roles.jsonl"
    roles.write_text(
        "".join(json.dumps({"role": r, "content": f"by {r}"}) + "\n" for r in ("bot", "developer")),
        encoding="utf-8",
    )
    refused = invoke(runner, "ingest", roles, "--db", db, "--embedder", "hashing")
    assert_clean_failure(
        refused,
        1,
        "line 1: 'role' must be one of user, assistant, system, tool, got a JSON string (\"bot\")",
    )
    roles.write_text(
        "".join(json.dumps({"role": r, "content": f"by {r}"}) + "\n" for r in ("system", "tool")),
        encoding="utf-8",
    )
    stored = invoke(runner, "ingest", roles, "--db", db, "--embedder", "hashing")
    assert stored.exit_code == 0, stored.output
    with OracleAgentMemory.open(db, embedder="hashing", extract_memories=False) as memory:
        assert [m.role for m in memory.store.list_thread_messages("roles")] == ["system", "tool"]
    unknown = tmp_path / "keys.jsonl"
    unknown.write_text('{"role": "user", "content": "x", "speaker": "Ana"}\n', encoding="utf-8")
    keys = invoke(runner, "ingest", unknown, "--db", db, "--embedder", "hashing")
    assert_clean_failure(keys, 1, "allowed: role, content, name, timestamp, metadata, id")


# -- database errors through the error tree -----------------------------------------------


def test_store_errors_are_one_line_even_with_debug(
    runner: CliRunner, chat: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oam_core import StoreConnectionError, StoreError

    assert not issubclass(StoreConnectionError, ValueError)
    db = tmp_path / "x.db"
    assert invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing").exit_code == 0
    for error in (StoreError("database error on x.db: disk I/O"), StoreConnectionError("lost")):

        def fail(*args: object, error: Exception = error, **kwargs: object) -> None:
            raise error

        monkeypatch.setattr("oam_core.store.sqlite.SQLiteMemoryStore.search", fail)
        for debug in ((), ("--debug",)):
            result = invoke(runner, *debug, "search", "dog", "--db", db, "--embedder", "hashing")
            assert_clean_failure(result, 1, f"Error: {error}")
            assert "StoreError" not in result.stderr


def test_a_search_with_an_embedder_records_no_dimension_before_a_vector(
    runner: CliRunner, chat: Path, tmp_path: Path
) -> None:
    db = tmp_path / "x.db"
    assert invoke(runner, "ingest", chat, "--db", db, "--embedder", "none").exit_code == 0
    # a search with an embedder records nothing: no vector was written (docs/store.md#schema)
    assert invoke(runner, "search", "dog", "--db", db, "--embedder", "hashing/16").exit_code == 0
    result = invoke(runner, "search", "dog", "--db", db, "--embedder", "hashing/8")
    assert result.exit_code == 0 and "Biscuit" in result.stdout
    assert invoke(runner, "reindex", "--db", db, "--embedder", "hashing/8").exit_code == 0
    again = invoke(runner, "search", "dog", "--db", db, "--embedder", "hashing/16")
    assert_clean_failure(again, 1, "hashing/8")
    vector = invoke(
        runner, "search", "dog", "--db", db, "--embedder", "none", "--strategy", "vector"
    )
    assert_clean_failure(vector, 1, "pass --embedder (e.g. local), or use --strategy keyword")
    assert "query_vector" not in vector.stderr and "search_strategy=" not in vector.stderr


@pytest.mark.parametrize(
    ("command", "code", "text"),
    [
        (["search", "hello"], 2, "no oam store there"),
        (["card", "chat"], 2, "no oam store there"),
        (["threads"], 2, "no oam store there"),
        (["reindex", "--embedder", "hashing"], 2, "no oam store there"),
        (["mcp", "--user", "u1"], 1, "no oam store there; pass --create"),
        (["serve"], 1, "no oam store there"),
    ],
)
def test_a_command_that_only_reads_leaves_an_empty_file_empty(
    runner: CliRunner, tmp_path: Path, command: list[str], code: int, text: str
) -> None:
    # It used to write a store (and the default embedder's dimension) into the file,
    # so a later `oam ingest --embedder hashing` failed on the dimension.
    db = tmp_path / "empty.db"
    db.touch()
    assert_clean_failure(invoke(runner, *command, "--db", db), code, text)
    assert db.stat().st_size == 0
    assert not (tmp_path / "empty.db-wal").exists()


def test_ingest_fills_an_empty_file(runner: CliRunner, chat: Path, tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    db.touch()
    result = invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing", "--user", "u1")
    assert result.exit_code == 0, result.output
    assert len(_messages(db, "chat")) == 4
