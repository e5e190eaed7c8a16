"""A memory ended before its window began (``valid_until == valid_from``: it never
holds) is what ``update_memory`` stores for a memory whose window had not started
(a plan corrected before it holds); export, import and copy carry it like any other
version (docs/store.md#validity-windows, docs/transfer.md)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from oam_core import OracleAgentMemory, copy_store, export_store, import_store
from oam_core.errors import InvalidArgumentError

START = datetime(2030, 1, 1, tzinfo=timezone.utc)
ISO = "2030-01-01T00:00:00+00:00"


def _open(path: Path) -> OracleAgentMemory:
    return OracleAgentMemory.open(f"sqlite:///{path}", embedder="hashing", extract_memories=False)


def _source(tmp_path: Path) -> OracleAgentMemory:
    mem = _open(tmp_path / "source.db")
    mem.add_memory("Trip to Lisbon planned.", user_id="u", memory_id="trip", timestamps=START)
    assert mem.invalidate_memory("trip", reason="cancelled") is False  # not current yet
    # Corrected before it holds, then the correction deleted: the plan keeps its
    # empty window, its marks name no successor.
    corrected = mem.update_memory("trip", "Trip to Porto planned.", reason="cancelled")
    assert mem.delete_memory(corrected) == 1
    mem.add_memory("Ski week in March.", user_id="u", memory_id="ski", timestamps=START)
    return mem


def test_the_store_writes_an_empty_window_for_a_memory_ended_before_it_began(
    tmp_path: Path,
) -> None:
    mem = _source(tmp_path)
    trip = mem.store.get("memory", "trip")
    assert trip is not None and (trip.valid_from, trip.valid_until) == (ISO, ISO)
    assert [r.id for r, _ in mem.store.search("Lisbon", 5, as_of=START)] == ["ski"]
    mem.close()


def test_export_then_import_keeps_the_empty_window(tmp_path: Path) -> None:
    mem = _source(tmp_path)
    summary = export_store(mem.store, tmp_path / "dump.jsonl")
    mem.close()
    assert summary.records == {"memory": 2}
    target = _open(tmp_path / "target.db")
    imported = import_store(target.store, tmp_path / "dump.jsonl")
    assert imported.records == {"memory": 2}
    trip = target.store.get("memory", "trip")
    assert trip is not None and (trip.valid_from, trip.valid_until) == (ISO, ISO)
    assert (trip.metadata or {})["$agent_memory"]["status"] == "invalid"
    found = [r.id for r, _ in target.store.search("Lisbon trip", 5, as_of=None)]
    assert "trip" in found
    assert [r.id for r, _ in target.store.search("Lisbon trip", 5, as_of=START)] == ["ski"]
    target.close()


def test_copy_store_keeps_the_empty_window(tmp_path: Path) -> None:
    mem = _source(tmp_path)
    target = _open(tmp_path / "copy.db")
    copy_store(mem.store, target.store)
    trip = target.store.get("memory", "trip")
    assert trip is not None and (trip.valid_from, trip.valid_until) == (ISO, ISO)
    mem.close()
    target.close()


def test_a_dump_window_ending_before_it_starts_is_still_refused(tmp_path: Path) -> None:
    mem = _source(tmp_path)
    export_store(mem.store, tmp_path / "dump.jsonl")
    mem.close()
    lines = (tmp_path / "dump.jsonl").read_text(encoding="utf-8").splitlines()
    edited = []
    for line in lines:
        row = json.loads(line)
        if row.get("id") == "trip" and "valid_until" in row:
            row["valid_until"] = "2029-12-31T00:00:00+00:00"
        edited.append(json.dumps(row))
    (tmp_path / "bad.jsonl").write_text("\n".join(edited) + "\n", encoding="utf-8")
    target = _open(tmp_path / "target.db")
    with pytest.raises(InvalidArgumentError, match="valid_until must be no earlier than"):
        import_store(target.store, tmp_path / "bad.jsonl")
    assert target.store.get("memory", "ski") is None  # nothing written
    target.close()
