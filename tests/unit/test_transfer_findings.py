"""Transfer behaviour a new user tripped on (export/import/copy/backup trial): the
embedder identity after a mem0 import or a re-embedding import, mem0 fields kept,
and one-line CLI messages naming the argument (docs/transfer.md, docs/migrating.md,
docs/cli.md#moving-memory-between-stores). Real SQLite files, the hashing embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import invoke
from typer.testing import CliRunner

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.sqlite import SQLiteMemoryStore
from oam_core.transfer import TransferError, export_store, import_mem0, import_store

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
