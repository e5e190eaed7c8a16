"""Bad dumps (docs/transfer.md#summaries-and-errors): each is a clear error naming the line or id,
raised by the first pass over the whole dump, before anything is written (what only
the target's rows show stops the batch that holds it; the batches before it stay
committed and the error's summary counts them). Real SQLite files."""

from __future__ import annotations

import base64
import gzip
import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from oam_core import InvalidArgumentError, SQLiteMemoryStore, export_store, import_store
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.threads import thread_store
from oam_core.transfer import TransferError

IDS = [f"f{i}" for i in range(6)]


@pytest.fixture
def lines(tmp_path: Path) -> list[bytes]:
    """A dump of six facts f0..f5: header, six record lines, end line."""
    with SQLiteMemoryStore(str(tmp_path / "src.db"), embedder=HashingEmbedder(16)) as source:
        source.add([f"fact number {i}" for i in range(6)], "fact", record_ids=IDS, user_ids="u")
        export_store(source, tmp_path / "d.jsonl")
    return (tmp_path / "d.jsonl").read_bytes().splitlines()


def _write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _target(tmp_path: Path) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(str(tmp_path / "dst.db"), embedder=HashingEmbedder(16))


def _ids(store: SQLiteMemoryStore) -> list[str]:
    return [r.id for r in store.list("fact", limit=None)]


def _record(line: bytes, **changes: Any) -> bytes:
    value = orjson.loads(line)
    value.update(changes)
    return orjson.dumps(value)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (b"{not json", "line 6: not JSON"),
        (b"[1, 2]", "line 6: not a JSON object"),
        (None, "line 6: unknown record_type 'fact_sheet'"),
        (b'{"kind": "edge", "id": "x"}', "line 6: unknown kind 'edge'"),
    ],
)
def test_a_bad_line_stops_the_import_before_anything_is_written(
    tmp_path: Path, lines: list[bytes], bad: bytes | None, message: str
) -> None:
    broken = list(lines)
    broken[5] = bad if bad is not None else _record(lines[5], record_type="fact_sheet")
    path = _write(tmp_path / "bad.jsonl", broken)
    with _target(tmp_path) as target:
        for on_conflict in ("error", "skip", "replace"):
            with pytest.raises(TransferError, match=message) as caught:
                # Lines 2-3 and 4-5 are two batches before the one of line 6.
                import_store(target, path, batch_rows=2, on_conflict=on_conflict)  # type: ignore[arg-type]
            assert _ids(target) == []
            assert caught.value.summary.records == {}
            assert "; nothing was written (committed before it: 0 rows (none)" in str(caught.value)
        done = import_store(target, _write(tmp_path / "good.jsonl", lines), batch_rows=2)
        assert (done.records, done.skipped_existing) == ({"fact": 6}, 0)
        assert _ids(target) == IDS


def test_truncated_dump(tmp_path: Path, lines: list[bytes]) -> None:
    path = _write(tmp_path / "cut.jsonl", lines[:-1])  # no end line
    with _target(tmp_path) as target:
        with pytest.raises(TransferError, match="truncated: it ends at line 7") as caught:
            import_store(target, path, batch_rows=4)
        assert _ids(target) == []  # not the first batch either
        assert caught.value.summary.total == 0


def test_truncated_gzip(tmp_path: Path, lines: list[bytes]) -> None:
    data = gzip.compress(b"".join(line + b"\n" for line in lines))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(data[: len(data) - 40])
    with _target(tmp_path) as target:
        with pytest.raises(TransferError, match="damaged or truncated") as caught:
            import_store(target, path, batch_rows=100)
        assert _ids(target) == []
        assert caught.value.summary.total == 0


def test_end_line_counts_must_match(tmp_path: Path, lines: list[bytes]) -> None:
    path = _write(tmp_path / "short.jsonl", [*lines[:3], lines[-1]])
    with _target(tmp_path) as target:
        with pytest.raises(TransferError, match="the end line counts"):
            import_store(target, path)
        assert _ids(target) == []


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ({"version": 2}, "version 2 is newer than this oam reads"),
        ({"format": "other"}, "line 1: not an oam dump header"),
        ({"record_counts": None}, "bad record_counts"),
    ],
)
def test_bad_header_writes_nothing(
    tmp_path: Path, lines: list[bytes], header: dict[str, Any], message: str
) -> None:
    path = _write(tmp_path / "h.jsonl", [_record(lines[0], **header), *lines[1:]])
    with _target(tmp_path) as target:
        with pytest.raises(InvalidArgumentError, match=message):
            import_store(target, path)
        assert _ids(target) == []


