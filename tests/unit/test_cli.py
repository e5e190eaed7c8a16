"""Tests for the ``oam`` command line (typer's CliRunner, hashing embedder, tmp dirs)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from oam_core.cli import DEMO_QUESTIONS, DEMO_THREAD, _version, app
from oam_core.embedders import resolve_embedder
from oam_core.memory.client import OracleAgentMemory
from oam_core.store import writes
from oam_core.store.sqlite import SQLiteMemoryStore

MESSAGES = [
    {
        "role": "user",
        "content": "My dog is called Biscuit and he loves the beach.",
        "timestamp": "2025-01-02T09:00:00",
    },
    {
        "role": "assistant",
        "content": "Biscuit sounds like a happy dog!",
        "timestamp": "2025-01-02T09:00:05",
    },
    {
        "role": "user",
        "content": "I am flying to Lisbon in March for a conference.",
        "timestamp": "2025-01-03T10:00:00",
    },
    {
        "role": "assistant",
        "content": "Lisbon in March is lovely.",
        "timestamp": "2025-01-03T10:00:04",
    },
]


REPLACE_AS_U1 = ("--embedder", "hashing", "--replace", "--user", "u1")
"""``--replace`` by the owner of the ``ingested`` fixture's thread."""


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "oam.db"


def _locomo_file(tmp_path: Path, sessions: int = 2, samples: tuple[str, ...] = ("conv-x",)) -> Path:
    """A LoCoMo-shaped file: each sample has ``sessions`` one-turn sessions."""
    data = []
    for sample_id in samples:
        conversation: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Ben"}
        for n in range(1, sessions + 1):
            conversation[f"session_{n}_date_time"] = f"1:56 pm on {n} May, 2023"
            speaker = "Ana" if n % 2 else "Ben"
            conversation[f"session_{n}"] = [
                {
                    "speaker": speaker,
                    "dia_id": f"D{n}:1",
                    "text": f"{speaker} talks about pottery {n}.",
                }
            ]
        data.append({"sample_id": sample_id, "conversation": conversation})
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def invoke(runner: CliRunner, *args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def assert_clean_failure(result: Result, code: int, text: str) -> None:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    assert text in lines[0]


@pytest.fixture
def ingested(runner: CliRunner, chat: Path, db: Path) -> Path:
    result = invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing", "--user", "u1")
    assert result.exit_code == 0, result.output
    return db


def test_help_lists_every_command(runner: CliRunner) -> None:
    result = invoke(runner, "--help")
    assert result.exit_code == 0
    for command in ("ingest", "search", "card", "threads", "demo"):
        assert command in result.stdout


def test_ingest_reports_counts(runner: CliRunner, chat: Path, db: Path) -> None:
    result = invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing")
    assert result.exit_code == 0, result.output
    assert "Ingested 4 messages into 1 thread in" in result.stdout
    assert db.exists()


def test_ingest_twice_needs_replace(runner: CliRunner, chat: Path, ingested: Path) -> None:
    again = invoke(runner, "ingest", chat, "--db", ingested, "--embedder", "hashing")
    assert_clean_failure(
        again, 1, "already in the database: chat; use --resume to skip them or --replace"
    )
    replaced = invoke(runner, "ingest", chat, "--db", ingested, *REPLACE_AS_U1)
    assert replaced.exit_code == 0, replaced.output
    listed = invoke(runner, "threads", "--db", ingested)
    assert listed.exit_code == 0
    assert listed.stdout.count("chat") == 1


def test_threads_lists_ids_users_and_counts(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, "threads", "--db", ingested)
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "chat" in line)
    assert "u1" in row and " 4 " in row
    other = invoke(runner, "threads", "--db", ingested, "--user", "nobody")
    assert "No threads" in other.stdout


def test_search_finds_the_dog(runner: CliRunner, ingested: Path) -> None:
    result = invoke(
        runner,
        "search",
        "what is the dog called",
        "--db",
        ingested,
        "--embedder",
        "hashing",
        "--k",
        "1",
    )
    assert result.exit_code == 0, result.output
    assert "Biscuit" in result.stdout
    assert " 1. " in result.stdout and " 2. " not in result.stdout


