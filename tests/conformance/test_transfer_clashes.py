"""Transfers that must not mix what they move with what the target holds
(docs/transfer.md): one user's export, a dump's thread whose id the target uses for
another conversation, and a copy of a store onto itself. Every test runs on each
back end of the suite, on real SQLite files and the real PostgreSQL server."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oam_core import InvalidArgumentError, copy_store, export_store, import_store
from oam_core.apis.batch import PendingRecordBatch
from oam_core.store.options import SchemaPolicy
from oam_core.store.threads import thread_store


def _thread(store: Any, thread_id: str, user: str, texts: list[str]) -> None:
    threads = thread_store(store)
    threads.create_thread_row(thread_id, user_id=user, agent_id="bot")
    for text in texts:
        batch = PendingRecordBatch(
            texts=[text],
            record_type="message",
            thread_ids=thread_id,
            user_ids=user,
            agent_ids="bot",
            roles="user",
        )
        threads.add_to_thread(thread_id, [batch])


def _messages(store: Any, thread_id: str) -> list[tuple[str | None, int, str | None]]:
    return [
        (m.user_id, m.seq_no, m.content)
        for m in thread_store(store).list_thread_messages_by_seq(thread_id)
    ]


def test_export_and_copy_take_one_user_id_as_a_string(
    make_store: Callable[..., Any], tmp_path: Path
) -> None:
    source = make_store(name="users")
    for user in ("ana", "a", "n"):
        source.add([f"{user} fact"], "fact", user_ids=user)
    summary = export_store(source, tmp_path / "ana.jsonl", user_ids="ana")
    assert summary.records == {"fact": 1}
    target = make_store(name="ana-copy")
    copy_store(source, target, user_ids="ana")
    assert [(r.user_id, r.content) for r in target.list("fact")] == [("ana", "ana fact")]
    with pytest.raises(InvalidArgumentError, match="user_ids"):
        export_store(source, tmp_path / "bad.jsonl", user_ids=["ana", ""])


@pytest.mark.parametrize("on_conflict", ["skip", "replace"])
def test_a_thread_id_of_another_user_in_the_target_is_refused(
    make_store: Callable[..., Any],
    tmp_path: Path,
    snapshot: Callable[[Any], dict[str, Any]],
    on_conflict: str,
) -> None:
    source = make_store(name="ana")
    _thread(source, "t1", "ana", ["I fly to Lisbon", "in March"])
    export_store(source, tmp_path / "ana.jsonl")
    target = make_store(name="zed")
    _thread(target, "t1", "zed", ["zed private message"])
    before = snapshot(target)
    with pytest.raises(InvalidArgumentError, match=r"thread 't1' is of user 'ana'.*'zed'"):
        import_store(target, tmp_path / "ana.jsonl", on_conflict=on_conflict)  # type: ignore[arg-type]
    assert snapshot(target) == before
    assert _messages(target, "t1") == [("zed", 0, "zed private message")]


def test_a_thread_id_of_the_same_user_with_other_messages_is_refused(
    make_store: Callable[..., Any], tmp_path: Path, snapshot: Callable[[Any], dict[str, Any]]
) -> None:
    source = make_store(name="laptop")
    _thread(source, "t1", "ana", ["I fly to Lisbon", "in March"])
    export_store(source, tmp_path / "laptop.jsonl")
    target = make_store(name="phone")
    _thread(target, "t1", "ana", ["another conversation"])
    before = snapshot(target)
    with pytest.raises(InvalidArgumentError, match="seq_no 0 of thread 't1' is message"):
        import_store(target, tmp_path / "laptop.jsonl", on_conflict="skip")
    assert snapshot(target) == before


def test_a_rerun_with_skip_completes_the_same_conversation(
    make_store: Callable[..., Any], tmp_path: Path
) -> None:
    source = make_store(name="src")
    _thread(source, "t1", "ana", [f"message {i}" for i in range(7)])
    export_store(source, tmp_path / "src.jsonl")
    target = make_store(name="dst")
    with pytest.raises(InvalidArgumentError):  # stopped after its first batches
        copy_store(source, target, batch_rows=3, progress=_stop_after(2))
    partial = _messages(target, "t1")
    assert 0 < len(partial) < 7
    summary = import_store(target, tmp_path / "src.jsonl", on_conflict="skip", batch_rows=3)
    assert summary.skipped_existing == len(partial) + 1  # the thread and its messages
    assert _messages(target, "t1") == [("ana", i, f"message {i}") for i in range(7)]


def _stop_after(batches: int) -> Callable[[int, int], None]:
    calls = []

    def progress(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == batches:
            raise InvalidArgumentError("stopped")

    return progress


def test_copy_onto_the_same_tables_through_another_store_object_is_refused(
    backend: Any, make_store: Callable[..., Any], snapshot: Callable[[Any], dict[str, Any]]
) -> None:
    if not backend.shared_storage:
        pytest.skip("two store objects of this back end never share their tables")
    first = make_store(name="self")
    first.add([f"fact {i}" for i in range(20)], "fact", record_ids=[f"f{i}" for i in range(20)])
    second = make_store(name="self")
    before = snapshot(first)
    for on_conflict in ("error", "skip", "replace"):
        with pytest.raises(InvalidArgumentError, match="same tables of the same database"):
            copy_store(first, second, on_conflict=on_conflict, batch_rows=4)  # type: ignore[arg-type]
    assert snapshot(first) == before
    other = make_store(name="other")
    assert copy_store(first, other).records == {"fact": 20}


def test_copy_onto_a_hard_link_of_the_sqlite_file_is_refused(tmp_path: Path) -> None:
    from oam_core import SQLiteMemoryStore
    from oam_core.embedders.hashing import HashingEmbedder

    first = SQLiteMemoryStore(str(tmp_path / "a.db"), embedder=HashingEmbedder(16))
    first.add(["one fact"], "fact")
    first.close()
    os.link(tmp_path / "a.db", tmp_path / "b.db")
    first = SQLiteMemoryStore(str(tmp_path / "a.db"), embedder=HashingEmbedder(16))
    second = SQLiteMemoryStore(str(tmp_path / "b.db"), embedder=HashingEmbedder(16))
    try:
        with pytest.raises(InvalidArgumentError, match="same tables"):
            copy_store(first, second, on_conflict="replace")
    finally:
        second.close()
    # Another prefix in the same file is another store.
    third = SQLiteMemoryStore(
        str(tmp_path / "a.db"), embedder=HashingEmbedder(16), memory_store_id="other"
    )
    try:
        assert copy_store(first, third).records == {"fact": 1}
    finally:
        first.close()
        third.close()


def test_copy_onto_the_same_postgres_tables_through_another_url_is_refused(conninfo: str) -> None:
    from oam_core import PostgresMemoryStore
    from oam_core.embedders.hashing import HashingEmbedder

    create = SchemaPolicy.CREATE_IF_NECESSARY
    first = PostgresMemoryStore(conninfo, embedder=HashingEmbedder(16), schema_policy=create)
    second = PostgresMemoryStore(f"{conninfo}&application_name=other", embedder=HashingEmbedder(16))
    try:
        first.add(["one fact"], "fact")
        with pytest.raises(InvalidArgumentError, match="same tables"):
            copy_store(first, second, on_conflict="replace")
        assert len(second.list("fact")) == 1
    finally:
        first.close()
        second.close()


def test_copy_between_store_ids_that_differ_only_in_case_is_refused(
    backend: Any, make_store: Callable[..., Any], snapshot: Callable[[Any], dict[str, Any]]
) -> None:
    """SQLite and PostgreSQL read the unquoted table names without regard to case:
    ``NOTES_records`` is ``notes_records`` (trial 47 f01: "replace" never ended,
    and left SQLite's keyword index corrupt)."""
    if not backend.shared_storage:
        pytest.skip("two store objects of this back end never share their tables")
    lower = make_store(name="case", memory_store_id="notes", search_strategy="KEYWORD")
    lower.add(["home Lisbon"], "fact", record_ids="v1")
    upper = make_store(name="case", memory_store_id="NOTES", search_strategy="KEYWORD")
    assert [r.id for r in upper.list("fact")] == ["v1"]  # the same tables
    before = snapshot(lower)
    for on_conflict in ("error", "skip", "replace"):
        for source, target in ((lower, upper), (upper, lower)):
            with pytest.raises(InvalidArgumentError, match="same tables of the same database"):
                copy_store(source, target, on_conflict=on_conflict)  # type: ignore[arg-type]
    assert snapshot(lower) == before
    assert [r.id for r, _ in lower.search("Lisbon", 5)] == ["v1"]
    other = make_store(name="case", memory_store_id="notes2", search_strategy="KEYWORD")
    assert copy_store(upper, other).records == {"fact": 1}


def test_copy_onto_the_sqlite_file_through_a_symlink_or_after_chdir_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file SQLite opened is compared, not the path as given: a relative path
    still names it after the process changed directory."""
    from oam_core import SQLiteMemoryStore
    from oam_core.embedders.hashing import HashingEmbedder

    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    relative = SQLiteMemoryStore("a.db", embedder=HashingEmbedder(16))
    relative.add(["one fact"], "fact", record_ids="f1")
    monkeypatch.chdir(tmp_path / "elsewhere")
    os.symlink(tmp_path / "a.db", tmp_path / "link.db")
    opened = [
        SQLiteMemoryStore(str(tmp_path / "a.db"), embedder=HashingEmbedder(16)),
        SQLiteMemoryStore(str(tmp_path / "link.db"), embedder=HashingEmbedder(16)),
        SQLiteMemoryStore("../a.db", embedder=HashingEmbedder(16)),
    ]
    try:
        for other in opened:
            for source, target in ((relative, other), (other, relative)):
                with pytest.raises(InvalidArgumentError, match="same tables"):
                    copy_store(source, target, on_conflict="replace")
        assert [(r.id, r.content) for r in relative.list("fact")] == [("f1", "one fact")]
        # Two private in-memory databases are two stores.
        first, second = (SQLiteMemoryStore(":memory:") for _ in range(2))
        first.add(["one fact"], "fact")
        assert copy_store(first, second).records == {"fact": 1}
    finally:
        for store in (relative, *opened):
            store.close()