def test_an_id_twice_in_one_batch(tmp_path: Path, lines: list[bytes]) -> None:
    broken = [*lines[:3], _record(lines[3], id="f0"), *lines[4:]]
    path = _write(tmp_path / "twice.jsonl", broken)
    with _target(tmp_path) as target:
        for on_conflict in ("error", "skip", "replace"):  # the first pass checks the batch
            with pytest.raises(
                TransferError, match=r"^lines 2-8: record id 'f0' .* is given twice; nothing was"
            ):
                import_store(target, path, on_conflict=on_conflict)  # type: ignore[arg-type]
        # In two batches, the lookup of on_conflict="error" names both lines.
        with pytest.raises(
            TransferError,
            match=r"^source line 4: record id 'f0' \(fact\) is in the source twice "
            r"\(first at line 2\); nothing was written",
        ):
            import_store(target, path, batch_rows=2)
        assert _ids(target) == []


def test_a_vector_of_another_dimension(tmp_path: Path, lines: list[bytes]) -> None:
    value = orjson.loads(lines[2])
    value["search_rows"][0]["vector"] = base64.b64encode(b"\0" * 4 * 8).decode()
    path = _write(tmp_path / "dim.jsonl", [*lines[:2], orjson.dumps(value), *lines[3:]])
    with _target(tmp_path) as target:
        with pytest.raises(TransferError, match="record 'f1': vector dimension 8"):
            import_store(target, path)
        assert _ids(target) == []


def test_a_header_naming_another_dimension_than_its_vectors(
    tmp_path: Path, lines: list[bytes]
) -> None:
    """A new store (no embedder, no dimension yet) used to learn 16 from the vectors
    while recording the header's 'hashing/8' of 8 dimensions: no embedder could open
    it afterwards."""
    head = orjson.loads(lines[0])
    head["embedder"] = {"id": "hashing/8", "dimension": 8}
    path = _write(tmp_path / "head.jsonl", [orjson.dumps(head), *lines[1:]])
    with SQLiteMemoryStore(str(tmp_path / "new.db")) as target:
        with pytest.raises(TransferError, match="vector dimension 16 does not match"):
            import_store(target, path)
        assert _ids(target) == []
        assert target.vector_dim is None
    with SQLiteMemoryStore(str(tmp_path / "new.db"), embedder=HashingEmbedder(8)) as reopened:
        assert reopened.search("fact", k=1) == []


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_vector_that_is_not_finite(tmp_path: Path, lines: list[bytes], value: float) -> None:
    import numpy as np

    row = orjson.loads(lines[2])
    vector = np.full(16, 0.25, dtype="<f4")
    vector[3] = value
    row["search_rows"][0]["vector"] = base64.b64encode(vector.tobytes()).decode()
    path = _write(tmp_path / "nan.jsonl", [*lines[:2], orjson.dumps(row), *lines[3:]])
    with _target(tmp_path) as target:
        with pytest.raises(TransferError, match="record 'f1': a search row's vector holds NaN"):
            import_store(target, path)
        assert _ids(target) == []


def test_bad_options(tmp_path: Path, lines: list[bytes]) -> None:
    path = _write(tmp_path / "d.jsonl", lines)
    with _target(tmp_path) as target:
        with pytest.raises(InvalidArgumentError, match="on_conflict must be one of"):
            import_store(target, path, on_conflict="merge")  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="no such file"):
            import_store(target, tmp_path / "missing.jsonl")
        with pytest.raises(InvalidArgumentError, match="source is empty"):
            import_store(target, _write(tmp_path / "empty.jsonl", []))
        assert _ids(target) == []


def test_a_text_stream_is_refused_naming_the_argument(tmp_path: Path, lines: list[bytes]) -> None:
    text = b"".join(line + b"\n" for line in lines).decode("utf-8")
    with _target(tmp_path) as target:
        with pytest.raises(InvalidArgumentError) as raised:
            import_store(target, io.StringIO(text))
        assert str(raised.value).startswith(
            "source must be a path or a binary file object (opened with 'rb'), got a text stream"
        )
        assert _ids(target) == []
        with (
            open(tmp_path / "out.jsonl", "w", encoding="utf-8") as out,
            pytest.raises(InvalidArgumentError, match="destination must be a path or a binary"),
        ):
            export_store(target, out)
        assert (tmp_path / "out.jsonl").read_text(encoding="utf-8") == ""


def _search_row(line: bytes, **changes: Any) -> bytes:
    value = orjson.loads(line)
    value["search_rows"][0].update(changes)
    return orjson.dumps(value)


