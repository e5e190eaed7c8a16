"""What an import refuses before it writes anything (docs/transfer.md#summaries-and-errors):
metadata that ``add`` refuses (trial 47 f02), and a malformed line or a truncated
``.gz`` anywhere in the dump, in every ``on_conflict`` mode (trial 47 f06). Every test
runs on each back end of the suite, on real SQLite files and the real PostgreSQL
server."""

from __future__ import annotations

import gzip
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _streams import ForwardPipe

from oam_core import export_store, import_store
from oam_core.store.threads import thread_store
from oam_core.transfer import TransferError, decoder


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": "x"}
    for _ in range(levels):
        value = {"k": value}
    return value


def _dump_lines(make_store: Callable[..., Any]) -> list[dict[str, Any]]:
    """The lines of a dump of a thread, one message and one fact (ids t1, m1, f1)."""
    source = make_store(name="source")
    thread_store(source).create_thread_row("t1", user_id="ana", agent_id="bot")
    source.add(["hello"], "message", thread_ids="t1", user_ids="ana", record_ids="m1")
    source.add(["Ana lives in Lisbon"], "fact", user_ids="ana", record_ids="f1")
    buf = io.BytesIO()
    export_store(source, buf)
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def _dump(lines: list[dict[str, Any]]) -> bytes:
    # (``json`` writes integers of any size, as another tool could.)
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _line(lines: list[dict[str, Any]], rid: str) -> dict[str, Any]:
    return next(line for line in lines if line.get("id") == rid)


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (_nested(70), "nested deeper than 64 levels"),
        (2**63, "integer 9223372036854775808 does not fit in 64 bits"),
        (-(2**63) - 1, "integer -9223372036854775809 does not fit in 64 bits"),
        (2**64, "integer 18446744073709551616 does not fit in 64 bits"),
        (2**70, "integer 1180591620717411303424 does not fit in 64 bits"),
    ],
    ids=["deep", "2**63", "-2**63-1", "2**64", "2**70"],
)
@pytest.mark.parametrize("on_conflict", ["error", "skip", "replace"])
def test_metadata_add_refuses_is_refused_by_import_with_nothing_written(
    make_store: Callable[..., Any],
    snapshot: Callable[[Any], dict[str, Any]],
    value: Any,
    why: str,
    on_conflict: str,
) -> None:
    lines = _dump_lines(make_store)
    target = make_store(name="target")
    target.add(["the target's own"], "fact", record_ids="own")
    before = snapshot(target)
    with pytest.raises(ValueError, match=why):  # what ``add`` says of it
        target.add(["x"], "fact", metadata={"v": value})
    _line(lines, "f1")["metadata"] = {"v": value}
    with pytest.raises(TransferError, match=rf"source line 4: record 'f1': metadata.*{why}") as err:
        import_store(target, io.BytesIO(_dump(lines)), on_conflict=on_conflict)  # type: ignore[arg-type]
    assert err.value.summary.records == {}
    assert snapshot(target) == before


@pytest.mark.parametrize("field", ["metadata", "config", "state"])
def test_a_threads_object_beyond_64_bits_is_refused(
    make_store: Callable[..., Any], snapshot: Callable[[Any], dict[str, Any]], field: str
) -> None:
    lines = _dump_lines(make_store)
    target = make_store(name="target")
    before = snapshot(target)
    _line(lines, "t1")[field] = {"n": 2**64}
    with pytest.raises(TransferError, match=rf"source line 2: thread 't1': {field}.*64 bits"):
        import_store(target, io.BytesIO(_dump(lines)), on_conflict="replace")
    assert snapshot(target) == before


def test_metadata_add_takes_is_imported_as_it_was(make_store: Callable[..., Any]) -> None:
    """Large floats, the 64-bit integer limits and text that looks like a number
    are what ``add`` stores, and come back unchanged."""
    lines = _dump_lines(make_store)
    metadata = {
        "big float": 1e20,
        "huge float": -1.5e300,
        "max": 2**63 - 1,
        "min": -(2**63),
        "digits": "12345678901234567890123",
        "looks like a float": "1e+20",
        "deep": _nested(62),  # its "x" 64 levels inside the metadata: the most
    }
    _line(lines, "f1")["metadata"] = metadata
    target = make_store(name="target")
    target.add(["x"], "fact", metadata=metadata, record_ids="by-add")
    summary = import_store(target, io.BytesIO(_dump(lines)))
    assert summary.records == {"thread": 1, "message": 1, "fact": 1}
    assert target.get("fact", "f1").metadata == metadata == target.get("fact", "by-add").metadata


ROWS, BAD_ROW, BATCH = 1_000, 750, 128
"""The dump of the f06 tests: 1,000 facts written in batches of 128, the bad row the
750th (the trial's 15,000th of 20,000 in batches of 8,192, scaled down): five whole
batches come before it."""


