"""Writing the index file (``vector/file.py``) from a background thread while searches
and writes go on, so that no search and no ``close`` waits for a large write.

A build's result is written here (``vector/builds.py``): the thread holds the
mirror's lock (``mirror.lock``) only to copy the columns and serialise the faiss
index, then writes them without it (the file holds no float32 vector: those stay in
SQLite). A mirror with dead rows is not written (they are compacted first, at the
next maintenance): the write is abandoned and done again at the next build or
close. A snapshot is consistent with the high-water mark and change-log
cursor it records: columns changed after it are re-read from the log by its reader.

Searches of an unchanged store read the mirror and the faiss index without the
mirror's lock; the thread only reads them too. Everything that changes them (a
catch-up, an adopted build, a compaction) runs under the lock.
"""

from __future__ import annotations

import threading
from typing import Any

from oam_core.store.sqlite.vector import ivf
from oam_core.store.sqlite.vector.file import IndexFile, Moved, Snapshot, Source, write_from
from oam_core.store.sqlite.vector.ivf import Ann
from oam_core.store.sqlite.vector.mirror import Mirror

__all__ = ["BackgroundWrite"]


class BackgroundWrite:
    """The index file's writes in a background thread (module docstring).

    Args:
        mirror: The arrays the file holds.
        file: The index file.

    Attributes:
        thread: The write under way, or None. A daemon thread: a process that
            exits without closing the store does not wait for it (the file is a
            cache of the database); like a ``kill -9``, that leaves its temporary
            file, removed by the next writable open.
        written: Snapshots written by this object's threads (tests read it).
    """

    def __init__(self, mirror: Mirror, file: IndexFile) -> None:
        self.mirror = mirror
        self.file = file
        self.thread: threading.Thread | None = None
        self.written = 0

    def running(self) -> bool:
        """Whether a write is under way."""
        thread = self.thread
        return thread is not None and thread.is_alive()

    def start(self, ann: Ann) -> bool:
        """Start writing the mirror (no dead rows: compact first) and ``ann`` unless
        a write is under way; whether a thread started. Call with the mirror's lock
        held."""
        faiss = ivf.load_faiss()
        if self.running() or not self.file.path or not self.mirror.dim or faiss is None:
            return False
        self.thread = threading.Thread(
            target=self._run, args=(ann, faiss), name="oam-vector-file", daemon=True
        )
        self.thread.start()
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a write under way; True when none is running any more."""
        thread = self.thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def _run(self, ann: Ann, faiss: Any) -> None:
        m = self.mirror

        def take() -> Snapshot:
            if m.n_dead:
                raise Moved  # compacted at the next maintenance; written again later
            snap = m.snapshot(ann)
            copy = Snapshot(
                dim=snap.dim,
                hwm=snap.hwm,
                cursor=snap.cursor,
                pks=snap.pks.copy(),
                rec=snap.rec.copy(),
                expires=snap.expires.copy(),
                vfrom=snap.vfrom.copy(),
                vuntil=snap.vuntil.copy(),
                mat=None,
                columns={name: col.copy() for name, col in snap.columns.items()},
                tables={name: list(names) for name, names in snap.tables.items()},
                ann=ann,
            )
            return copy

        snap = write_from(self.file.path or "", Source(m.lock, take), faiss)
        if snap is not None:
            with m.lock:
                self.file.saved = (snap.hwm, snap.cursor)
                ann.rebuilt = False  # rows added to it since are caught up by the reader
                self.written += 1
