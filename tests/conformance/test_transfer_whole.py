"""What a transfer writes as a whole (docs/transfer.md): the order of a dump's lines,
an id clash found before anything is written, the target's retention cap, and a
copy's keyword ranking. Every test runs on each back end of the suite, on real
SQLite files and the real PostgreSQL server."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from oam_core import export_store, import_store
from oam_core.store.threads import thread_store


def _kinds(dump: bytes) -> list[tuple[str, str]]:
    lines = [json.loads(line) for line in dump.decode().splitlines()[1:-1]]
    return [(line["kind"], line["id"]) for line in lines]


def test_a_thread_created_after_its_messages_is_exported_before_them(
    make_store: Callable[..., Any],
) -> None:
    source = make_store(name="late-thread")
    source.add(["a fact first"], "fact", user_ids="ana", record_ids="f1")
    source.add(
        ["early message"],
        "message",
        thread_ids="tx",
        user_ids="ana",
        roles="user",
        record_ids="m1",
    )
    thread_store(source).create_thread_row("tx", user_id="ana", agent_id="bot")
    source.add(["a fact last"], "fact", user_ids="ana", record_ids="f2")
    buf = io.BytesIO()
    export_store(source, buf)
    assert _kinds(buf.getvalue()) == [
        ("thread", "tx"),
        ("record", "f1"),
        ("record", "m1"),
        ("record", "f2"),
    ]
    target = make_store(name="late-thread-copy")
    import_store(target, io.BytesIO(buf.getvalue()), batch_rows=1)
    assert [m.id for m in target.list_thread_messages("tx")] == ["m1"]
    assert [r.id for r in target.list("fact")] == ["f1", "f2"]