@pytest.fixture
def facts_dump(make_store: Callable[..., Any], tmp_path: Path) -> Path:
    source = make_store(name="facts")
    source.add(
        [f"fact number {i}" for i in range(ROWS)],
        "fact",
        user_ids="ana",
        record_ids=[f"f{i}" for i in range(ROWS)],
    )
    path = tmp_path / "facts.jsonl.gz"
    export_store(source, path)
    return path


def _target(make_store: Callable[..., Any]) -> Any:
    """A target holding rows of its own, one with an id of the dump (``f10``)."""
    target = make_store(name="target")
    thread_store(target).create_thread_row("t1", user_id="zed", agent_id="bot")
    target.add(["zed's own"], "message", thread_ids="t1", user_ids="zed", record_ids="m1")
    target.add(["the target's f10", "the target's own"], "fact", record_ids=["f10", "own"])
    return target


def _state(target: Any, snapshot: Callable[[Any], dict[str, Any]]) -> tuple[Any, ...]:
    """Everything the target holds: its row counts, every row as ``list`` and raw
    tables give it, and its own dump (without the header's time)."""
    out = io.BytesIO()
    export_store(target, out)
    return target.dump_counts(), snapshot(target), out.getvalue().splitlines()[1:]


@pytest.mark.parametrize("on_conflict", ["error", "skip", "replace"])
@pytest.mark.parametrize("how", ["path", "pipe"])
def test_a_malformed_line_late_in_the_dump_writes_nothing(
    make_store: Callable[..., Any],
    snapshot: Callable[[Any], dict[str, Any]],
    facts_dump: Path,
    tmp_path: Path,
    on_conflict: str,
    how: str,
) -> None:
    lines = gzip.decompress(facts_dump.read_bytes()).splitlines()
    assert json.loads(lines[BAD_ROW])["id"] == f"f{BAD_ROW - 1}"
    lines[BAD_ROW] = b'{"kind": "record", "id": "f749", "record_type": "fact", "content":'
    data = b"".join(line + b"\n" for line in lines)
    target = _target(make_store)
    before = _state(target, snapshot)
    source: Any = ForwardPipe(data) if how == "pipe" else tmp_path / "bad.jsonl"
    if how == "path":
        source.write_bytes(data)
    with pytest.raises(TransferError, match=rf"^source line {BAD_ROW + 1}: not JSON") as err:
        import_store(target, source, on_conflict=on_conflict, batch_rows=BATCH)  # type: ignore[arg-type]
    assert "nothing was written" in str(err.value)
    assert err.value.summary.records == {}
    assert _state(target, snapshot) == before


@pytest.mark.parametrize("on_conflict", ["error", "skip", "replace"])
def test_a_truncated_gz_writes_nothing(
    make_store: Callable[..., Any],
    snapshot: Callable[[Any], dict[str, Any]],
    facts_dump: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    on_conflict: str,
) -> None:
    # Read in blocks of 4 KB, not 1 MB: the damage is then met after five batches
    # (as in a dump larger than a block), not at the first read.
    monkeypatch.setattr(decoder, "BLOCK_BYTES", 4096)
    data = facts_dump.read_bytes()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) * 3 // 4])  # an interrupted download
    target = _target(make_store)
    before = _state(target, snapshot)
    with pytest.raises(TransferError, match="the compressed dump is damaged or truncated"):
        import_store(target, cut, on_conflict=on_conflict, batch_rows=BATCH)  # type: ignore[arg-type]
    assert _state(target, snapshot) == before
    # The whole dump imports; with "skip" and "replace" the clashing f10 as they say.
    if on_conflict != "error":
        done = import_store(target, facts_dump, on_conflict=on_conflict, batch_rows=BATCH)  # type: ignore[arg-type]
        assert done.total + done.skipped_existing == ROWS
        kept = on_conflict == "skip"
        assert target.get("fact", "f10").content == (
            "the target's f10" if kept else "fact number 10"
        )


@pytest.mark.parametrize("on_conflict", ["error", "skip", "replace"])
def test_a_row_add_refuses_late_in_the_dump_writes_nothing(
    make_store: Callable[..., Any],
    snapshot: Callable[[Any], dict[str, Any]],
    facts_dump: Path,
    tmp_path: Path,
    on_conflict: str,
) -> None:
    """The store's checks of the rows (here a window that ends before it starts) run
    in the first pass too."""
    lines = gzip.decompress(facts_dump.read_bytes()).splitlines()
    row = json.loads(lines[BAD_ROW])
    row.update(valid_from="2026-01-02T00:00:00+00:00", valid_until="2026-01-01T00:00:00+00:00")
    lines[BAD_ROW] = json.dumps(row).encode()
    path = tmp_path / "window.jsonl"
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    target = _target(make_store)
    before = _state(target, snapshot)
    with pytest.raises(
        TransferError,
        match=r"^lines 642-769: record 'f749': valid_until must be.*nothing was written",
    ):
        import_store(target, path, on_conflict=on_conflict, batch_rows=BATCH)  # type: ignore[arg-type]
    assert _state(target, snapshot) == before
