"""Transfers with real processes (docs/transfer.md): an import killed with SIGKILL in
the middle of a batch, then re-run with ``on_conflict="skip"``; ``backup_sqlite``
while four processes write. Real SQLite files."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from oam_core import SQLiteMemoryStore, export_store, import_store
from oam_core.embedders.hashing import HashingEmbedder
from oam_core.store.threads import thread_store
from oam_core.transfer.backup import backup_sqlite

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'integrations'}"}
TYPES = ("message", "memory", "fact", "user_profile")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")


def _fill(store: SQLiteMemoryStore) -> None:
    thread_store(store).create_thread_row("t1", user_id="u1", config={"x": 1})
    thread_store(store).update_thread_row("t1", state={"watermark": 5})
    for i in range(12):
        store.add([f"message {i} about trains"], "message", thread_ids="t1", roles="user")
    store.add([f"fact {i}" for i in range(40)], "fact", user_ids="u1")
    store.add(["profile"], "user_profile", record_ids="u1")


def _state(store: SQLiteMemoryStore) -> dict[str, object]:
    out: dict[str, object] = {t: store.list(t, limit=None) for t in TYPES}
    out["threads"] = thread_store(store).list_thread_rows()
    out["search"] = [(r.id, round(d, 5)) for r, d in store.search("trains fact", k=100)]
    return out


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from oam_core import SQLiteMemoryStore, import_store
    from oam_core.embedders.hashing import HashingEmbedder
    from oam_core.store.sql.backend import SqlTx

    calls = []
    restore = SqlTx.restore

    def dying(self, rows, batch_size):
        restore(self, rows, batch_size)
        calls.append(len(rows))
        if len(calls) == 4:  # rows of the 4th batch written, not committed
            os.kill(os.getpid(), signal.SIGKILL)

    SqlTx.restore = dying
    store = SQLiteMemoryStore(sys.argv[2], embedder=HashingEmbedder(16))
    import_store(store, sys.argv[1], batch_rows=7)
    """
)


def test_kill_9_during_import_then_skip_completes_it(tmp_path: Path) -> None:
    with SQLiteMemoryStore(str(tmp_path / "src.db"), embedder=HashingEmbedder(16)) as source:
        _fill(source)
        export_store(source, tmp_path / "dump.jsonl.gz")
        expected = _state(source)
    target_path = tmp_path / "dst.db"
    run = subprocess.run(
        [sys.executable, "-c", KILLER, str(tmp_path / "dump.jsonl.gz"), str(target_path)],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    with SQLiteMemoryStore(str(target_path), embedder=HashingEmbedder(16)) as target:
        partial = sum(len(v) for k, v in _state(target).items() if k in TYPES)
        assert partial == 3 * 7 - 1  # three committed batches (the thread row is the 21st)
        done = import_store(target, tmp_path / "dump.jsonl.gz", on_conflict="skip")
        assert done.skipped_existing == 21
        assert _state(target) == expected


WRITER = textwrap.dedent(
    """
    import sys
    from oam_core import SQLiteMemoryStore
    from oam_core.embedders.hashing import HashingEmbedder

    store = SQLiteMemoryStore(sys.argv[1], embedder=HashingEmbedder(16))
    for i in range(1_000_000):
        rid = f"{sys.argv[2]}-{i}"
        tag = rid.replace("-", "x")  # one word no other record holds
        store.add([f"record {tag} written while a backup runs"], "fact", record_ids=rid)
        print(rid, flush=True)  # acknowledged: committed
    """
)


def test_backup_while_four_processes_write(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    with SQLiteMemoryStore(str(db), embedder=HashingEmbedder(16)) as store:
        store.add([f"seed {i}" for i in range(300)], "fact")
        store.search("seed", k=1)  # the vector index file exists
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(db), f"w{k}"],
            env=ENV,
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in range(4)
    ]
    acknowledged: set[str] = set()
    try:
        for w in writers:
            assert w.stdout is not None
            for _ in range(25):
                line = w.stdout.readline()
                assert line, "a writer stopped"
                acknowledged.add(line.strip())
        summary = backup_sqlite(db, tmp_path / "copy.db")
        # The writers kept writing during the backup.
        for w in writers:
            assert w.stdout is not None
            assert w.stdout.readline()
    finally:
        for w in writers:
            w.kill()
            w.wait()
            if w.stdout is not None:
                w.stdout.close()
    copy = tmp_path / "copy.db"
    assert summary.path == str(copy)
    conn = sqlite3.connect(copy)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with SQLiteMemoryStore(str(copy), embedder=HashingEmbedder(16)) as backup:
        held = {r.id for r in backup.list("fact", limit=None)}
        assert acknowledged <= held
        assert len(held) >= 300 + len(acknowledged)
        first = sorted(acknowledged)[0]
        [(hit, _)] = backup.search(first.replace("-", "x"), k=1)
        assert hit.id == first


def test_backup_refuses_bad_arguments(tmp_path: Path) -> None:
    from oam_core import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="no such database file"):
        backup_sqlite(tmp_path / "none.db", tmp_path / "b.db")
    db = tmp_path / "s.db"
    SQLiteMemoryStore(str(db)).close()
    (tmp_path / "b.db").write_bytes(b"keep")
    with pytest.raises(InvalidArgumentError, match="exists; pass overwrite=True"):
        backup_sqlite(db, tmp_path / "b.db")
    assert (tmp_path / "b.db").read_bytes() == b"keep"
    with pytest.raises(InvalidArgumentError, match="destination is the source"):
        backup_sqlite(db, db, overwrite=True)


def test_backup_copies_the_vector_index_files(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    with SQLiteMemoryStore(str(db), embedder=HashingEmbedder(16)) as store:
        store.add(["kept"], "fact", record_ids="f1")
    # Index files of the default store and of a named one (their content is the
    # store's concern: the backup copies them as they are, before the database).
    (tmp_path / "s.db.oamvec").write_bytes(b"index of the default store")
    (tmp_path / "s.db.s2.oamvec").write_bytes(b"index of store s2")
    summary = backup_sqlite(db, tmp_path / "b.db")
    assert summary.index_files == (str(tmp_path / "b.db.oamvec"), str(tmp_path / "b.db.s2.oamvec"))
    assert (tmp_path / "b.db.oamvec").read_bytes() == b"index of the default store"
    assert (tmp_path / "b.db.s2.oamvec").read_bytes() == b"index of store s2"
