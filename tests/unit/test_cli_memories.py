"""``oam memories list|show|update|invalidate|delete`` (docs/cli.md#memories, docs/versions.md):
the memories that hold now and every version with ``--all``, a memory's history, a
correction as a new version with a reason, an invalidation, a delete; errors are one
line (typer's CliRunner over a real SQLite file, hashing embedder)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from oam_core import OracleAgentMemory
from oam_core.cli import app
from tests.unit.test_layers import _imports

EMBEDDER = "hashing/64"


def invoke(runner: CliRunner, *args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def _open(db: Path) -> OracleAgentMemory:
    return OracleAgentMemory.open(str(db), embedder=EMBEDDER, extract_memories=False)


@pytest.fixture
def store(tmp_path: Path) -> tuple[Path, str, str, str]:
    """A store with a two-version memory (Lisbon, then Porto) and a car memory."""
    db = tmp_path / "oam.db"
    with _open(db) as memory:
        lisbon = memory.add_memory("Alice lives in Lisbon", user_id="alice", agent_id="helper")
        porto = memory.update_memory(lisbon, "Alice lives in Porto", reason="moved north")
        car = memory.add_memory("Alice has a red car", user_id="alice", metadata={"k": 1})
    return db, lisbon, porto, car


def _error(result: Result, text: str) -> None:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and text in lines[0], lines


def test_list_shows_what_holds_now_and_every_version_with_all(
    runner: CliRunner, store: tuple[Path, str, str, str]
) -> None:
    db, lisbon, porto, car = store
    now = invoke(runner, "memories", "list", "--db", db)
    assert now.exit_code == 0, now.output
    assert porto in now.stdout and car in now.stdout and lisbon not in now.stdout
    assert "Alice lives in Porto" in now.stdout
    every = invoke(runner, "memories", "list", "--db", db, "--all", "--json")
    rows = [json.loads(line) for line in every.stdout.splitlines()]
    assert {r["id"] for r in rows} == {lisbon, porto, car}
    old = next(r for r in rows if r["id"] == lisbon)
    assert old["valid_until"] is not None and old["versions"]["superseded_by"] == porto
    users = invoke(runner, "memories", "list", "--db", db, "--user", "nobody")
    assert "No memories hold now" in users.stdout
    typed = invoke(runner, "memories", "list", "--db", db, "--type", "fact")
    assert typed.exit_code == 0 and "No memories hold now" in typed.stdout
    bad = invoke(runner, "memories", "list", "--db", db, "--type", "message")
    assert bad.exit_code == 2 and "--type must be one of" in bad.stderr


def test_list_all_marks_ended_and_planned_versions(
    runner: CliRunner, store: tuple[Path, str, str, str]
) -> None:
    db, lisbon, porto, car = store
    with _open(db) as memory:
        plan = memory.update_memory(car, "Alice has a blue car", valid_from="2999-01-01")
    every = invoke(runner, "memories", "list", "--db", db, "--all")
    assert every.exit_code == 0, every.output
    lines = {line.split()[0]: line for line in every.stdout.splitlines() if "  valid " in line}
    assert lines[lisbon].split("  ")[2].endswith("(ended)")
    assert lines[plan].split("  ")[2].endswith("(planned)")
    # The car holds now, until the plan begins: neither ended nor planned.
    assert not lines[car].split("  ")[2].endswith(")"), lines[car]
    assert not lines[porto].split("  ")[2].endswith(")"), lines[porto]


def test_show_prints_the_window_and_the_history(
    runner: CliRunner, store: tuple[Path, str, str, str]
) -> None:
    db, lisbon, porto, _car = store
    shown = invoke(runner, "memories", "show", lisbon, "--db", db)
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert "History (2 versions):" in out
    assert out.index("1. " + lisbon) < out.index("2. " + porto)
    assert "reason: moved north" in out and f"{lisbon}  valid until" in out
    as_json = json.loads(invoke(runner, "memories", "show", porto, "--db", db, "--json").stdout)
    assert [v["id"] for v in as_json["history"]] == [lisbon, porto]
    assert as_json["valid_until"] is None
    _error(invoke(runner, "memories", "show", "no-such", "--db", db), "no memory 'no-such'")


def test_update_writes_a_new_version_and_refuses_an_old_one(
    runner: CliRunner, store: tuple[Path, str, str, str]
) -> None:
    db, lisbon, porto, _car = store
    result = invoke(
        runner, "memories", "update", porto, "Alice lives in Berlin", "--db", db,
        "--reason", "moved abroad", "--valid-from", "2099-05-01T00:00:00Z",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    new_id = result.stdout.strip()
    with _open(db) as memory:
        history = memory.get_memory_history(new_id)
        assert [r.id for r in history] == [lisbon, porto, new_id]
        assert history[-1].content == "Alice lives in Berlin"
        assert history[-1].valid_from == "2099-05-01T00:00:00+00:00"
        assert history[1].valid_until == "2099-05-01T00:00:00+00:00"
        assert history[1].metadata is not None
        assert history[1].metadata["$agent_memory"]["reason"] == "moved abroad"
    _error(invoke(runner, "memories", "update", lisbon, "x", "--db", db), "memory_id")
    _error(invoke(runner, "memories", "update", "no-such", "x", "--db", db), "no memory")
    _error(
        invoke(runner, "memories", "update", new_id, "y", "--db", db, "--valid-from", "soon"),
        "--valid-from",
    )


def test_invalidate_then_delete(runner: CliRunner, store: tuple[Path, str, str, str]) -> None:
    db, _lisbon, _porto, car = store
    done = invoke(runner, "memories", "invalidate", car, "--db", db, "--reason", "sold it")
    assert done.exit_code == 0 and f"Invalidated {car}." in done.stdout
    again = invoke(runner, "memories", "invalidate", car, "--db", db)
    assert again.exit_code == 0 and "is not current (no longer held" in again.stdout
    assert car not in invoke(runner, "memories", "list", "--db", db).stdout
    with _open(db) as memory:
        record = memory.store.get("memory", car)
        assert record is not None and record.valid_until is not None
        assert record.metadata is not None and record.metadata["k"] == 1
    deleted = invoke(runner, "memories", "delete", car, "--db", db)
    assert deleted.exit_code == 0 and f"Deleted {car}." in deleted.stdout
    with _open(db) as memory:
        assert memory.store.get("memory", car) is None
    _error(invoke(runner, "memories", "delete", car, "--db", db), "no memory")


def test_a_missing_database_is_refused_and_every_command_takes_schema_policy(
    runner: CliRunner, tmp_path: Path
) -> None:
    result = invoke(runner, "memories", "list", "--db", tmp_path / "none.db")
    assert result.exit_code == 2 and "no such database" in result.stderr
    assert not (tmp_path / "none.db").exists()
    for command in ("list", "show", "update", "invalidate", "delete"):
        help_text = invoke(runner, "memories", command, "--help")
        assert help_text.exit_code == 0 and "--schema-policy" in help_text.stdout, command


def test_the_commands_use_public_names() -> None:
    assert {d for d in _imports("oam_core.memorycli") if d.startswith("oam_core.store")} == set()


def test_search_reads_memories_that_hold_now_unless_told_a_time_or_every_version(
    runner: CliRunner, store: tuple[Path, str, str, str]
) -> None:
    db, lisbon, porto, _ = store
    base = ("search", "Alice lives", "--db", db, "--embedder", EMBEDDER, "--json", "-k", "5")

    def found(*extra: str) -> set[str]:
        result = invoke(runner, *base, *extra)
        assert result.exit_code == 0, result.output
        return {json.loads(line)["id"] for line in result.stdout.splitlines()}

    now = found()
    assert porto in now and lisbon not in now
    every = found("--all-versions")
    assert {lisbon, porto} <= every
    old = invoke(runner, "memories", "show", lisbon, "--db", db, "--json")
    started = json.loads(old.stdout.splitlines()[0])["created_at"]
    then = found("--as-of", started)
    assert lisbon in then and porto not in then
    both = invoke(runner, *base, "--as-of", started, "--all-versions")
    assert both.exit_code == 2 and "exclude each other" in both.stderr
    bad = invoke(runner, *base, "--as-of", "not a time")
    assert bad.exit_code != 0 and "as_of" in bad.stderr and "Traceback" not in bad.output


def test_list_limit_gives_the_newest_records_of_one_batch(
    runner: CliRunner, tmp_path: Path
) -> None:
    """Records of one ``add`` share one created_at: the newest ``--limit`` are the last
    written (insertion order), not a random-id choice among the tied ones (the CLI,
    the MCP tool and the inspector read one order, ``memory/newest.py``)."""
    db = tmp_path / "batch.db"
    with _open(db) as memory:
        ids = memory.store.add([f"fact {i}" for i in range(120)], "fact", user_ids="alice")
        extra = memory.store.add(["one memory"], "memory", user_ids="alice")
    listed = invoke(runner, "memories", "list", "--db", db, "--limit", "50", "--json")
    assert listed.exit_code == 0, listed.output
    got = [json.loads(line)["id"] for line in listed.stdout.splitlines()]
    assert got == [*ids[-49:], *extra]


def test_newest_first_lists_are_prefixes_of_one_order(tmp_path: Path) -> None:
    from oam_core.memory.newest import newest_first

    with _open(tmp_path / "n.db") as memory:
        facts = memory.store.add([f"fact {i}" for i in range(30)], "fact")
        mems = memory.store.add([f"memory {i}" for i in range(30)], "memory")
        whole, more = newest_first(memory.store, ["fact", "memory"], 60)
        assert not more and sorted(r.id for r in whole) == sorted(facts + mems)
        for n in (1, 7, 25, 59):
            part, more = newest_first(memory.store, ["memory", "fact"], n)
            assert [r.id for r in part] == [r.id for r in whole[:n]] and more
        assert [r.id for r in whole if r.record_type == "memory"] == mems[::-1]


def test_json_reports_the_managed_mark_apart_from_versions(tmp_path: Path) -> None:
    """A record managed by its writer (docs/memory-pipeline.md) shows ``managed: true``;
    ``versions`` keeps the library's version marks only (None for a plain memory)."""
    db = tmp_path / "oam.db"
    with _open(db) as memory:
        marked = memory.add_memory(
            "Bob likes chess", user_id="bob", metadata={"$agent_memory": {"managed": True}, "k": 1}
        )
        plain = memory.add_memory("Bob likes tea", user_id="bob")
        newer = memory.update_memory(marked, "Bob likes go", reason="changed")
    runner = CliRunner()
    rows = {}
    for rid in (marked, plain, newer):
        shown = invoke(runner, "memories", "show", rid, "--db", db, "--json")
        assert shown.exit_code == 0, shown.output
        rows[rid] = json.loads(shown.stdout)
    assert (rows[plain]["managed"], rows[plain]["versions"]) == (False, None)
    assert rows[marked]["managed"] is True and rows[marked]["metadata"] == {"k": 1}
    assert rows[marked]["versions"]["superseded_by"] == newer
    assert "managed" not in rows[marked]["versions"]
    assert rows[newer]["managed"] is True and rows[newer]["versions"]["supersedes"] == [marked]
