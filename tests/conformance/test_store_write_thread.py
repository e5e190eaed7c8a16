"""``write_thread``: a thread and its records in one transaction; a replace that
fails keeps the old thread (issue 15 item 7; docs/store.md#writing-a-whole-thread)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from oam_core import PendingRecordBatch
from oam_core.store import writes
from oam_core.store.threads import thread_store


def _messages(thread_id: str, *texts: str) -> list[PendingRecordBatch]:
    return [
        PendingRecordBatch(
            texts=list(texts),
            record_type="message",
            thread_ids=thread_id,
            user_ids="u1",
            roles="user",
        )
    ]


def _contents(store: Any, thread_id: str) -> list[str]:
    return [m.content for m in store.list_thread_messages(thread_id)]


def test_a_new_thread_with_its_messages(store: Any) -> None:
    ids = thread_store(store).write_thread("t1", _messages("t1", "alpha", "beta"), user_id="u1")
    assert len(ids) == 2
    assert _contents(store, "t1") == ["alpha", "beta"]
    assert thread_store(store).get_thread_row("t1").user_id == "u1"


def test_replace_swaps_the_whole_thread(store: Any) -> None:
    thread_store(store).write_thread("t1", _messages("t1", "old zebra", "old yak"), user_id="u1")
    thread_store(store).write_thread("t1", _messages("t1", "new kiwi"), user_id="u1", replace=True)
    assert _contents(store, "t1") == ["new kiwi"]
    assert [r.content for r, _ in store.search("zebra yak kiwi", 5)] == ["new kiwi"]


def test_an_existing_thread_needs_replace(store: Any, rejected: Any) -> None:
    thread_store(store).write_thread("t1", _messages("t1", "kept"))
    with rejected(store, match="already exists"):
        thread_store(store).write_thread("t1", _messages("t1", "other"))


def test_records_of_another_thread_are_refused(store: Any, rejected: Any) -> None:
    with rejected(store, match="belongs to thread 't2'"):
        thread_store(store).write_thread("t1", _messages("t2", "stray"))


def test_a_replace_failing_after_the_delete_keeps_the_old_thread(
    store: Any, rejected: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    thread_store(store).write_thread("t1", _messages("t1", "old one", "old two"), user_id="u1")

    def fail(*args: Any, **kwargs: Any) -> None:
        raise ValueError("disk full (injected after the old thread was deleted)")

    monkeypatch.setattr(writes, "insert_planned", fail)
    with rejected(store, match="injected"):
        thread_store(store).write_thread("t1", _messages("t1", "new"), user_id="u1", replace=True)
    assert _contents(store, "t1") == ["old one", "old two"]


def test_replace_never_takes_over_another_users_thread(store: Any, rejected: Any) -> None:
    """review F5: replace=True on alice's thread for bob is refused, naming the thread
    and both owners, with alice's thread untouched."""
    from oam_core import OracleAgentMemory

    memory = OracleAgentMemory(store=store, extract_memories=False)
    memory.write_thread("a", [{"role": "user", "content": "alice secret"}], user_id="alice")
    with rejected(store, match=r"thread 'a' belongs to user 'alice', not 'bob'"):
        memory.write_thread("a", [{"role": "user", "content": "bob"}], user_id="bob", replace=True)
    with rejected(store, match=r"belongs to user 'alice', not None"):
        memory.write_thread("a", [], replace=True)
    assert memory.get_thread_row("a").user_id == "alice"
    assert _contents(store, "a") == ["alice secret"]
    # The owner may replace it.
    memory.write_thread("a", [{"role": "user", "content": "new"}], user_id="alice", replace=True)
    assert _contents(store, "a") == ["new"]


def _before_the_transaction(
    store: Any, monkeypatch: pytest.MonkeyPatch, other_writer: Callable[[], None]
) -> None:
    """Run ``other_writer`` (another writer, committing) once, after the next
    ``write_thread`` call has begun and before its transaction opens: the window
    in which an owner read outside the transaction goes stale."""
    backend = store.runtime.backend
    opened = backend.transaction
    fired: list[bool] = []

    def transaction() -> Any:
        if not fired:
            fired.append(True)
            other_writer()
        return opened()

    monkeypatch.setattr(backend, "transaction", transaction)


def test_replace_refuses_a_thread_created_by_another_user_meanwhile(
    store: Any, rejected: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No thread 'a' when bob's replace begins; alice writes one before its
    transaction: bob's replace is refused and alice's thread stays."""

    def alice_writes() -> None:
        thread_store(store).write_thread("a", _messages("a", "alice"), user_id="alice")

    _before_the_transaction(store, monkeypatch, alice_writes)
    with pytest.raises(ValueError, match=r"'a' belongs to user 'alice', not 'bob'"):
        thread_store(store).write_thread("a", _messages("a", "bob"), user_id="bob", replace=True)
    monkeypatch.undo()
    assert thread_store(store).get_thread_row("a").user_id == "alice"
    assert _contents(store, "a") == ["alice"]


def test_replace_checks_the_owner_of_a_thread_deleted_and_recreated_meanwhile(
    store: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bob owns 'a' when his replace begins; before its transaction another writer
    deletes 'a' and alice writes a thread 'a' of her own. bob's replace is refused:
    it never deletes alice's committed thread nor takes over its id."""
    thread_store(store).write_thread("a", _messages("a", "bob old"), user_id="bob")

    def delete_then_alice_writes() -> None:
        assert store.delete_thread("a") == 1
        thread_store(store).write_thread("a", _messages("a", "alice secret"), user_id="alice")

    _before_the_transaction(store, monkeypatch, delete_then_alice_writes)
    with pytest.raises(ValueError, match=r"'a' belongs to user 'alice', not 'bob'"):
        thread_store(store).write_thread(
            "a", _messages("a", "bob new"), user_id="bob", replace=True
        )
    monkeypatch.undo()
    assert thread_store(store).get_thread_row("a").user_id == "alice"
    assert _contents(store, "a") == ["alice secret"]
    assert [r.content for r, _ in store.search("secret", 5)] == ["alice secret"]


@pytest.mark.parametrize("existed", [True, False], ids=["recreated", "created"])
def test_replace_by_the_owner_replaces_the_thread_as_it_is_when_it_runs(
    store: Any, monkeypatch: pytest.MonkeyPatch, existed: bool
) -> None:
    """Another writer of the same user (re)creates 'a' meanwhile: the replace runs
    after it, as if the two calls had run one after the other, so the thread ends
    as the replace wrote it (no "try again" error, no mix of both)."""
    if existed:
        thread_store(store).write_thread("a", _messages("a", "first"), user_id="u1")

    def other_writer() -> None:
        if existed:
            store.delete_thread("a")
        thread_store(store).write_thread("a", _messages("a", "second", "third"), user_id="u1")

    _before_the_transaction(store, monkeypatch, other_writer)
    ids = thread_store(store).write_thread("a", _messages("a", "final"), user_id="u1", replace=True)
    monkeypatch.undo()
    assert _contents(store, "a") == ["final"]
    assert [m.id for m in store.list_thread_messages("a")] == ids
    assert [r.content for r, _ in store.search("first second third final", 5)] == ["final"]
