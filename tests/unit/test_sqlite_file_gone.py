"""A SQLite store whose file is deleted or replaced under it refuses to write
(docs/sqlite.md#a-file-deleted-or-replaced-under-a-store): before each write
transaction the path must still name the file the store opened (device and inode), else
``StoreFileGoneError`` names the path and nothing is written anywhere. Real files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from oam_core import OracleAgentMemory, SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import StoreConnectionError, StoreError
from oam_core.store.sqlite.openfile import OpenedFile, StoreFileGoneError


def _open(path: Path | str) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(path, embedder=HashingEmbedder(16))


def _remove_store_files(path: Path) -> None:
    for name in os.listdir(path.parent):
        if name.startswith(path.name):
            os.remove(path.parent / name)


def _contents(path: Path) -> list[str | None]:
    store = _open(path)
    try:
        return sorted(r.content for r in store.list("memory", limit=None))
    finally:
        store.close()


def test_a_write_after_the_file_was_deleted_is_refused_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = _open(path)
    store.add(["Alice lives in Paris"], "memory", record_ids="m1")
    _remove_store_files(path)
    for write in (
        lambda: store.add(["Alice lives in Rome"], "memory", record_ids="m2"),
        lambda: store.update("memory", "m1", text="Alice lives in Rome"),
        lambda: store.delete("memory", "m1"),
        lambda: store.purge_expired(),
    ):
        with pytest.raises(StoreFileGoneError) as caught:
            write()
        assert str(path) in str(caught.value) and "was deleted since" in str(caught.value)
        assert "reopen" in str(caught.value)
    assert isinstance(caught.value, StoreConnectionError)
    assert isinstance(caught.value, StoreError) and isinstance(caught.value, ConnectionError)
    assert not path.exists()  # nothing made a new file at the path either
    store.close()


def test_a_correction_through_the_client_is_refused_once_the_file_is_gone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"
    mem = OracleAgentMemory(store=_open(path), extract_memories=False)
    mid = mem.add_memory("Alice lives in Paris", user_id="alice")
    os.remove(path)  # the main file only: its -wal and -shm stay
    with pytest.raises(StoreFileGoneError, match="was deleted since this store opened it"):
        mem.update_memory(mid, "Alice lives in Rome", reason="moved")
    with pytest.raises(StoreFileGoneError):
        mem.invalidate_memory(mid)
    mem.close()


def test_a_write_after_the_file_was_replaced_leaves_the_new_file_alone(tmp_path: Path) -> None:
    path, other_path = tmp_path / "memory.db", tmp_path / "restored.db"
    store = _open(path)
    store.add(["old file"], "memory", record_ids="m1")
    other = _open(other_path)
    other.add(["restored file"], "memory", record_ids="r1")
    other.close()
    # A restore moves another store over the path and removes the old one's -wal and
    # -shm (left there, SQLite would read the old log as the new file's: not the store's
    # to prevent).
    _remove_store_files(path)
    os.replace(other_path, path)
    with pytest.raises(StoreFileGoneError, match="was replaced by another file since"):
        store.add(["lost write"], "memory", record_ids="m2")
    store.close()
    assert _contents(path) == ["restored file"]


def test_a_file_deleted_and_made_again_at_the_path_counts_as_replaced(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    store = _open(path)
    store.add(["first"], "memory", record_ids="m1")
    _remove_store_files(path)
    fresh = _open(path)  # another process creates a new, empty store at the path
    fresh.add(["from the new store"], "memory", record_ids="n1")
    with pytest.raises(StoreFileGoneError, match="replaced"):
        store.add(["lost"], "memory", record_ids="m2")
    assert [r.id for r in fresh.list("memory", limit=None)] == ["n1"]
    fresh.close()
    store.close()


def test_writes_go_on_while_the_path_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = _open("memory.db")  # a relative path: a later chdir must not move it
    assert store.add(["one"], "memory", record_ids="a") == ["a"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert store.add(["two"], "memory", record_ids="b") == ["b"]
    moved = tmp_path / "moved.db"
    os.rename(tmp_path / "memory.db", moved)  # moved away and back: the same file
    os.rename(moved, tmp_path / "memory.db")
    assert store.add(["three"], "memory", record_ids="c") == ["c"]
    store.close()
    assert _contents(tmp_path / "memory.db") == ["one", "three", "two"]


def test_an_in_memory_store_has_no_file_to_check() -> None:
    store = SQLiteMemoryStore(":memory:", embedder=HashingEmbedder(16))
    assert store.runtime.backend.opened is None  # type: ignore[attr-defined]
    assert store.add(["x"], "memory", record_ids="x") == ["x"]
    store.close()


def test_the_recorded_file_is_the_absolute_path_sqlite_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    store = _open("memory.db")
    opened = store.runtime.backend.opened  # type: ignore[attr-defined]
    assert isinstance(opened, OpenedFile)
    found = os.stat(tmp_path / "memory.db")
    assert Path(opened.path) == (tmp_path / "memory.db").resolve()
    assert (opened.device, opened.inode) == (found.st_dev, found.st_ino)
    store.close()
