"""Which SQLite store files are read as an immutable snapshot, with no ``-wal`` or
``-shm`` file made beside them (docs/sqlite.md#read-only-places)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from pathlib import Path


def immutable_uri(path: str) -> str:
    """The URI that opens ``path`` as an immutable snapshot (SQLite's ``immutable=1``:
    no locks, no log)."""
    return f"{Path(path).resolve().as_uri()}?immutable=1"


def in_read_only_place(
    path: str, exc: sqlite3.OperationalError, writable_dir: Callable[[str], bool]
) -> bool:
    """Whether ``exc``, raised while opening ``path`` for writing, says that the file
    exists but cannot be written where it is: the file itself is read-only, or its
    directory (``writable_dir(path)`` False) refuses the ``-wal``/``-shm`` files
    that WAL mode needs beside it."""
    message = str(exc)
    if "readonly" in message:
        return True
    return "unable to open" in message and os.path.isfile(path) and not writable_dir(path)


def unwritable_closed_file(path: str) -> bool:
    """Whether ``path`` is a file this process may not write (mode 0444, another
    user's) with no ``-wal`` or ``-shm`` file beside it (closed cleanly, no writer
    at work). SQLite would open it read-only but create both files in a writable
    directory and, unable to checkpoint on a read-only connection, leave them there
    at close; the store reads such a file as an immutable snapshot instead."""
    return (
        path != ":memory:"
        and os.path.isfile(path)
        and not os.access(path, os.W_OK)
        and not os.path.lexists(path + "-wal")
        and not os.path.lexists(path + "-shm")
    )
