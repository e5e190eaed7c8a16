"""WAL checkpoints in a background thread (docs/sqlite.md#writes).

In WAL mode a commit appends pages to the ``-wal`` file; a checkpoint copies them into
the database file. SQLite's default (``wal_autocheckpoint``) runs it inside the commit
that crosses 1000 pages, so a bulk add waits for it: about a fifth of its time. The
store turns that off on its connection and runs ``PRAGMA wal_checkpoint(PASSIVE)``
from a thread of its own, on a second connection, after commits that leave the log
past ``WAL_CHECKPOINT_BYTES``. SQLite releases the GIL while it copies, so the copy
overlaps the next write's Python work. A PASSIVE checkpoint never waits for readers
or writers and never blocks them.

Durability is unchanged: a commit is in the log when it returns either way. When the
thread is gone (after a ``fork``) or falls behind, so that the log passes
``WAL_INLINE_BYTES``, the committing thread checkpoints itself, as SQLite would.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path

WAL_CHECKPOINT_BYTES = 4 * 1024 * 1024
"""Log size, in bytes, from which a commit wakes the checkpoint thread (SQLite's own
threshold is 1000 pages, 4 MiB at the default page size)."""

WAL_INLINE_BYTES = 256 * 1024 * 1024
"""Log size, in bytes, from which the committing thread checkpoints itself."""

_log = logging.getLogger("oam.sqlite")


class Checkpointer:
    """Runs PASSIVE checkpoints of one database file in a daemon thread.

    Args:
        path: The database file (its log is ``path + "-wal"``).
        timeout: The busy timeout of the thread's connection, in seconds.
    """

    def __init__(self, path: str, timeout: float) -> None:
        self.path = path
        self.wal = path + "-wal"
        self.timeout = timeout
        self.done = 0
        """Checkpoints the thread has run (tests wait on it with ``drain``)."""
        self._wake = threading.Condition()
        self._pending = False  # a commit asked for a checkpoint
        self._busy = False  # the thread is checkpointing
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="oam-wal-checkpoint", daemon=True)
        self._thread.start()

    def committed(self, conn: sqlite3.Connection) -> None:
        """Called after each commit on ``conn``: wake the thread when the log is past
        ``WAL_CHECKPOINT_BYTES``, or checkpoint on ``conn`` itself when the thread is
        not running or the log is past ``WAL_INLINE_BYTES``."""
        try:
            size = os.stat(self.wal).st_size
        except OSError:
            return
        if size < WAL_CHECKPOINT_BYTES:
            return
        if size >= WAL_INLINE_BYTES or not self._thread.is_alive():
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
            return
        with self._wake:
            self._pending = True
            self._wake.notify()

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until no wake-up is pending and the thread is idle; return whether it
        is (False after ``timeout`` seconds)."""
        with self._wake:
            return self._wake.wait_for(lambda: not self._pending and not self._busy, timeout)

    def close(self) -> None:
        """Stop the thread and wait for it (a checkpoint under way finishes first)."""
        with self._wake:
            self._stop = True
            self._wake.notify()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            while True:
                with self._wake:
                    self._busy = False
                    self._wake.notify_all()
                    self._wake.wait_for(lambda: self._pending or self._stop)
                    if self._stop:
                        return
                    self._pending, self._busy = False, True
                try:
                    if conn is None:
                        conn = sqlite3.connect(
                            f"{Path(self.path).resolve().as_uri()}?mode=rw",
                            uri=True,
                            timeout=self.timeout,
                            isolation_level=None,
                            check_same_thread=False,
                        )
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.done += 1
                except sqlite3.Error as exc:  # busy, or the file went away: try next time
                    _log.debug("background WAL checkpoint of %s failed: %s", self.path, exc)
        finally:
            with self._wake:
                self._busy = False
                self._wake.notify_all()
            if conn is not None:
                conn.close()
