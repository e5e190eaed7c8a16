"""What an import refuses before it writes anything (docs/transfer.md#summaries-and-errors):
metadata that ``add`` refuses (trial 47 f02). Every test runs on each back end of the
suite, on real SQLite files and the real PostgreSQL server."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from oam_core import export_store, import_store
from oam_core.store.threads import thread_store
from oam_core.transfer import TransferError


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
