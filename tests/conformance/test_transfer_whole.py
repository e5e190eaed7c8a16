"""What a transfer writes as a whole (docs/transfer.md): the order of a dump's lines,
an id clash found before anything is written, the target's retention cap, and a
copy's keyword ranking. Every test runs on each back end of the suite, on real
SQLite files and the real PostgreSQL server."""

from __future__ import annotations

import io
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _streams import ForwardPipe

from oam_core import MemoryRetentionConfig, copy_store, export_store, import_store
from oam_core.store.options import SearchStrategy
from oam_core.store.threads import thread_store
from oam_core.transfer import TransferError, import_mem0


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


def _facts(store: Any, n: int) -> None:
    store.add(
        [f"fact number {i}" for i in range(n)],
        "fact",
        user_ids="ana",
        record_ids=[f"id{i}" for i in range(n)],
    )


@pytest.mark.parametrize("how", ["path", "gzip", "pipe"])
def test_an_id_in_the_target_stops_an_import_before_anything_is_written(
    make_store: Callable[..., Any],
    tmp_path: Path,
    snapshot: Callable[[Any], dict[str, Any]],
    how: str,
) -> None:
    source = make_store(name="many")
    _facts(source, 12)
    path = tmp_path / ("dump.jsonl.gz" if how == "gzip" else "dump.jsonl")
    export_store(source, path)
    target = make_store(name="holds-one")
    target.add(["the target's own"], "fact", record_ids="id10")
    before = snapshot(target)
    dump: Any = ForwardPipe(path.read_bytes()) if how == "pipe" else path
    with pytest.raises(TransferError, match=r"source line 12: record id 'id10' \(fact\)") as err:
        import_store(target, dump, batch_rows=4)
    assert "nothing was written" in str(err.value)
    assert err.value.summary.records == {}
    assert snapshot(target) == before
    again = import_store(
        target,
        ForwardPipe(path.read_bytes()) if how == "pipe" else path,
        on_conflict="skip",
        batch_rows=4,
    )
    assert again.records == {"fact": 11} and again.skipped_existing == 1


def test_an_id_in_the_target_stops_a_copy_before_anything_is_written(
    make_store: Callable[..., Any], snapshot: Callable[[Any], dict[str, Any]], clock: Any
) -> None:
    source = make_store(name="many")
    source.add(["expires soon"], "fact", record_ids="old", ttl_days=1)
    thread_store(source).create_thread_row("t1", user_id="ana", agent_id="bot")
    _facts(source, 12)
    clock.advance(days=2)
    target = make_store(name="holds-one")
    target.add(["the target's own"], "memory", record_ids="id11")  # a fact's family
    target.add(["the target's old"], "fact", record_ids="old")
    before = snapshot(target)
    with pytest.raises(TransferError, match=r"source row 13: record id 'id11' \(fact\)"):
        copy_store(source, target, batch_rows=4)
    assert snapshot(target) == before
    # The source's expired row is not written, so its id does not clash.
    target.delete("memory", "id11")
    done = copy_store(source, target, batch_rows=4)
    assert done.records == {"thread": 1, "fact": 12} and done.skipped_expired == 1
    assert target.get("fact", "old").content == "the target's old"


def test_a_clash_written_after_the_check_stops_at_its_batch(
    make_store: Callable[..., Any], tmp_path: Path
) -> None:
    """Another writer may store an id between the first pass and the batch that holds
    it: that batch writes nothing and the error says what was committed."""
    source = make_store(name="many")
    _facts(source, 12)
    export_store(source, tmp_path / "dump.jsonl")
    target = make_store(name="raced")

    def meanwhile(done: int, total: int) -> None:
        if done == 4:
            target.add(["written meanwhile"], "fact", record_ids="id5")

    with pytest.raises(TransferError, match=r"lines 6-9: record id 'id5'") as err:
        import_store(target, tmp_path / "dump.jsonl", batch_rows=4, progress=meanwhile)
    assert err.value.summary.records == {"fact": 4}
    assert sorted(r.id for r in target.list("fact", limit=None)) == [
        "id0",
        "id1",
        "id2",
        "id3",
        "id5",
    ]


def _dump_with_expiries(make_store: Callable[..., Any], path: Path) -> Any:
    source = make_store(name="lasting")
    source.add(["kept forever"], "fact", record_ids="f", ttl_days=None)
    source.add(["kept long"], "fact", record_ids="l", ttl_days=1000)
    source.add(["kept briefly"], "fact", record_ids="s", ttl_days=3)
    source.add(["Ana"], "user_profile", record_ids="ana")  # profiles never expire
    export_store(source, path)
    return source


