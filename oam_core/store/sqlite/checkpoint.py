"""WAL checkpoints in a background thread (docs/sqlite.md#writes).

In WAL mode a commit appends pages to the ``-wal`` file; a checkpoint copies them into
the database file. SQLite's default (``wal_autocheckpoint``) runs it inside the commit
that crosses 1000 pages, so a bulk add waits for it: about a fifth of its time. The
store turns that off on its connection and runs ``PRAGMA wal_checkpoint(PASSIVE)``
from a thread of its own, on a second connection, after commits that leave the log
past ``WAL_CHECKPOINT_BYTES``. SQLite releases the GIL while it copies, so the copy
overlaps the next write's Python work. A PASSIVE checkpoint never waits for readers
or writers and never blocks them.

The store's connection sets ``journal_size_limit`` to ``WAL_CHECKPOINT_BYTES``: the
log is truncated to that size when a write restarts it after a complete checkpoint,
so a larger file means pages written since, and small commits never wake the thread
(it starts with the first large log). SQLite restarts the log only at a write that
finds it all copied, so a checkpoint may overlap writes only while the log is under
``WAL_WAIT_BYTES``; past it, the next write waits for it and copies the rest first
(``before_write``). Durability is unchanged: a commit is in the log when it returns
either way. After ``close``, in a forked child, or when the log
passes ``WAL_INLINE_BYTES`` (the thread falls behind, or a reader holds an old
snapshot), the committing thread checkpoints itself, as SQLite would.

A log only shrinks when a write restarts it, so after a bulk load the file would keep
its size (tens of MiB) until the next write. Once no commit asked for a checkpoint
for ``IDLE_TRUNCATE_S`` after one, the thread runs ``wal_checkpoint(TRUNCATE)``
without waiting (busy timeout 0): the log is copied and cut to zero bytes, or, when a
reader or writer is busy with it (a search's read transaction), tried again every
``IDLE_TRUNCATE_S`` until it is done or a commit asks for a checkpoint again (a
try that finds the log busy returns at once).
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

WAL_WAIT_BYTES = 64 * 1024 * 1024
"""Log size, in bytes, from which a write waits for the checkpoint under way before it
starts (``Checkpointer.before_write``)."""

WAL_INLINE_BYTES = 256 * 1024 * 1024
"""Log size, in bytes, from which the committing thread checkpoints itself."""

IDLE_TRUNCATE_S = 1.0
"""Seconds without a checkpoint asked for after which the thread truncates the log."""

_log = logging.getLogger("oam.sqlite")


class Checkpointer:
    """Runs PASSIVE checkpoints of one database file in a daemon thread.

    Args:
        path: The database file as SQLite opened it (``PRAGMA database_list``: an
            absolute path, also for a store opened through a ``file:`` name); its
            log is ``path + "-wal"``.
        timeout: The busy timeout of the thread's connection, in seconds.
    """

    def __init__(self, path: str, timeout: float) -> None:
        where = Path(path).resolve()  # a later chdir must not move it
        self.uri = f"{where.as_uri()}?mode=rw"  # never creates a file
        self.wal = str(where) + "-wal"
        self.timeout = timeout
        self.done = 0
        """Checkpoints the thread has run (tests wait on it with ``drain``)."""
        self.truncated = 0
        """Times the thread cut the log to zero bytes after an idle period."""
        self._wake = threading.Condition()
        self._pending = False  # a commit asked for a checkpoint
        self._busy = False  # the thread is checkpointing
        self._stop = False
        self._pid = os.getpid()
        self._thread: threading.Thread | None = None  # started by the first large log

    def _forked(self) -> bool:
        """Whether this is a child forked after the store opened: the thread is not
        there and its lock may have been copied held, so neither is touched."""
        return os.getpid() != self._pid

    def before_write(self, conn: sqlite3.Connection) -> None:
        """Called on ``conn`` before each write transaction. A checkpoint may overlap
        the write while the log is under ``WAL_WAIT_BYTES``; past it, wait for the
        thread, then copy what was written meanwhile on ``conn``, so that the log is
        all copied when the write starts and SQLite restarts it from its beginning.
        (SQLite restarts the log only at a write that finds it all copied: a
        checkpoint overlapping every write would let it grow without end.)"""
        if self._forked() or self._thread is None:
            return
        try:
            if os.stat(self.wal).st_size <= WAL_WAIT_BYTES:
                return
            with self._wake:
                self._wake.wait_for(self._idle, self.timeout)
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except Exception as exc:  # the write goes on; a later one catches up
            _log.debug("WAL checkpoint of %s before a write failed: %s", self.wal, exc)

    def committed(self, conn: sqlite3.Connection) -> None:
        """Called after each commit on ``conn`` (which sets ``journal_size_limit`` to
        ``WAL_CHECKPOINT_BYTES``, so that a log reset after a checkpoint shrinks the
        file to that size and a larger file means pages written since): wake the
        thread when the log is past ``WAL_CHECKPOINT_BYTES``; checkpoint on ``conn``
        itself past ``WAL_INLINE_BYTES``, after ``close``, in a forked child, or
        when no thread can be started. Never raises: the commit is done."""
        try:
            size = os.stat(self.wal).st_size
        except OSError:
            return
        if size <= WAL_CHECKPOINT_BYTES:
            return
        try:
            if size > WAL_INLINE_BYTES or self._stop or self._forked() or not self._wakes():
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except Exception as exc:  # a failed checkpoint is retried after a later commit
            _log.debug("WAL checkpoint of %s after a commit failed: %s", self.wal, exc)

    def _wakes(self) -> bool:
        """Ask the thread (started on first use) for a checkpoint; False when no
        thread could be started."""
        with self._wake:
            if self._thread is None:
                thread = threading.Thread(target=self._run, name="oam-wal-checkpoint", daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # a thread limit, or interpreter shutdown
                    self._stop = True
                    return False
                self._thread = thread
            elif not self._thread.is_alive():  # it died: the committer checkpoints
                return False
            self._pending = True
            self._wake.notify()
        return True

    def _idle(self) -> bool:
        """No checkpoint asked for or under way (or no thread left to run one)."""
        alive = self._thread is not None and self._thread.is_alive()
        return not alive or (not self._pending and not self._busy)

    def drain(self, timeout: float = 30.0) -> bool:
        """Wait until no wake-up is pending and the thread is idle; return whether it
        is (False after ``timeout`` seconds)."""
        if self._forked():
            return True
        with self._wake:
            return self._wake.wait_for(self._idle, timeout)

    def close(self) -> None:
        """Stop the thread and wait for it (a checkpoint under way finishes first);
        later commits checkpoint on their own connection."""
        if self._forked():
            self._stop = True
            return
        with self._wake:
            self._stop = True
            self._wake.notify()
            thread = self._thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        idle: float | None = None  # seconds to wait before truncating the log (None: never)
        try:
            while True:
                with self._wake:
                    self._busy = False
                    self._wake.notify_all()
                    asked = self._wake.wait_for(lambda: self._pending or self._stop, idle)
                    if self._stop:
                        return
                    self._pending, self._busy = False, True
                try:
                    if conn is None:
                        conn = sqlite3.connect(
                            self.uri,
                            uri=True,
                            timeout=self.timeout,
                            isolation_level=None,
                            check_same_thread=False,
                        )
                    if asked:
                        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                        self.done += 1
                        idle = IDLE_TRUNCATE_S
                    elif self._truncate(conn):
                        idle = None  # until a commit asks for a checkpoint again
                    else:
                        idle = IDLE_TRUNCATE_S
                except sqlite3.Error as exc:  # busy, or the file went away: try next time
                    _log.debug("background WAL checkpoint of %s failed: %s", self.uri, exc)
        finally:
            with self._wake:
                self._busy = False
                self._wake.notify_all()
            if conn is not None:
                conn.close()

    def _truncate(self, conn: sqlite3.Connection) -> bool:
        """Copy the log and cut it to zero bytes without waiting for other
        connections (busy timeout 0); whether it was done."""
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        except sqlite3.OperationalError:  # SQLITE_BUSY raised rather than reported
            busy = 1
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        if not busy:
            self.truncated += 1
        return not busy