# What the store's write path (``add``, ``add_messages``) refuses, import refuses too,
# naming the record and the field, before anything is written.
@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"content": "fact\x00four"}, r"record 'f4': content .*NUL"),
        ({"user_id": "u\x00"}, r"record 'f4': user_id .*NUL"),
        ({"metadata": {"k": ["a\x00b"]}}, r"record 'f4': metadata\['k'\]\[0\] .*NUL"),
        ({"search_text": "fact\x00"}, r"record 'f4': search_rows\[0\]\.text .*NUL"),
        ({"timestamp": "2026-02-30T00:00:00+00:00"}, r"record 'f4': timestamp must be an ISO"),
        ({"timestamp": "yesterday"}, r"record 'f4': timestamp must be an ISO"),
        ({"created_at": "2026-02-30T00:00:00+00:00"}, r"line 6: .*created_at"),
        ({"expires_at": "not a time"}, r"line 6: .*expires_at"),
        ({"metadata": {"$agent_memory": "mine"}}, r"record 'f4': metadata\['\$agent_memory'\]"),
        ({"search_text": None}, r"record 'f4': search_rows\[0\]\.text is null"),
    ],
)
def test_what_add_refuses_import_refuses(
    tmp_path: Path, lines: list[bytes], change: dict[str, Any], message: str
) -> None:
    broken = list(lines)
    if "search_text" in change:
        broken[5] = _search_row(lines[5], text=change["search_text"])
    else:
        broken[5] = _record(lines[5], **change)
    path = _write(tmp_path / "bad.jsonl", broken)
    with _target(tmp_path) as target:
        with pytest.raises(TransferError, match=message) as caught:
            import_store(target, path, batch_rows=2)
        assert _ids(target) == []  # nor the two batches before the one of line 6
        assert caught.value.summary.records == {}


def test_a_timestamp_is_stored_as_add_stores_it(tmp_path: Path, lines: list[bytes]) -> None:
    broken = [*lines[:5], _record(lines[5], timestamp="2026-03-01T09:30:00+02:00"), *lines[6:]]
    with _target(tmp_path) as target:
        import_store(target, _write(tmp_path / "ts.jsonl", broken))
        target.add(["same time"], "fact", record_ids="x", timestamps="2026-03-01T09:30:00+02:00")
        imported = target.get("fact", "f4")
        added = target.get("fact", "x")
        assert imported is not None and added is not None
        assert imported.timestamp == added.timestamp == "2026-03-01T07:30:00+00:00"


@pytest.fixture
def chat(tmp_path: Path) -> list[bytes]:
    """A dump of thread t1 (user u1, agent a1) and its messages m0..m2: header,
    thread, three message lines, end line."""
    with SQLiteMemoryStore(str(tmp_path / "chat.db"), embedder=HashingEmbedder(16)) as source:
        thread_store(source).create_thread_row("t1", user_id="u1", agent_id="a1")
        source.add(
            [f"message {i}" for i in range(3)],
            "message",
            thread_ids="t1",
            roles="user",
            user_ids="u1",
            agent_ids="a1",
            record_ids=["m0", "m1", "m2"],
        )
        export_store(source, tmp_path / "chat.jsonl")
    return (tmp_path / "chat.jsonl").read_bytes().splitlines()


def _messages(store: SQLiteMemoryStore) -> list[str]:
    return [r.id for r in store.list("message", limit=None)]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"role": ""}, r"record 'm2' \(message\): role must be a non-empty string"),
        ({"role": "  "}, r"record 'm2' \(message\): role must be a non-empty string"),
        ({"content": None}, r"record 'm2' \(message\): content must be a string"),
        ({"seq_no": 0}, r"record 'm2' \(message\): seq_no 0 is given to another message"),
        ({"user_id": "u2"}, r"record 'm2' \(message\): user_id 'u2' differs from its thread"),
        ({"agent_id": "a2"}, r"record 'm2' \(message\): agent_id 'a2' differs from its thread"),
    ],
)
def test_a_bad_message_is_refused(
    tmp_path: Path, chat: list[bytes], change: dict[str, Any], message: str
) -> None:
    assert [orjson.loads(line).get("id") for line in chat[1:5]] == ["t1", "m0", "m1", "m2"]
    broken = [*chat[:4], _record(chat[4], **change), chat[5]]
    with _target(tmp_path) as target:
        with pytest.raises(TransferError, match=message):
            import_store(target, _write(tmp_path / "bad.jsonl", broken))
        assert _messages(target) == []
        assert thread_store(target).list_thread_rows() == []


