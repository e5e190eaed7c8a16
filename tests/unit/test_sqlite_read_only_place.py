"""A cleanly closed SQLite store in a read-only place opens and searches
(docs/sqlite.md#read-only-places).

The store's files are in WAL mode, and SQLite opening a WAL file needs to create the
``-wal`` and ``-shm`` files beside it. A cleanly closed store has neither, so in a
directory nobody may write (a read-only mount, a package's data directory) SQLite
answers "unable to open database file"; the store then reads the file as an
immutable snapshot.

The tests run as root, and ``chmod`` does not stop root, so the place is made
read-only in two ways:

- for real: a read-only bind mount, made in a child process's own mount namespace
  (``unshare --mount``, or ``unshare --map-root-user --mount`` without root);
  skipped where neither is allowed;
- everywhere: ``<db>-wal`` and ``<db>-shm`` are directories, so SQLite cannot create
  them (the same "unable to open database file" a read-only mount gives), and the
  store's check of the directory's writability (``_writable_dir``) answers what it
  answers on a read-only mount.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from oam_core import SQLiteMemoryStore
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.errors import StoreConnectionError, StoreError
from oam_core.store.sqlite import backend as sqlite_backend

ROOT = Path(__file__).resolve().parents[2]
TEXTS = ["the budget meeting moved to Wednesday", "my dog is called Biscuit"]


def _write_store(path: Path) -> None:
    store = SQLiteMemoryStore(path, embedder=HashingEmbedder(16), search_strategy="HYBRID")
    store.add(TEXTS, "memory", record_ids=["m-budget", "m-dog"])
    store.close()
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # cleanly closed


def _open(path: Path) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(path, embedder=HashingEmbedder(16), search_strategy="HYBRID")


def test_a_store_whose_wal_files_cannot_be_made_is_read_as_a_snapshot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    _write_store(path)
    (tmp_path / "s.db-wal").mkdir()
    (tmp_path / "s.db-shm").mkdir()
    before = path.read_bytes()
    monkeypatch.setattr(sqlite_backend, "_writable_dir", lambda _path: False)
    store = _open(path)
    try:
        assert store.search("budget Wednesday", 2)[0][0].id == "m-budget"
        dog = store.get("memory", "m-dog")
        assert dog is not None and dog.content == TEXTS[1]
        with pytest.raises(StoreError, match="readonly"):
            store.add(["new"], "memory", record_ids="m-new")
    finally:
        store.close()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db", "s.db-shm", "s.db-wal"]


def test_a_writable_directory_that_cannot_hold_the_wal_files_still_refuses(
    tmp_path: Path,
) -> None:
    """Only a place that cannot be written is read as a snapshot: anything else that
    keeps SQLite from opening the file is still an error, not a silent read-only
    store."""
    path = tmp_path / "s.db"
    _write_store(path)
    (tmp_path / "s.db-wal").mkdir()
    (tmp_path / "s.db-shm").mkdir()
    with pytest.raises(StoreConnectionError, match="unable to open"):
        _open(path)


def test_a_missing_file_in_a_read_only_place_is_still_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_backend, "_writable_dir", lambda _path: False)
    (tmp_path / "none.db-wal").mkdir()
    with pytest.raises(StoreConnectionError):
        _open(tmp_path / "none.db-wal" / "missing" / "s.db")


# The child: opens the store on the read-only mount, searches, prints the top id.
CHILD = textwrap.dedent(
    """
    import sys
    from oam_core import SQLiteMemoryStore
    from oam_core.embedders.hashing import HashingEmbedder
    store = SQLiteMemoryStore(sys.argv[1], embedder=HashingEmbedder(16),
                              search_strategy="HYBRID")
    print(store.search("budget Wednesday", 1)[0][0].id, flush=True)
    store.close()
    """
)


def _private_mount_namespace() -> list[str] | None:
    """The ``unshare`` command that gives a child its own mount namespace in which it
    may bind-mount, or None where this machine allows none."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return None
    probe = "d=$(mktemp -d) && mount --bind -o ro $d $d && ! touch $d/x 2>/dev/null"
    for cmd in (["unshare", "--mount"], ["unshare", "--map-root-user", "--mount"]):
        done = subprocess.run([*cmd, "sh", "-c", probe], capture_output=True, timeout=60)
        if done.returncode == 0:
            return cmd
    return None


def test_a_store_on_a_read_only_bind_mount_opens_and_searches(tmp_path: Path) -> None:
    unshare = _private_mount_namespace()
    if unshare is None:
        pytest.skip("no private mount namespace here (unshare --mount is not allowed)")
    src, ro = tmp_path / "src", tmp_path / "ro"
    src.mkdir()
    ro.mkdir()
    _write_store(src / "s.db")
    script = f'mount --bind -o ro "$1" "$2" && exec "{sys.executable}" -c "$3" "$2/s.db"'
    done = subprocess.run(
        [*unshare, "sh", "-c", script, "sh", str(src), str(ro), CHILD],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "m-budget"
    assert sorted(p.name for p in src.iterdir()) == ["s.db"]  # nothing written beside it


# The child of the read-only-file test: as a user that may not write the file,
# opens it, searches, tries a write, closes, and prints what it saw.
CHILD_FILE = textwrap.dedent(
    """
    import os, sys
    from oam_core import SQLiteMemoryStore
    from oam_core.embedders.hashing import HashingEmbedder
    path = sys.argv[1]
    assert not os.access(path, os.W_OK) and os.access(os.path.dirname(path), os.W_OK)
    store = SQLiteMemoryStore(path, embedder=HashingEmbedder(16), search_strategy="HYBRID")
    print(store.search("budget Wednesday", 1)[0][0].id)
    try:
        store.add(["new"], "memory", record_ids="m-new")
    except Exception as exc:
        print(type(exc).__name__, "readonly" in str(exc))
    store.close()
    """
)


def test_a_file_the_process_may_not_write_leaves_its_directory_as_it_was(
    tmp_path: Path,
) -> None:
    """A cleanly closed store file of mode 0444 in a directory the process may write:
    the open must not leave ``-wal``/``-shm`` files behind (SQLite would create them
    and, unable to checkpoint on a read-only connection, keep them after close).
    Root may write any file, so the opening runs in a child as user ``nobody``."""
    if os.geteuid() == 0:
        place = Path(tempfile.mkdtemp(prefix="oam-ro-file-"))  # nobody may reach it
        os.chown(place, 65534, 65534)
    else:
        place = tmp_path
    try:
        path = place / "s.db"
        _write_store(path)
        path.chmod(0o444)
        if os.geteuid() == 0:
            os.chown(path, 65534, 65534)
        before = path.read_bytes()
        done = subprocess.run(
            [sys.executable, "-c", CHILD_FILE, str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(place)},
            user=65534 if os.geteuid() == 0 else None,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split("\n")[:2] == ["m-budget", "StoreError True"]
        assert sorted(p.name for p in place.iterdir()) == ["s.db"]
        assert path.read_bytes() == before
    finally:
        if place != tmp_path:
            shutil.rmtree(place, ignore_errors=True)