def test_an_import_keeps_expiries_beyond_the_targets_cap_and_says_so_once(
    make_store: Callable[..., Any], tmp_path: Path
) -> None:
    path = tmp_path / "lasting.jsonl"
    source = _dump_with_expiries(make_store, path)
    capped = make_store(
        name="capped",
        memory_retention_config=MemoryRetentionConfig(default_ttl_days=7, max_ttl_days=30),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import_store(capped, path)
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1
    assert messages[0].startswith(
        "2 imported records keep an expiry beyond the target store's max_ttl_days=30 "
        "(1 of them never expire): an import keeps the source's expiry"
    )
    for rid in ("f", "l", "s"):
        assert capped.get("fact", rid).expires_at == source.get("fact", rid).expires_at
    assert capped.get("fact", "f").expires_at is None
    # A copy says the same; a target without a cap says nothing.
    with pytest.warns(UserWarning, match=r"^2 imported records keep an expiry beyond"):
        copy_store(
            source,
            make_store(
                name="capped-copy", memory_retention_config=(MemoryRetentionConfig(max_ttl_days=30))
            ),
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        import_store(make_store(name="uncapped"), path)


def test_a_copy_of_a_purged_store_ranks_keyword_searches_alike(
    make_store: Callable[..., Any], make_target: Callable[..., Any], clock: Any
) -> None:
    """Expired rows count in the source's keyword statistics until purged (a copy
    leaves them out): purged first, the copy scores and orders alike."""
    source = make_store(name="kw", search_strategy=SearchStrategy.KEYWORD)
    source.add(
        ["apple banana cherry", "apple banana", "cherry", "durian"],
        "fact",
        record_ids=["a", "b", "c", "d"],
    )
    source.add([f"cherry filler {i}" for i in range(20)], "memory", ttl_days=1)
    clock.advance(days=2)
    assert source.purge_expired() == 20
    target = make_target(name="kw-copy", search_strategy=SearchStrategy.KEYWORD)
    assert copy_store(source, target).skipped_expired == 0

    def ranked(store: Any) -> list[tuple[str, float]]:
        return [(r.id, d) for r, d in store.search("apple banana cherry", k=4)]

    mine, theirs = ranked(source), ranked(target)
    assert [i for i, _ in mine] == [i for i, _ in theirs] == ["a", "b", "c"]
    assert [d for _, d in mine] == pytest.approx([d for _, d in theirs], abs=1e-6)


def test_an_id_in_the_target_stops_a_mem0_import_before_anything_is_written(
    make_store: Callable[..., Any], tmp_path: Path, snapshot: Callable[[Any], dict[str, Any]]
) -> None:
    path = tmp_path / "mem0.json"
    memories = [
        {"id": f"m{i}", "memory": f"Ana likes thing {i}", "user_id": "ana"} for i in range(5)
    ]
    path.write_text(json.dumps({"results": memories}), encoding="utf-8")
    target = make_store(name="mem0-target")
    target.add(["the target's own"], "memory", record_ids="m3")
    before = snapshot(target)
    with pytest.raises(TransferError, match=r"memories\[3\]: record id 'm3' \(memory\)"):
        import_mem0(target, path, batch_rows=2)
    assert snapshot(target) == before
    assert import_mem0(target, path, batch_rows=2, on_conflict="skip").records == {"memory": 4}


def test_an_id_twice_in_the_dump_stops_the_import_before_anything_is_written(
    make_store: Callable[..., Any], tmp_path: Path
) -> None:
    source = make_store(name="many")
    _facts(source, 6)
    path = tmp_path / "dump.jsonl"
    export_store(source, path)
    lines = path.read_bytes().splitlines()
    end = json.loads(lines[-1])
    end["record_counts"] = {"fact": 7}
    end["search_rows"] = 7
    twice = tmp_path / "twice.jsonl"
    twice.write_bytes(b"\n".join([*lines[:-1], lines[2], json.dumps(end).encode()]) + b"\n")
    target = make_store(name="empty")
    with pytest.raises(
        TransferError, match=r"source line 8: record id 'id1' \(fact\) is in the source twice"
    ):
        import_store(target, twice, batch_rows=2)
    assert target.list("fact") == []
    done = import_store(target, twice, batch_rows=2, on_conflict="skip")
    assert done.records == {"fact": 6} and done.skipped_existing == 1
