"""Issue 15, "first hour with oam": what a new user meets on the command line.

Each test names the item it covers: (1) one default strategy, (2) the store knows its
embedder, (3) schema policies, (4) labelled scores, (5) speaker names, samples,
resume, (7) CLI details. Item 6 (input checks) is in test_cli.py and test_ingest.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from test_cli import MESSAGES, _locomo_file, assert_clean_failure, invoke
from typer.testing import CliRunner

from oam_core import OracleAgentMemory, SearchStrategy
from oam_core.cli import DEFAULT_AGENT, DEFAULT_USER


def _json(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


# -- (1) the CLI and the library rank the same file alike ---------------------------


def test_cli_and_open_rank_alike(runner: CliRunner, chat: Path, tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    assert invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing").exit_code == 0
    found = invoke(runner, "search", "dog beach Lisbon", "--db", db, "--json")
    rows = _json(found.stdout)
    assert {r["score_kind"] for r in rows} == {"hybrid"}
    with OracleAgentMemory.open(f"sqlite:///{db}", embedder="hashing") as memory:
        assert memory.store.search_strategy is SearchStrategy.HYBRID
        library = memory.store.search("dog beach Lisbon", 5)
    assert [r["id"] for r in rows] == [record.id for record, _ in library]
    assert [r["distance"] for r in rows] == [d for _, d in library]


# -- (2) the store knows its embedder -------------------------------------------------


def test_the_recorded_embedder_is_the_default(
    runner: CliRunner, chat: Path, tmp_path: Path
) -> None:
    db = tmp_path / "x.db"
    ingest = invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing/16")
    assert "embedder: hashing/16." in ingest.stdout
    found = invoke(runner, "search", "Biscuit", "--db", db, "--k", "1")  # no --embedder
    assert found.exit_code == 0, found.output
    assert "Biscuit" in found.stdout


def test_another_embedder_of_the_same_dimension_is_an_error(
    runner: CliRunner, chat: Path, tmp_path: Path
) -> None:
    db = tmp_path / "x.db"
    invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing/384")
    result = invoke(runner, "search", "dog", "--db", db, "--embedder", "local")
    assert_clean_failure(result, 1, "holds vectors of embedder 'hashing/384' (384 dimensions)")
    assert "'local/all-MiniLM-L6-v2' (384 dimensions)" in result.stderr
    forced = invoke(
        runner,
        "search",
        "dog",
        "--db",
        db,
        "--embedder",
        "hashing/384",
        "--allow-embedder-change",
    )
    assert forced.exit_code == 0


def test_ingest_without_vectors_then_reindex(runner: CliRunner, chat: Path, tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    ingest = invoke(runner, "ingest", chat, "--db", db, "--embedder", "none")
    assert ingest.exit_code == 0, ingest.output
    assert "embedder: none (keyword search only)." in ingest.stdout
    keyword = invoke(runner, "search", "Biscuit", "--db", db, "--embedder", "none", "--json")
    assert {r["score_kind"] for r in _json(keyword.stdout)} == {"keyword"}
    warned = invoke(runner, "search", "Biscuit", "--db", db, "--embedder", "hashing")
    assert warned.exit_code == 0
    [warning] = [line for line in warned.stderr.splitlines() if line.strip()]
    assert warning.startswith("Warning: 4 record(s)") and "oam reindex" in warning
    done = invoke(runner, "reindex", "--db", db, "--embedder", "hashing")
    assert done.stdout.strip() == f"Embedded 4 records with hashing/64 in {db}."
    again = invoke(runner, "reindex", "--db", db)
    assert "Nothing to embed" in again.stdout
    quiet = invoke(runner, "search", "Biscuit", "--db", db, "--strategy", "vector")
    assert quiet.exit_code == 0 and quiet.stderr == "" and "Biscuit" in quiet.stdout


# -- (3) schema policies ---------------------------------------------------------------


def test_schema_policy_option(runner: CliRunner, chat: Path, tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    result = invoke(
        runner,
        "ingest",
        chat,
        "--db",
        db,
        "--embedder",
        "hashing",
        "--schema-policy",
        "require_existing",
    )
    assert_clean_failure(result, 1, "schema-policy require_existing, but no database exists")
    created = invoke(
        runner,
        "ingest",
        chat,
        "--db",
        db,
        "--embedder",
        "hashing",
        "--schema-policy",
        "CREATE_IF_EMPTY",
    )
    assert created.exit_code == 0, created.output
    assert "--schema-policy" in invoke(runner, "ingest", "--help").stdout


# -- (4) labelled scores ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("strategy", "kind"), [("vector", "cosine"), ("keyword", "keyword"), ("hybrid", "hybrid")]
)
def test_scores_are_labelled(
    runner: CliRunner, chat: Path, tmp_path: Path, strategy: str, kind: str
) -> None:
    db = tmp_path / "x.db"
    invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing")
    text = invoke(runner, "search", "Biscuit dog", "--db", db, "--strategy", strategy, "-k", "2")
    first = text.stdout.splitlines()[0]
    assert first.startswith(f" 1. {kind} ")
    rows = _json(
        invoke(runner, "search", "Biscuit dog", "--db", db, "--strategy", strategy, "--json").stdout
    )
    assert all(r["score"] == pytest.approx(1 - r["distance"]) for r in rows)
    assert f"{kind} {rows[0]['score']:.2f}" in first
    assert [r["score"] for r in rows] == sorted((r["score"] for r in rows), reverse=True)


# -- (5) speaker names, samples, resume --------------------------------------------------


def test_speaker_names_are_shown(runner: CliRunner, tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    path = _locomo_file(tmp_path, sessions=2)
    assert invoke(runner, "ingest", path, "--db", db, "--embedder", "hashing").exit_code == 0
    found = invoke(runner, "search", "pottery 2", "--db", db, "-k", "1")
    assert "    Ben (assistant): Ben talks about pottery 2." in found.stdout
    rows = _json(invoke(runner, "search", "pottery", "--db", db, "--json").stdout)
    assert {r["name"] for r in rows} == {"Ana", "Ben"}
    listed = invoke(runner, "threads", "--db", db)
    assert "speakers" in listed.stdout.splitlines()[0]
    row = next(line for line in listed.stdout.splitlines() if line.startswith("conv-x-s1"))
    assert " Ana " in row
    card = invoke(runner, "card", "conv-x-s2", "--db", db)
    assert "Ben (assistant, 2023-05-02T13:56:00+00:00): Ben talks about pottery 2." in card.stdout


def test_group_chat_names_from_a_jsonl_file(runner: CliRunner, tmp_path: Path) -> None:
    lines = [
        {"role": "user", "name": "Caroline", "content": "I adopted a cat named Mochi."},
        {"role": "user", "name": "Mel", "content": "I started painting."},
    ]
    path = tmp_path / "group.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in lines), encoding="utf-8")
    db = tmp_path / "x.db"
    invoke(runner, "ingest", path, "--db", db, "--embedder", "hashing")
    found = invoke(runner, "search", "Caroline cat", "--db", db, "-k", "1")
    assert "Caroline (user): I adopted a cat named Mochi." in found.stdout


def test_sample_picks_one_conversation(runner: CliRunner, tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    path = _locomo_file(tmp_path, sessions=2, samples=("conv-a", "conv-b"))
    result = invoke(
        runner, "ingest", path, "--db", db, "--embedder", "hashing", "--sample", "conv-b"
    )
    assert result.exit_code == 0, result.output
    assert "into 2 threads" in result.stdout and "User: conv-b;" in result.stdout
    listed = invoke(runner, "threads", "--db", db).stdout
    assert "conv-b-s1" in listed and "conv-a" not in listed
    missing = invoke(
        runner, "ingest", path, "--db", db, "--embedder", "hashing", "--sample", "conv-z"
    )
    assert_clean_failure(missing, 1, "no sample 'conv-z'; the file holds conv-a, conv-b")


def test_resume_refuses_a_thread_that_differs(
    runner: CliRunner, chat: Path, tmp_path: Path
) -> None:
    db = tmp_path / "x.db"
    invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing")
    chat.write_text(json.dumps(MESSAGES[0]) + "\n", encoding="utf-8")
    result = invoke(runner, "ingest", chat, "--db", db, "--resume")
    assert_clean_failure(
        result, 1, "is in the database with 4 messages, the file has 1; use --replace"
    )
    both = invoke(runner, "ingest", chat, "--db", db, "--resume", "--replace")
    assert_clean_failure(both, 2, "exclude each other")


# -- (7) CLI details ------------------------------------------------------------------------


def test_a_stable_default_user_and_agent(runner: CliRunner, chat: Path, tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    result = invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing")
    assert f"User: {DEFAULT_USER}; agent: {DEFAULT_AGENT};" in result.stdout
    found = invoke(runner, "search", "Biscuit", "--db", db, "--user", DEFAULT_USER, "--json")
    assert {r["user_id"] for r in _json(found.stdout)} == {DEFAULT_USER}


def test_replace_is_a_flag_in_help_and_debug_goes_anywhere(
    runner: CliRunner, chat: Path, tmp_path: Path
) -> None:
    help_text = invoke(runner, "ingest", "--help").stdout
    assert "<bool>" not in help_text
    assert "--replace " in help_text and "--resume " in help_text
    db = tmp_path / "x.db"
    result = invoke(runner, "ingest", chat, "--db", db, "--embedder", "hashing", "--debug")
    assert result.exit_code == 0, result.output
    listed = invoke(runner, "threads", "--debug", "--db", db)
    assert listed.exit_code == 0 and "chat" in listed.stdout


def test_one_message_is_singular(runner: CliRunner, tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(MESSAGES[0]) + "\n", encoding="utf-8")
    result = invoke(runner, "ingest", path, "--db", tmp_path / "x.db", "--embedder", "hashing")
    assert "Ingested 1 message into 1 thread in" in result.stdout


def test_tilde_is_expanded_and_a_missing_directory_is_named(
    runner: CliRunner, chat: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    result = invoke(runner, "ingest", chat, "--db", "~/home.db", "--embedder", "hashing")
    assert result.exit_code == 0, result.output
    assert (tmp_path / "home.db").exists()
    missing = invoke(runner, "ingest", chat, "--db", "~/nowhere/x.db", "--embedder", "hashing")
    assert_clean_failure(missing, 2, f"the directory {tmp_path / 'nowhere'} does not exist")


def test_user_replaces_the_locomo_sample_id(runner: CliRunner, tmp_path: Path) -> None:
    db = tmp_path / "x.db"
    path = _locomo_file(tmp_path, sessions=1)
    result = invoke(runner, "ingest", path, "--db", db, "--embedder", "hashing", "--user", "ana")
    assert "User: ana;" in result.stdout
    row = next(line for line in invoke(runner, "threads", "--db", db).stdout.splitlines()[1:])
    assert row.split()[:2] == ["conv-x-s1", "ana"]
