"""The column path of an import (oam_core/store/dumpcolumns.py, docs/transfer.md#import):
records of the common shape are decoded into columns and written without a query for
stored ids first on SQLite; the rows written, the counts and the errors are those of
the row path. Real SQLite files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import orjson
import pytest

from oam_core import SQLiteMemoryStore, export_store, import_store
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.dumpcolumns import DumpColumns
from oam_core.transfer import TransferError
from oam_core.transfer import format as fmt

IDS = [f"f{i:02d}" for i in range(30)]


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    """A dump of thirty facts f00..f29, each with one search row and its vector."""
    with SQLiteMemoryStore(str(tmp_path / "src.db"), embedder=HashingEmbedder(16)) as source:
        texts = [f"fact number {i}" for i in range(30)]
        source.add(texts, "fact", record_ids=IDS, user_ids="u")
        export_store(source, tmp_path / "d.jsonl")
    return tmp_path / "d.jsonl"


def _target(tmp_path: Path, name: str = "dst.db") -> SQLiteMemoryStore:
    return SQLiteMemoryStore(str(tmp_path / name), embedder=HashingEmbedder(16))


def _ids(store: SQLiteMemoryStore) -> list[str]:
    return sorted(r.id for r in store.list("fact", limit=None))


def test_a_common_record_line_decodes_to_the_fields_of_its_row(dump: Path) -> None:
    line = dump.read_bytes().splitlines()[1]
    fields = fmt.record_fields(line)
    assert fields is not None
    row = fmt.decode(line)
    got = fmt.fields_row(fields)
    assert not isinstance(row, dict)
    assert (got.id, got.record_type, got.content, got.user_id, got.created_at) == (
        row.id,
        row.record_type,
        row.content,
        row.user_id,
        row.created_at,
    )
    assert got.chunks[0].text == row.chunks[0].text
    vector = got.chunks[0].vector
    assert vector is not None and row.chunks[0].vector is not None
    assert np.array_equal(vector, row.chunks[0].vector)
    cols = fmt.columns([fields, fields])
    assert isinstance(cols, DumpColumns) and cols.vectors.shape == (2, 16)


def test_lines_of_another_shape_go_the_row_path(dump: Path) -> None:
    line = dump.read_bytes().splitlines()[1]
    value = orjson.loads(line)
    quoting = dict(value, search_rows=[dict(value["search_rows"][0], sources=["m1"])])
    two = dict(value, search_rows=[value["search_rows"][0]] * 2)
    naive = dict(value, created_at="2026-01-02T03:04:05")
    for changed in (quoting, two, naive):
        assert fmt.record_fields(orjson.dumps(changed)) is None
        assert not isinstance(fmt.decode(orjson.dumps(changed)), dict)


def test_a_rerun_with_skip_counts_every_stored_id(dump: Path, tmp_path: Path) -> None:
    target = _target(tmp_path)
    first = import_store(target, dump, batch_rows=10)
    assert first.records == {"fact": 30} and first.search_rows == 30
    again = import_store(target, dump, batch_rows=10, on_conflict="skip")
    assert (again.records, again.skipped_existing, again.search_rows) == ({}, 30, 0)
    assert _ids(target) == IDS
    assert len(target.search("fact number 7", 50, user_id="u")) == 30


def test_a_stored_id_late_in_the_dump_names_it_and_writes_nothing(
    dump: Path, tmp_path: Path
) -> None:
    target = _target(tmp_path)
    # f15 is stored: the second batch (f10..f19) would clash at its sixth row; the
    # first pass over the dump's ids finds it before the first batch is written.
    target.add(["already here"], "fact", record_ids=["f15"], user_ids="u")
    with pytest.raises(TransferError) as err:
        import_store(target, dump, batch_rows=10)
    assert str(err.value).startswith(
        "source line 17: record id 'f15' (fact) already exists in the target store "
        "(1 clashing ids among the 30 checked with it); nothing was written; pass "
        "on_conflict='skip' or 'replace' (committed before it: 0 rows (none), 0 search rows"
    )
    assert err.value.summary.records == {}
    assert _ids(target) == ["f15"]
    assert target.get("fact", "f15").content == "already here"  # type: ignore[union-attr]


def test_skip_writes_the_rest_of_a_batch_that_clashes(dump: Path, tmp_path: Path) -> None:
    target = _target(tmp_path)
    target.add(["already here", "me too"], "fact", record_ids=["f15", "f29"], user_ids="u")
    summary = import_store(target, dump, batch_rows=10, on_conflict="skip")
    assert (summary.records, summary.skipped_existing) == ({"fact": 28}, 2)
    assert _ids(target) == IDS
    assert target.get("fact", "f29").content == "me too"  # type: ignore[union-attr]
    assert target.get("fact", "f16").content == "fact number 16"  # type: ignore[union-attr]


def test_an_id_repeated_in_a_later_batch_is_skipped_once(dump: Path, tmp_path: Path) -> None:
    lines = dump.read_bytes().splitlines()
    end = orjson.loads(lines[-1])
    end["record_counts"] = {"fact": 31}
    end["search_rows"] = 31
    repeated = [*lines[:-1], lines[3], orjson.dumps(end)]
    path = tmp_path / "again.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in repeated))
    target = _target(tmp_path)
    summary = import_store(target, path, batch_rows=10, on_conflict="skip")
    assert (summary.records, summary.skipped_existing) == ({"fact": 30}, 1)
    other = _target(tmp_path, "other.db")
    with pytest.raises(
        TransferError,
        match=r"source line 32: record id 'f02' \(fact\) is in the source twice "
        r"\(first at line 4\); nothing was written",
    ):
        import_store(other, path, batch_rows=10)
    assert _ids(other) == []


def test_replace_through_the_columns_keeps_the_dumped_rows(dump: Path, tmp_path: Path) -> None:
    target = _target(tmp_path)
    target.add(["older text"], "fact", record_ids=["f03"], user_ids="u")
    summary = import_store(target, dump, batch_rows=10, on_conflict="replace")
    assert summary.records == {"fact": 30}
    assert target.get("fact", "f03").content == "fact number 3"  # type: ignore[union-attr]
    hits = target.search("older text", 50, user_id="u")
    assert len(hits) == 30 and "older text" not in [h[0].content for h in hits]


def test_sqlite_looks_up_stored_ids_only_for_a_batch_that_clashes(
    dump: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oam_core.store.sqlite.backend import SQLiteTx

    looked_up: list[int] = []
    existing_ids = SQLiteTx.existing_ids

    def counting(self: SQLiteTx, family: str, ids: Sequence[str]) -> set[str]:
        looked_up.append(len(ids))
        return existing_ids(self, family, ids)

    monkeypatch.setattr(SQLiteTx, "existing_ids", counting)
    target = _target(tmp_path)
    target.add(["already here"], "fact", record_ids=["f25"], user_ids="u")
    assert target.runtime.vector_dim == 16
    summary = import_store(target, dump, batch_rows=10, on_conflict="skip")
    # Only the third batch (f20..f29) holds a stored id: it alone is looked up.
    assert looked_up == [10]
    assert (summary.records, summary.skipped_existing) == ({"fact": 29}, 1)
    assert _ids(target) == IDS
