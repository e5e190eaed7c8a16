"""``oam export``, ``oam import``, ``oam copy`` and ``oam backup`` (docs/cli.md#moving-memory-between-stores):
real SQLite files through typer's CliRunner."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
from test_cli import assert_clean_failure, invoke
from typer.testing import CliRunner

from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.sqlite import SQLiteMemoryStore
from oam_core.store.threads import thread_store

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "src.db"
    with SQLiteMemoryStore(str(path), embedder=HashingEmbedder(32)) as store:
        thread_store(store).create_thread_row("t1", user_id="ana", config={"k": 1})
        store.add(
            ["hello there", "how are you"], "message", thread_ids="t1", user_ids="ana", roles="user"
        )
        store.add(["Ana has a dog"], "fact", user_ids="ana", record_ids="f-ana")
        store.add(["Ben drinks tea"], "fact", user_ids="ben", record_ids="f-ben")
    return path


def _facts(path: Path) -> list[str]:
    with SQLiteMemoryStore(str(path)) as store:
        return [r.id for r in store.list("fact", limit=None)]


def test_export_import_copy_backup(runner: CliRunner, source: Path, tmp_path: Path) -> None:
    dump = tmp_path / "d.jsonl.gz"
    exported = invoke(runner, "export", dump, "--db", source)
    assert exported.exit_code == 0, exported.output
    assert re.fullmatch(
        r"Exported \S+ -> \S+: 5 rows \(fact 2, message 2, thread 1\), 4 search rows, "
        r"0 skipped as existing, 0 skipped as expired, \d+ bytes in [\d.]+ s\n",
        exported.stdout,
    )
    target = tmp_path / "dst.db"
    missing = invoke(runner, "import", dump, "--db", target)
    assert_clean_failure(missing, 2, "no such database")
    imported = invoke(runner, "import", dump, "--db", target, "--create")
    assert imported.exit_code == 0, imported.output
    assert "Imported" in imported.stdout and "5 rows" in imported.stdout
    assert _facts(target) == ["f-ana", "f-ben"]
    clash = invoke(runner, "import", dump, "--db", target)
    assert_clean_failure(clash, 1, "already exists in the target store")
    assert "--on-conflict skip or replace" in clash.stderr
    skipped = invoke(runner, "import", dump, "--db", target, "--on-conflict", "skip")
    assert skipped.exit_code == 0 and "5 skipped as existing" in skipped.stdout
    copied = invoke(runner, "copy", source, tmp_path / "c.db", "--create", "--user", "ben")
    assert copied.exit_code == 0, copied.output
    assert _facts(tmp_path / "c.db") == ["f-ben"]
    backup = invoke(runner, "backup", tmp_path / "b.db", "--db", source)
    assert backup.exit_code == 0, backup.output
    assert _facts(tmp_path / "b.db") == ["f-ana", "f-ben"]
    again = invoke(runner, "backup", tmp_path / "b.db", "--db", source)
    assert_clean_failure(again, 1, "exists; pass --overwrite")


def test_another_embedder_needs_reembed(runner: CliRunner, source: Path, tmp_path: Path) -> None:
    dump = tmp_path / "d.jsonl"
    assert invoke(runner, "export", dump, "--db", source).exit_code == 0
    target = tmp_path / "t.db"
    SQLiteMemoryStore(str(target), embedder=HashingEmbedder(16)).close()
    with SQLiteMemoryStore(str(target), embedder=HashingEmbedder(16)) as store:
        store.add(["x"], "memory")  # records its embedder
    refused = invoke(runner, "import", dump, "--db", target)
    assert_clean_failure(refused, 1, "'hashing/32' (32 dimensions)")
    assert "--reembed" in refused.stderr
    done = invoke(runner, "import", dump, "--db", target, "--reembed")
    assert done.exit_code == 0, done.output
    assert _facts(target) == ["f-ana", "f-ben"]


def test_a_bad_line_names_it(runner: CliRunner, source: Path, tmp_path: Path) -> None:
    dump = tmp_path / "d.jsonl"
    assert invoke(runner, "export", dump, "--db", source).exit_code == 0
    lines = dump.read_bytes().splitlines()
    lines[3] = b"{oops"
    dump.write_bytes(b"\n".join(lines) + b"\n")
    result = invoke(runner, "import", dump, "--db", tmp_path / "t.db", "--create")
    assert_clean_failure(result, 1, "source line 4: not JSON")
    assert "committed before it: 0 rows" in result.stderr


def test_import_from_mem0(runner: CliRunner, tmp_path: Path) -> None:
    data = {
        "results": [
            {
                "id": "m-1",
                "memory": "Loves hiking",
                "user_id": "alice",
                "created_at": "2025-01-01T00:00:00Z",
            },
            {
                "id": "m-2",
                "memory": "Vegetarian",
                "user_id": "alice",
                "run_id": "r1",
                "metadata": {"a": 1},
            },
        ],
        "relations": [],
    }
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    db = tmp_path / "m.db"
    args = ("import", path, "--from", "mem0", "--db", db, "--create", "--embedder", "hashing")
    result = invoke(runner, *args)
    assert result.exit_code == 0, result.output
    assert "2 rows (memory 2)" in result.stdout
    with SQLiteMemoryStore(str(db)) as store:
        first, second = store.list("memory")
        assert (first.id, first.user_id, first.created_at) == (
            "m-1",
            "alice",
            "2025-01-01T00:00:00.000000+00:00",
        )
        assert (second.thread_id, second.metadata) == ("r1", {"a": 1})
    again = invoke(runner, *args, "--on-conflict", "skip")
    assert again.exit_code == 0 and "2 skipped as existing" in again.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"id": "x", "memory": 3}]), encoding="utf-8")
    failed = invoke(runner, "import", bad, "--from", "mem0", "--db", db, "--embedder", "hashing")
    assert_clean_failure(failed, 1, "memories[0] (x): memory must be a string")


@pytest.mark.parametrize("command", ["export", "import", "copy", "backup"])
def test_docs_describe_every_option(runner: CliRunner, command: str) -> None:
    """docs/cli.md names every option that ``--help`` lists for the command."""
    help_text = invoke(runner, command, "--help").stdout
    options = set(re.findall(r"(--[a-z][a-z-]+)", help_text)) - {"--help"}
    assert options, help_text
    page = (ROOT / "docs" / "cli.md").read_text("utf-8")
    section = page[page.index("## Moving memory between stores") :]
    assert f"oam {command}" in section
    assert {o for o in options if o not in section} == set()


def test_export_never_overwrites_a_file_or_the_store_unasked(
    runner: CliRunner, source: Path, tmp_path: Path
) -> None:
    before = source.read_bytes()
    # A user who takes the argument for the database: the store itself is not replaced.
    own = invoke(runner, "export", source, "--db", source)
    assert_clean_failure(own, 1, "exists; pass --overwrite")
    own = invoke(runner, "export", source, "--db", source, "--overwrite")
    assert_clean_failure(own, 1, "own database file")
    assert _facts(source) == ["f-ana", "f-ben"]
    other = tmp_path / "notes.jsonl"
    other.write_text("keep me\n", encoding="utf-8")
    refused = invoke(runner, "export", other, "--db", source)
    assert_clean_failure(refused, 1, "exists; pass --overwrite")
    assert other.read_text(encoding="utf-8") == "keep me\n"
    replaced = invoke(runner, "export", other, "--db", source, "--overwrite")
    assert replaced.exit_code == 0, replaced.output
    assert other.read_text(encoding="utf-8").startswith('{"format":')
    assert source.read_bytes()[:16] == before[:16]


def test_copy_refuses_a_store_onto_itself(runner: CliRunner, source: Path) -> None:
    for dst in (str(source), f"sqlite:///{source}"):
        copied = invoke(runner, "copy", str(source), dst, "--on-conflict", "replace")
        assert_clean_failure(copied, 1, "is the source store")
    assert _facts(source) == ["f-ana", "f-ben"]


def test_a_failed_export_leaves_an_existing_file_as_it_was(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oam_core import export_store
    from oam_core.transfer import format as fmt

    dump = tmp_path / "d.jsonl"
    dump.write_bytes(b"the previous dump\n")

    def broken(*args: object, **kwargs: object) -> bytes:
        raise RuntimeError("disk full")

    monkeypatch.setattr(fmt, "header", broken)
    with SQLiteMemoryStore(str(source)) as store, pytest.raises(RuntimeError, match="disk full"):
        export_store(store, dump)
    assert dump.read_bytes() == b"the previous dump\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl", "src.db"]


@pytest.mark.parametrize("damage", ["malformed line", "truncated gz"])
@pytest.mark.parametrize("on_conflict", ["error", "skip", "replace"])
def test_import_create_of_a_damaged_dump_leaves_no_file(
    runner: CliRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    damage: str,
    on_conflict: str,
) -> None:
    """The first pass finds the damage three quarters into the dump, before the
    first batch (batches of 4 rows here, blocks of 1 KB: the trial's 20,000 rows in
    batches of 8,192, scaled down), so ``--create`` removes the new file (trial 47
    f06)."""
    from oam_core.transfer import decoder, reader

    monkeypatch.setitem(reader.import_store.__kwdefaults__, "batch_rows", 4)
    monkeypatch.setattr(decoder, "BLOCK_BYTES", 1024)
    with SQLiteMemoryStore(str(tmp_path / "src.db"), embedder=HashingEmbedder(32)) as store:
        store.add([f"fact number {i}" for i in range(40)], "fact", user_ids="ana")
    dump = tmp_path / "d.jsonl.gz"
    assert invoke(runner, "export", dump, "--db", tmp_path / "src.db").exit_code == 0
    if damage == "malformed line":
        lines = gzip.decompress(dump.read_bytes()).splitlines()
        lines[30] = b"{oops"
        dump.write_bytes(gzip.compress(b"\n".join(lines) + b"\n"))
        error = "source line 31: not JSON"
    else:
        data = dump.read_bytes()
        dump.write_bytes(data[: len(data) * 3 // 4])
        error = "the compressed dump is damaged or truncated"
    new = tmp_path / "new.db"
    result = invoke(runner, "import", dump, "--db", new, "--create", "--on-conflict", on_conflict)
    assert_clean_failure(result, 1, error)
    assert "nothing was written" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl.gz", "src.db"]


def test_import_of_a_missing_file_exits_2_as_documented(runner: CliRunner, tmp_path: Path) -> None:
    missing = invoke(
        runner, "import", tmp_path / "nope.jsonl", "--db", tmp_path / "t.db", "--create"
    )
    assert_clean_failure(missing, 2, "no such file")
    assert not (tmp_path / "t.db").exists()


def test_a_missing_store_points_at_create_where_the_command_has_it(
    runner: CliRunner, source: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "d.jsonl"
    assert invoke(runner, "export", dump, "--db", source).exit_code == 0
    nope = tmp_path / "nope.db"
    for args in (("import", dump, "--db", nope), ("copy", source, nope)):
        result = invoke(runner, *args)
        assert_clean_failure(result, 2, f"{nope}: no such database; pass --create to create it")
        assert "ingest" not in result.stderr and not nope.exists()
    for args in (("export", tmp_path / "x.jsonl", "--db", nope), ("copy", nope, source)):
        result = invoke(runner, *args)
        assert_clean_failure(
            result, 2, f"{nope}: no such database; give the file of an existing store"
        )
        assert "ingest" not in result.stderr and "--create" not in result.stderr


def test_import_reads_standard_input_as_export_writes_standard_output(
    runner: CliRunner, source: Path, tmp_path: Path
) -> None:
    from oam_core.cli import app

    exported = runner.invoke(app, ["export", "-", "--db", str(source)])
    assert exported.exit_code == 0, exported.output
    dump = exported.stdout_bytes
    target = tmp_path / "piped.db"
    for name, data in (("plain", dump), ("gzip", gzip.compress(dump))):
        db = tmp_path / f"{name}.db"
        piped = runner.invoke(app, ["import", "-", "--db", str(db), "--create"], input=data)
        assert piped.exit_code == 0, piped.output
        assert "5 rows" in piped.stdout
        assert _facts(db) == ["f-ana", "f-ben"]
    broken = runner.invoke(
        app, ["import", "-", "--db", str(target), "--create"], input=dump[: len(dump) // 2]
    )
    assert broken.exit_code == 1, broken.output
    assert not target.exists()