@pytest.mark.parametrize("strategy", ["vector", "keyword", "hybrid"])
def test_search_json_with_scope(runner: CliRunner, ingested: Path, strategy: str) -> None:
    result = invoke(
        runner,
        "search",
        "Lisbon March",
        "--db",
        ingested,
        "--embedder",
        "hashing",
        "--strategy",
        strategy,
        "--user",
        "u1",
        "--thread",
        "chat",
        "--json",
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert 1 <= len(rows) <= 5
    assert "Lisbon" in rows[0]["content"]
    assert {(r["user_id"], r["thread_id"], r["record_type"]) for r in rows} == {
        ("u1", "chat", "message")
    }
    empty = invoke(
        runner, "search", "Lisbon", "--db", ingested, "--embedder", "hashing", "--user", "x"
    )
    assert empty.exit_code == 0
    assert "No results." in empty.stdout


def test_card_shows_recent_messages(runner: CliRunner, ingested: Path) -> None:
    result = invoke(
        runner, "card", "chat", "--db", ingested, "--embedder", "hashing", "--recent", "2"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("<context_card>")
    recent = result.stdout.split("<recent_messages>")[1]
    assert "Lisbon in March is lovely." in recent
    assert "Biscuit" not in recent


def test_card_of_unknown_thread(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, "card", "nope", "--db", ingested, "--embedder", "hashing")
    assert_clean_failure(result, 1, "no thread 'nope'")


def test_missing_file(runner: CliRunner, tmp_path: Path, db: Path) -> None:
    result = invoke(runner, "ingest", tmp_path / "absent.jsonl", "--db", db)
    assert_clean_failure(result, 2, "absent.jsonl: no such file")
    assert not db.exists()


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("bad.jsonl", '{"role": "user", "content": "hi"}\n{"role": \n', "line 2: invalid JSON"),
        ("bad.json", '[{"role": "user", "content": ', "invalid JSON at line 1"),
        ("shape.json", '{"hello": "world"}', "neither a message"),
        ("role.jsonl", '{"content": "no role"}', "line 1: 'role' is missing"),
        (
            "blank.jsonl",
            '{"role": "", "content": "x"}',
            "line 1: 'role' must be one of user, assistant",
        ),
        (
            "when.jsonl",
            '{"role": "user", "content": "a"}\n{"role": "user", "content": "b", '
            '"timestamp": "yesterday"}',
            "line 2: 'timestamp' is not an ISO-8601 date or date-time",
        ),
        ("null.jsonl", '{"role": "user", "content": null}', "'content' must be a string, got a"),
    ],
)
def test_bad_files_fail_cleanly(
    runner: CliRunner, tmp_path: Path, db: Path, name: str, text: str, expected: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    result = invoke(runner, "ingest", path, "--db", db, "--embedder", "hashing")
    assert_clean_failure(result, 1, expected)


def test_commands_on_a_missing_database(runner: CliRunner, db: Path) -> None:
    for args in (("search", "dog"), ("card", "chat"), ("threads",)):
        result = invoke(runner, *args, "--db", db)
        assert_clean_failure(result, 2, "no such database")


def test_a_file_that_is_not_a_database(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("just some text, not SQLite\n" * 100, encoding="utf-8")
    for args in (("threads",), ("search", "dog", "--embedder", "hashing")):
        result = invoke(runner, *args, "--db", path)
        assert_clean_failure(result, 1, "")


def test_embedder_dimension_mismatch(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, "search", "dog", "--db", ingested, "--embedder", "hashing/32")
    assert_clean_failure(result, 1, "dimension")


def test_bad_option_values_are_usage_errors(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, "search", "dog", "--db", ingested, "--strategy", "fuzzy")
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    result = invoke(runner, "search", "dog", "--db", ingested, "--k", "0")
    assert result.exit_code == 2


def test_ingest_locomo_file(runner: CliRunner, tmp_path: Path, db: Path) -> None:
    sample = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "I love pottery."}],
            "session_2_date_time": "2:00 pm on 9 May, 2023",
            "session_2": [{"speaker": "Ben", "dia_id": "D2:1", "text": "I run marathons."}],
        },
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]), encoding="utf-8")
    result = invoke(runner, "ingest", path, "--db", db, "--embedder", "hashing")
    assert result.exit_code == 0, result.output
    assert "Ingested 2 messages into 2 threads in" in result.stdout
    listed = invoke(runner, "threads", "--db", db)
    assert "conv-x-s1" in listed.stdout and "conv-x-s2" in listed.stdout
    found = invoke(
        runner,
        "search",
        "pottery",
        "--db",
        db,
        "--embedder",
        "hashing",
        "--user",
        "conv-x",
        "--json",
        "--k",
        "1",
    )
    [row] = [json.loads(line) for line in found.stdout.splitlines()]
    assert row["metadata"] == {"dia_id": "D1:1", "$message": {"name": "Ana"}}
    assert row["timestamp"] == "2023-05-08T13:56:00+00:00"


