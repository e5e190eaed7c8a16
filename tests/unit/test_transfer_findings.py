"""Transfer behaviour a new user tripped on (export/import/copy/backup trial): the
embedder identity after a mem0 import or a re-embedding import, mem0 fields kept,
and one-line CLI messages naming the argument (docs/transfer.md, docs/migrating.md,
docs/cli.md#moving-memory-between-stores). Real SQLite files, the hashing embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import assert_clean_failure, invoke
from typer.testing import CliRunner

from oam_core.apis.batch import PendingRecordBatch
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import InvalidArgumentError
from oam_core.store.sqlite import SQLiteMemoryStore
from oam_core.store.threads import thread_store
from oam_core.transfer import TransferError, export_store, import_mem0, import_store
from oam_core.transfer.cli import _drop_if_empty

MEM0 = {
    "results": [
        {"id": "m-1", "memory": "Loves hiking", "user_id": "alice"},
        {"id": "m-2", "memory": "Vegetarian", "user_id": "alice"},
    ]
}


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def mem0_file(tmp_path: Path) -> Path:
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(MEM0), encoding="utf-8")
    return path


def _added_identity(tmp_path: Path, dim: int) -> object:
    """The identity a plain ``add`` of the mem0 texts records."""
    with SQLiteMemoryStore(str(tmp_path / f"plain{dim}.db"), embedder=HashingEmbedder(dim)) as s:
        s.add([m["memory"] for m in MEM0["results"]], "memory")
        return s.embedder_identity


def test_mem0_import_records_the_embedder_as_add_does(mem0_file: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    with SQLiteMemoryStore(db, embedder=HashingEmbedder(32)) as store:
        import_mem0(store, mem0_file)
        assert store.embedder_identity == _added_identity(tmp_path, 32)
    with SQLiteMemoryStore(db) as store:  # reopened: the recorded embedder
        assert store.embedder_identity == _added_identity(tmp_path, 32)
        export_store(store, tmp_path / "d.jsonl")
    head = json.loads((tmp_path / "d.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert (head["embedder"]["id"], head["embedder"]["dimension"]) == ("hashing/32", 32)


def test_reembedding_import_records_the_target_embedder(mem0_file: Path, tmp_path: Path) -> None:
    with SQLiteMemoryStore(str(tmp_path / "m.db"), embedder=HashingEmbedder(32)) as store:
        import_mem0(store, mem0_file)
        export_store(store, tmp_path / "d.jsonl")
    db = str(tmp_path / "r.db")
    with SQLiteMemoryStore(db, embedder=HashingEmbedder(16)) as store:
        import_store(store, tmp_path / "d.jsonl", reembed=True)
        assert store.embedder_identity == _added_identity(tmp_path, 16)
    with SQLiteMemoryStore(db) as store:
        assert store.embedder_identity == _added_identity(tmp_path, 16)
    with SQLiteMemoryStore(db, embedder=HashingEmbedder(16)) as store:
        assert [r[0].id for r in store.search("hiking", 1, record_types=["memory"])] == ["m-1"]


def test_cli_mem0_import_then_search_and_rerun_without_embedder(
    runner: CliRunner, mem0_file: Path, tmp_path: Path
) -> None:
    db = tmp_path / "m.db"
    first = invoke(runner, "import", mem0_file, "--from", "mem0", "--db", db, "--create",
                   "--embedder", "hashing")  # fmt: skip
    assert first.exit_code == 0, first.output
    found = invoke(runner, "search", "hiking", "--db", db)
    assert found.exit_code == 0, found.output
    assert "Loves hiking" in found.stdout
    again = invoke(runner, "import", mem0_file, "--from", "mem0", "--db", db,
                   "--on-conflict", "skip")  # fmt: skip
    assert again.exit_code == 0, again.output
    assert "2 skipped as existing" in again.stdout


def test_cli_reembed_import_then_search_without_embedder(
    runner: CliRunner, mem0_file: Path, tmp_path: Path
) -> None:
    src = tmp_path / "m.db"
    assert invoke(runner, "import", mem0_file, "--from", "mem0", "--db", src, "--create",
                  "--embedder", "hashing").exit_code == 0  # fmt: skip
    dump = tmp_path / "d.jsonl"
    assert invoke(runner, "export", dump, "--db", src).exit_code == 0
    dst = tmp_path / "r.db"
    done = invoke(runner, "import", dump, "--db", dst, "--create", "--embedder", "hashing/32",
                  "--reembed")  # fmt: skip
    assert done.exit_code == 0, done.output
    found = invoke(runner, "search", "hiking", "--db", dst)
    assert found.exit_code == 0, found.output
    assert "Loves hiking" in found.stdout


def test_mem0_keeps_the_users_metadata_expiry_and_platform_fields(tmp_path: Path) -> None:
    items = [
        {"id": "c", "memory": "x", "hash": "h1", "metadata": {"mem0": "user value"},
         "expiration_date": "2099-01-31", "categories": ["food"], "immutable": True},
        {"id": "d", "memory": "y", "hash": "h2", "metadata": {"mem0": {"hash": "mine", "k": 1}},
         "expiration_date": "2099-01-31T10:00:00+02:00"},
        {"id": "e", "memory": "z", "expiration_date": "2001-01-01"},
    ]  # fmt: skip
    path = tmp_path / "clash.json"
    path.write_text(json.dumps({"results": items}), encoding="utf-8")
    with SQLiteMemoryStore(str(tmp_path / "m.db"), embedder=HashingEmbedder(32)) as store:
        summary = import_mem0(store, path)
        assert (summary.records, summary.skipped_expired) == ({"memory": 2}, 1)
        c, d = store.list("memory")
    assert c.metadata == {
        "mem0": "user value",
        "$agent_memory": {"mem0": {"hash": "h1", "categories": ["food"], "immutable": True}},
    }
    assert c.expires_at == "2099-02-01T00:00:00.000000+00:00"  # the end of that day
    assert d.metadata == {
        "mem0": {"hash": "mine", "k": 1},
        "$agent_memory": {"mem0": {"hash": "h2"}},
    }
    assert d.expires_at == "2099-01-31T08:00:00.000000+00:00"


def test_mem0_metadata_with_the_reserved_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text(
        json.dumps([{"id": "c", "memory": "x", "metadata": {"$agent_memory": {}}}]),
        encoding="utf-8",
    )
    with SQLiteMemoryStore(str(tmp_path / "m.db"), embedder=HashingEmbedder(32)) as store:
        with pytest.raises(TransferError, match=r"memories\[0\]\.metadata\['\$agent_memory'\]"):
            import_mem0(store, path)
        assert store.list("memory") == []


def test_mem0_keeps_the_managed_mark_beside_its_fields(tmp_path: Path) -> None:
    """The managed mark is the one reserved object a user's metadata may hold; mem0's
    own fields join it instead of replacing it (trial 43 f04)."""
    mark = {"$agent_memory": {"managed": True}}
    items = [
        {"id": "plain", "memory": "x", "metadata": mark},
        {"id": "hashed", "memory": "y", "hash": "abc", "metadata": {**mark, "k": 1}},
    ]
    path = tmp_path / "managed.json"
    path.write_text(json.dumps(items), encoding="utf-8")
    with SQLiteMemoryStore(str(tmp_path / "m.db"), embedder=HashingEmbedder(32)) as store:
        import_mem0(store, path)
        stored = {r.id: r.metadata for r in store.list("memory")}
    assert stored == {
        "plain": {"$agent_memory": {"managed": True}},
        "hashed": {"k": 1, "$agent_memory": {"managed": True, "mem0": {"hash": "abc"}}},
    }


@pytest.fixture
def facts_db(tmp_path: Path) -> Path:
    path = tmp_path / "oam.db"
    with SQLiteMemoryStore(str(path), embedder=HashingEmbedder(32)) as store:
        store.add(["f1", "f2", "f3"], "fact", record_ids=["f1", "f2", "f3"])
        store.add(["home"], "memory", record_ids=["home-1"], valid_from="2026-01-01T00:00:00Z")
        store.add(["hi"], "message", record_ids=["msg-1"])
    return path


def test_cli_names_the_argument_instead_of_raw_os_errors(
    runner: CliRunner, facts_db: Path, tmp_path: Path
) -> None:
    adir = tmp_path / "adir"
    adir.mkdir()
    backup = invoke(runner, "backup", "--db", facts_db, adir, "--overwrite")
    assert_clean_failure(backup, 1, f"destination: {str(adir)!r} is a directory")
    export = invoke(runner, "export", adir, "--db", facts_db)  # not "pass --overwrite"
    assert_clean_failure(export, 1, f"FILE: {str(adir)!r} is a directory; give a file name")
    export = invoke(runner, "export", "/proc/x.jsonl", "--db", facts_db)
    assert_clean_failure(export, 1, "destination: '/proc/x.jsonl' cannot be created")
    assert ".tmp" not in export.stderr  # /proc takes no new files
    backup = invoke(runner, "backup", "--db", facts_db, "/proc/b.db")
    assert_clean_failure(backup, 1, "destination: '/proc/b.db' cannot be created")
    assert "OperationalError" not in backup.stderr
    pg = invoke(runner, "backup", "--db", "postgresql://u:secret@localhost/db", tmp_path / "x.db")
    assert_clean_failure(pg, 1, "backup works on SQLite store files only")
    assert "secret" not in pg.stderr


def test_cli_messages_name_dump_fields_rows_and_directories(
    runner: CliRunner, facts_db: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "d.jsonl"
    assert invoke(runner, "export", dump, "--db", facts_db).exit_code == 0
    text = dump.read_text(encoding="utf-8")
    start = '"valid_from":"2026-01-01T00:00:00.000000+00:00"'
    assert start in text
    cases = {
        "window": (text.replace(start, start + ',"valid_until":"2025-01-01T00:00:00+00:00"'),
                   "valid_until must be no earlier than valid_from, got "
                   "valid_from=2026-01-01T00:00:00+00:00 and valid_until=2025-01-01T00:00:00+00:00"),
        "soon": (text.replace(start, '"valid_from":"soon"'),
                 "valid_from must be an ISO-8601 string, got 'soon'"),
        "message": (text.replace('"seq_no":0', '"seq_no":0,"valid_from":"2026-01-01T00:00:00Z"'),
                    "message records have no validity window; only memory, guideline, fact "
                    "and preference records take one, got 2026-01-01T00:00:00+00:00"),
    }  # fmt: skip
    for name, (bad, expected) in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text(bad, encoding="utf-8")
        result = invoke(runner, "import", path, "--db", tmp_path / f"{name}.db", "--create")
        assert_clean_failure(result, 1, expected)
        assert "--valid" not in result.stderr and "datetime(" not in result.stderr
    clash = tmp_path / "clash.db"
    with SQLiteMemoryStore(str(clash), embedder=HashingEmbedder(32)) as store:
        store.add(["f1"], "fact", record_ids=["f1"])
    copied = invoke(runner, "copy", facts_db, clash)
    assert_clean_failure(copied, 1, "source row 1: record id 'f1' (fact) already exists")
    assert "pass --on-conflict skip or replace" in copied.stderr
    for args in (("import", tmp_path), ("import", "--from", "mem0", tmp_path)):
        result = invoke(runner, *args, "--db", facts_db)
        assert_clean_failure(result, 1, f"FILE: {str(tmp_path)!r} is a directory")
    with SQLiteMemoryStore(str(facts_db)) as store, pytest.raises(InvalidArgumentError) as caught:
        import_store(store, tmp_path)
    assert str(caught.value) == f"source: {str(tmp_path)!r} is a directory, not a file"
    missing = invoke(runner, "backup", "--db", tmp_path / "missing.db", tmp_path / "b.db")
    assert_clean_failure(missing, 2, "--db: no such database file")


def test_cli_stderr_stays_empty_without_a_terminal(
    runner: CliRunner, facts_db: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "d.jsonl"
    for args in (
        ("export", dump, "--db", facts_db),
        ("import", dump, "--db", tmp_path / "t.db", "--create"),
        ("copy", facts_db, tmp_path / "c.db", "--create"),
    ):
        result = invoke(runner, *args)
        assert result.exit_code == 0, result.output
        assert result.stderr == ""


def test_a_failed_import_with_create_leaves_no_store_file(
    runner: CliRunner, facts_db: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "d.jsonl"
    assert invoke(runner, "export", dump, "--db", facts_db).exit_code == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(dump.read_text(encoding="utf-8").replace('"f2"', "oops", 1), encoding="utf-8")
    target = tmp_path / "new.db"
    failed = invoke(runner, "import", bad, "--db", target, "--create")
    assert_clean_failure(failed, 1, "not JSON")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("new.db")) == []
    mem0 = tmp_path / "bad.json"
    mem0.write_text(json.dumps([{"id": "x", "memory": 3}]), encoding="utf-8")
    failed = invoke(runner, "import", mem0, "--from", "mem0", "--db", target, "--create",
                    "--embedder", "hashing")  # fmt: skip
    assert_clean_failure(failed, 1, "memory must be a string")
    assert not target.exists()
    # a file holding committed rows stays, for a re-run with --on-conflict skip
    _drop_if_empty(facts_db)
    assert facts_db.exists()


def test_a_failed_copy_with_create_leaves_no_store_file(
    runner: CliRunner, facts_db: Path, tmp_path: Path
) -> None:
    target = tmp_path / "new.db"
    failed = invoke(runner, "copy", facts_db, target, "--create", "--embedder", "hashing/16")
    assert_clean_failure(failed, 1, "'hashing/32' (32 dimensions)")
    assert not target.exists()


def _dump_lines(tmp_path: Path, messages: bool = False) -> list[dict[str, object]]:
    """The parsed lines of a dump of two memories (and a thread of two messages)."""
    with SQLiteMemoryStore(str(tmp_path / "src.db"), embedder=HashingEmbedder(16)) as s:
        s.add(["likes tea", "plays chess"], "memory", user_ids="u")
        if messages:
            threads = thread_store(s)
            threads.create_thread_row("t1", user_id="u", agent_id="bot")
            batch = PendingRecordBatch(
                texts=["hi", "yo"], record_type="message", thread_ids="t1", roles="user"
            )
            threads.add_to_thread("t1", [batch])
        export_store(s, tmp_path / "src.jsonl")
    lines = (tmp_path / "src.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def _import_edited(tmp_path: Path, lines: list[dict[str, object]]) -> tuple[str, Path]:
    path = tmp_path / "edited.jsonl"
    path.write_text("".join(json.dumps(v) + "\n" for v in lines), encoding="utf-8")
    db = tmp_path / "dst.db"
    with SQLiteMemoryStore(str(db), embedder=HashingEmbedder(16)) as store:
        with pytest.raises((TransferError, InvalidArgumentError)) as info:
            import_store(store, path)
        assert store.list("memory") == []  # refused before anything was written
    return str(info.value), db


def test_import_refuses_a_negative_seq_no(tmp_path: Path) -> None:
    lines = _dump_lines(tmp_path, messages=True)
    msg = next(v for v in lines if v.get("record_type") == "message")
    msg["seq_no"] = -5
    text, _ = _import_edited(tmp_path, lines)
    assert "seq_no must be a non-negative integer or null, got -5" in text


def test_import_refuses_vectors_under_a_header_without_vectors(tmp_path: Path) -> None:
    lines = _dump_lines(tmp_path)
    lines[0]["embedder"] = None
    text, _ = _import_edited(tmp_path, lines)
    assert "the header says the dump holds no vectors" in text
    assert "vectors of 16 dimensions" in text
