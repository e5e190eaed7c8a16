"""An imported search row that quotes messages (``sources``) must name messages that
exist: in the dump or in the target store (docs/transfer.md#import). Every test runs
on each back end of the suite, on real SQLite files and the real PostgreSQL server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from oam_core import export_store, import_store
from oam_core.transfer import TransferError


def _dump_quoting(source: Any, path: Path, quoted: list[str]) -> Path:
    """Export ``source`` to ``path`` with fact 'f1's search row quoting ``quoted``."""
    export_store(source, path)
    lines = path.read_bytes().splitlines()
    out = []
    for line in lines:
        value = orjson.loads(line)
        if value.get("kind") == "record" and value.get("id") == "f1":
            value["search_rows"][0]["sources"] = quoted
            line = orjson.dumps(value)
        out.append(line)
    path.write_bytes(b"\n".join(out) + b"\n")
    return path


def test_a_search_row_quoting_a_message_that_exists_nowhere_is_refused(
    make_store: Callable[..., Any], tmp_path: Path, snapshot: Callable[[Any], dict[str, Any]]
) -> None:
    source = make_store(name="src")
    source.add(["hello there"], "message", record_ids=["m1"])
    source.add(["Ana's dog is Moose"], "fact", record_ids=["f1"], user_ids="ana")
    dump = _dump_quoting(source, tmp_path / "ghost.jsonl", ["m1", "ghost"])
    target = make_store(name="dst")
    target.add(["already here"], "fact", record_ids=["f0"], user_ids="ana")
    before = snapshot(target)
    with pytest.raises(TransferError) as err:
        import_store(target, dump)
    assert str(err.value).startswith(
        "lines 2-4: record 'f1' (fact): search_rows[0].sources[1] is message 'ghost', "
        "which is neither in the dump nor in the target store"
    )
    assert err.value.summary.records == {}
    assert snapshot(target) == before


def test_a_search_row_may_quote_a_message_of_the_dump_or_of_the_target(
    make_store: Callable[..., Any], tmp_path: Path
) -> None:
    source = make_store(name="src")
    source.add(["hello there"], "message", record_ids=["m1"])
    source.add(["Ana's dog is Moose"], "fact", record_ids=["f1"], user_ids="ana")
    in_dump = _dump_quoting(source, tmp_path / "in-dump.jsonl", ["m1"])
    first = make_store(name="first")
    assert import_store(first, in_dump).search_rows == 2
    # A dump of the fact alone quoting m1, which only the target holds.
    only_fact = make_store(name="fact-only")
    only_fact.add(["Ana's dog is Moose"], "fact", record_ids=["f1"], user_ids="ana")
    in_target = _dump_quoting(only_fact, tmp_path / "in-target.jsonl", ["m1"])
    second = make_store(name="second")
    second.add(["hello there"], "message", record_ids=["m1"])
    summary = import_store(second, in_target)
    assert (summary.records, summary.search_rows) == ({"fact": 1}, 1)