def test_a_message_checked_against_a_thread_of_an_earlier_batch(
    tmp_path: Path, chat: list[bytes]
) -> None:
    """The thread is in an earlier batch of the dump: the first pass checks its
    message against it, before anything is written."""
    broken = [*chat[:4], _record(chat[4], user_id="u2"), chat[5]]
    with _target(tmp_path) as target:
        with pytest.raises(
            TransferError, match=r"lines 5-5: .*user_id 'u2' differs from its thread 't1'"
        ):
            import_store(target, _write(tmp_path / "bad.jsonl", broken), batch_rows=1)
        assert _messages(target) == []
        assert thread_store(target).list_thread_rows() == []


def test_a_message_checked_against_a_thread_of_the_target(
    tmp_path: Path, chat: list[bytes]
) -> None:
    """The thread is the target's only: what the target holds is checked by the
    batch that writes the message, and the batches before it stay committed."""
    broken = [chat[0], *chat[2:4], _record(chat[4], user_id="u2"), chat[5]]
    end = orjson.loads(chat[5])
    end["record_counts"] = {"message": 3}
    broken[-1] = orjson.dumps(end)
    with _target(tmp_path) as target:
        thread_store(target).create_thread_row("t1", user_id="u1", agent_id="a1")
        with pytest.raises(TransferError, match=r"user_id 'u2' differs from its thread 't1'") as e:
            import_store(target, _write(tmp_path / "bad.jsonl", broken), batch_rows=1)
        assert _messages(target) == ["m0", "m1"]
        assert e.value.summary.records == {"message": 2}


def test_library_metadata_round_trips(tmp_path: Path, chat: list[bytes]) -> None:
    """Reserved keys as the library writes them (a message's ``$message`` name, a
    supersede mark under ``$agent_memory``) are imported."""
    meta = {"$message": {"name": "Ann"}, "$agent_memory": {"status": "invalid"}}
    value = orjson.loads(chat[3])
    value["metadata"] = meta
    fixed = [*chat[:3], orjson.dumps(value), *chat[4:]]
    with _target(tmp_path) as target:
        import_store(target, _write(tmp_path / "ok.jsonl", fixed))
        assert _messages(target) == ["m0", "m1", "m2"]
        m1 = target.get("message", "m1")
        assert m1 is not None and m1.metadata == meta


def test_created_at_is_stored_in_the_store_form(tmp_path: Path, lines: list[bytes]) -> None:
    """A hand-written ``created_at`` in another ISO-8601 form is stored as the store
    writes its own (UTC, microseconds), so store times compare as times."""
    broken = [*lines[:5], _record(lines[5], created_at="2026-03-01T09:30:00+02:00"), *lines[6:]]
    with _target(tmp_path) as target:
        import_store(target, _write(tmp_path / "c.jsonl", broken))
        record = target.get("fact", "f4")
        assert record is not None
        assert record.created_at == "2026-03-01T07:30:00.000000+00:00"


def test_messages_store_add_writes_are_imported(tmp_path: Path) -> None:
    """``store.add(..., "message")`` writes messages without a role, without a thread
    (each numbered 0), of a thread without a thread row and without a scope: a dump
    of them imports as it is."""
    with SQLiteMemoryStore(str(tmp_path / "s.db"), embedder=HashingEmbedder(16)) as source:
        thread_store(source).create_thread_row("t1", user_id="u1")
        source.add(["a", "b"], "message", record_ids=["n0", "n1"])
        source.add(["c"], "message", thread_ids="orphan", record_ids="n2")
        source.add(["d"], "message", thread_ids="t1", roles="user", record_ids="n3")
        export_store(source, tmp_path / "m.jsonl")
        expected = source.list("message", limit=None)
    with _target(tmp_path) as target:
        summary = import_store(target, tmp_path / "m.jsonl")
        assert summary.records == {"message": 4, "thread": 1}
        assert target.list("message", limit=None) == expected


def test_a_destination_ending_in_a_slash_is_refused(tmp_path: Path, lines: list[bytes]) -> None:
    """``out/`` names a directory: no file called ``out`` is written instead."""
    from oam_core.transfer.backup import backup_sqlite

    with _target(tmp_path) as target:
        target.add(["a fact"], "fact", record_ids=["a"])
        with pytest.raises(InvalidArgumentError, match="names a directory; give a file name"):
            export_store(target, f"{tmp_path}/out/")
    with pytest.raises(InvalidArgumentError, match="names a directory; give a file name"):
        backup_sqlite(tmp_path / "dst.db", f"{tmp_path}/bk/")
    assert not (tmp_path / "out").exists() and not (tmp_path / "bk").exists()
