"""Whether a SQLite store's path still names the file it opened
(docs/sqlite.md#a-file-deleted-or-replaced-under-a-store).

A connection keeps its open file even when the file is deleted (``rm memory.db*``) or
another file is moved to its name (a restore): writes then go to a file no other
process can open and are gone when the store closes, and SQLite in WAL mode does not
refuse them. So the store records the file's device and inode at open and compares
them with the path's before each write transaction (one ``os.stat``).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass

from oam_core.errors import StoreConnectionError

__all__ = ["OpenedFile", "StoreFileGoneError"]


class StoreFileGoneError(StoreConnectionError):
    """The SQLite file a store opened was deleted or replaced since (another file now
    has its name, or none does); the message names the path. Nothing was written:
    reopen the store (docs/sqlite.md#a-file-deleted-or-replaced-under-a-store). A
    ``StoreConnectionError`` (a ``ConnectionError``)."""


@dataclass(frozen=True)
class OpenedFile:
    """The file a SQLite connection opened: its absolute path, device and inode.

    Attributes:
        path: The database file as SQLite opened it (``PRAGMA database_list``: an
            absolute path, so a later ``chdir`` does not move it).
        device, inode: ``os.stat(path)``'s ``st_dev`` and ``st_ino`` at open.
    """

    path: str
    device: int
    inode: int

    @classmethod
    def of(cls, conn: sqlite3.Connection) -> OpenedFile | None:
        """The file ``conn``'s main database is in; None for an in-memory (or
        temporary) database, which no path names, or a file gone already."""
        path = conn.execute("PRAGMA database_list").fetchone()[2]
        if not path:
            return None
        try:
            found = os.stat(path)
        except OSError:
            return None
        return cls(path, found.st_dev, found.st_ino)

    def check(self) -> None:
        """Refuse to write when the path no longer names this file.

        Raises:
            StoreFileGoneError: when the file was deleted (no file has the path, or
                a folder on it is gone) or replaced (another file has the path).
        """
        try:
            found = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            raise StoreFileGoneError(self._message("deleted")) from None
        except OSError:
            return  # cannot tell (a folder made unreadable): SQLite reports what it finds
        if (found.st_ino, found.st_dev) != (self.inode, self.device):
            raise StoreFileGoneError(self._message("replaced by another file"))

    def _message(self, what: str) -> str:
        return (
            f"the database file {self.path!r} was {what} since this store opened it; "
            "nothing was written: reopen the store (writes to the old file would be lost)"
        )