def test_demo_end_to_end(runner: CliRunner, db: Path) -> None:
    result = invoke(runner, "demo", "--db", db, "--embedder", "hashing")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"Ingested 260 messages into thread {DEMO_THREAD}" in out
    for question in DEMO_QUESTIONS:
        assert f"Q: {question}" in out
    assert "<context_card>" in out and "</context_card>" in out
    again = invoke(runner, "demo", "--db", db, "--embedder", "hashing")
    assert again.exit_code == 0, again.output
    assert "reusing it" in again.stdout
    listed = invoke(runner, "threads", "--db", db)
    assert DEMO_THREAD in listed.stdout and "260" in listed.stdout


def test_failed_ingest_leaves_no_thread(runner: CliRunner, tmp_path: Path, db: Path) -> None:
    lines = [json.dumps(m) for m in MESSAGES * 20]
    lines[70] = '{"role":"user","content":"x","metadata":{"v":NaN}}'
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = invoke(runner, "ingest", path, "--db", db, "--embedder", "hashing")
    assert_clean_failure(result, 1, f"{path}: line 71: bad 'metadata'")
    assert "Traceback" not in result.stderr
    lines[70] = json.dumps(MESSAGES[0])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    again = invoke(runner, "ingest", path, "--db", db, "--embedder", "hashing")
    assert again.exit_code == 0, again.output
    assert "Ingested 80 messages into 1 thread in" in again.stdout


def test_a_failed_thread_is_not_written_and_resume_continues(
    runner: CliRunner, tmp_path: Path, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each thread is one transaction: a failure keeps the threads before it, leaves
    nothing of the failed one, and --resume continues (issue 15 items 5 and 7)."""

    path = _locomo_file(tmp_path, sessions=3)
    real = OracleAgentMemory.write_thread
    calls: list[str] = []

    def flaky(self: OracleAgentMemory, thread_id: str, *args: Any, **kwargs: Any) -> Any:
        calls.append(thread_id)
        if thread_id == "conv-x-s2":
            raise RuntimeError("disk on fire")
        return real(self, thread_id, *args, **kwargs)

    monkeypatch.setattr(OracleAgentMemory, "write_thread", flaky)
    result = invoke(runner, "ingest", path, "--db", db, "--embedder", "hashing")
    assert_clean_failure(
        result, 1, "thread 'conv-x-s2' was not written: disk on fire; the 1 thread before"
    )
    listed = invoke(runner, "threads", "--db", db)
    assert "conv-x-s1" in listed.stdout and "conv-x-s2" not in listed.stdout
    monkeypatch.setattr(OracleAgentMemory, "write_thread", real)
    again = invoke(runner, "ingest", path, "--db", db, "--embedder", "hashing")
    assert_clean_failure(again, 1, "use --resume to skip them")
    resumed = invoke(runner, "ingest", path, "--db", db, "--embedder", "hashing", "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert "Ingested 2 messages into 2 threads" in resumed.stdout
    assert "Skipped 1 thread already in the database (--resume)." in resumed.stdout


def test_a_replace_that_fails_keeps_the_old_thread(
    runner: CliRunner, chat: Path, ingested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    def fail(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(writes, "insert_planned", fail)
    chat.write_text(json.dumps({"role": "user", "content": "new text"}) + "\n", encoding="utf-8")
    result = invoke(runner, "ingest", chat, "--db", ingested, *REPLACE_AS_U1)
    assert_clean_failure(result, 1, "thread 'chat' was not written: disk on fire")
    listed = invoke(runner, "threads", "--db", ingested)
    row = next(line for line in listed.stdout.splitlines() if line.startswith("chat"))
    assert " 4 " in row  # the old thread, whole


def test_unexpected_errors_are_one_line(
    runner: CliRunner, ingested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr("oam_core.store.sqlite.SQLiteMemoryStore.search", boom)
    result = invoke(runner, "search", "dog", "--db", ingested, "--embedder", "hashing")
    assert_clean_failure(result, 1, "RuntimeError: boom")
    debug = runner.invoke(
        app, ["--debug", "search", "dog", "--db", str(ingested), "--embedder", "hashing"]
    )
    assert isinstance(debug.exception, RuntimeError)


def test_deeply_nested_file_fails_cleanly(runner: CliRunner, tmp_path: Path, db: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 200000 + "]" * 200000, encoding="utf-8")
    result = invoke(runner, "ingest", path, "--db", db, "--embedder", "hashing")
    assert_clean_failure(result, 1, f"{path}: the JSON is nested too deeply")


def test_version(runner: CliRunner) -> None:
    result = invoke(runner, "--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"oam {_version()}"
    assert result.stdout.startswith("oam 0.")


def test_dimension_mismatch_names_the_recorded_embedder(runner: CliRunner, ingested: Path) -> None:
    result = invoke(runner, "search", "dog", "--db", ingested, "--embedder", "hashing/32")
    assert_clean_failure(result, 1, "holds vectors of embedder 'hashing/64' (64 dimensions)")
    assert "--embedder hashing/64" in result.stderr


def test_demo_reingests_an_incomplete_thread(runner: CliRunner, db: Path) -> None:
    store = SQLiteMemoryStore(db, embedder=resolve_embedder("hashing"), vector_dim=None)
    try:
        OracleAgentMemory(store=store, extract_memories=False).create_thread(
            thread_id=DEMO_THREAD, user_id="demo-user"
        )
    finally:
        store.close()
    result = invoke(runner, "demo", "--db", db, "--embedder", "hashing")
    assert result.exit_code == 0, result.output
    assert f"Ingested 260 messages into thread {DEMO_THREAD}" in result.stdout
    listed = invoke(runner, "threads", "--db", db)
    assert "260" in listed.stdout


def test_a_command_run_in_process_leaves_logging_as_it_found_it(
    runner: CliRunner, ingested: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hosted embedder's retry logs are quiet during the command only."""
    import logging

    import oam_core.clicommon

    seen: list[int] = []

    def resolve(name: str) -> Any:
        seen.append(logging.getLogger("oam").level)
        return resolve_embedder("hashing")

    monkeypatch.setattr(oam_core.clicommon, "resolve_embedder", resolve)
    library, litellm = logging.getLogger("oam"), logging.getLogger("LiteLLM")
    before = (library.level, litellm.level, list(library.handlers))
    library.setLevel(logging.INFO)
    try:
        hosted = ("--embedder", "openai/text-embedding-3-small")
        result = invoke(runner, "search", "Biscuit", "--db", ingested, *hosted)
        assert result.exit_code == 0, result.output
        assert seen == [logging.ERROR]
        assert (library.level, litellm.level) == (logging.INFO, before[1])
        assert library.handlers == before[2]
    finally:
        library.setLevel(before[0])


@pytest.mark.parametrize(
    ("command", "names"),
    [
        (["search"], ["QUERY"]),
        (["card"], ["THREAD_ID"]),
        (["memories", "update"], ["MEMORY_ID", "CONTENT"]),
        (["copy"], ["SRC", "DST"]),
        (["import"], ["FILE"]),
    ],
)
def test_usage_lines_name_arguments_as_the_help_text_does(
    runner: CliRunner, command: list[str], names: list[str]
) -> None:
    usage = invoke(runner, *command, "--help").output.splitlines()[0]
    for name in names:
        assert name in usage, usage
        assert name.lower() not in usage, usage
