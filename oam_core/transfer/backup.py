"""``backup_sqlite``: a consistent copy of a live SQLite store (docs/transfer.md#backup).

Copying the file of a store that other processes write is not a backup: a WAL
database copied while it is written can be torn (the main file and the ``-wal`` log
of different moments). SQLite's online backup copies the pages of one read
snapshot instead; in WAL mode readers do not block writers, so the writers go on.
The vector index files (``<file>.oamvec``) are copied first: an index file older
than the database is caught up from the change log at the first open, so the copy
opens without rebuilding its index.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from oam_core.connection import sqlite_holds_store, sqlite_target
from oam_core.errors import InvalidArgumentError

BUSY_TIMEOUT_S = 30.0
"""How long the backup waits for a writer holding the file's lock, in seconds."""


@dataclass(frozen=True)
class BackupSummary:
    """What ``backup_sqlite`` wrote.

    Attributes:
        path: The backup database file.
        bytes: Its size in bytes.
        index_files: The vector index files copied next to it.
        seconds: Wall-clock time, in seconds.
    """

    path: str
    bytes: int
    index_files: tuple[str, ...]
    seconds: float

    def line(self) -> str:
        """One line for people."""
        extra = f" and {len(self.index_files)} index file(s)" if self.index_files else ""
        return f"{self.path}: {self.bytes} bytes{extra} in {self.seconds:.2f} s"


def backup_sqlite(
    source: str | os.PathLike[str], destination: str | os.PathLike[str], *, overwrite: bool = False
) -> BackupSummary:
    """Copy the SQLite store file ``source`` to ``destination`` consistently while
    other connections and processes write to it (docs/transfer.md#backup).

    The copy holds every transaction committed before the backup's read snapshot
    began, and nothing half-written; it is written to a temporary file next to
    ``destination`` and renamed, so a failed backup leaves no partial file.

    Args:
        source: The store's database file (a path or ``sqlite:///`` URL).
        destination: The backup file to write (its directory must exist).
        overwrite: Replace an existing ``destination`` (else an error).

    Returns:
        ``BackupSummary``.

    Raises:
        InvalidArgumentError: naming the argument for a missing source, a source
            that holds no oam store or is not a SQLite file (a PostgreSQL or Oracle
            URL), an in-memory database, the same file twice, a missing destination
            directory, a destination that is (or, ending in ``/``, names) a directory or
            cannot be created, or an
            existing destination without ``overwrite``.
        StoreError: from ``sqlite3`` errors while copying (mapped by the caller).
    """
    started = time.perf_counter()
    text = os.fspath(source)
    if "://" in text and not text.startswith("sqlite://"):
        raise InvalidArgumentError(
            f"source: backup works on SQLite store files only, got a "
            f"{text.split('://', 1)[0]}:// URL; "
            "copy another database with copy_store (CLI: oam copy) or export_store"
        )
    src = sqlite_target(text)
    if src == ":memory:":
        raise InvalidArgumentError("source: an in-memory database cannot be backed up")
    src_path = Path(src).expanduser()
    if not src_path.is_file():
        raise InvalidArgumentError(f"source: no such database file {str(src_path)!r}")
    if not sqlite_holds_store(str(src_path)):
        raise InvalidArgumentError(f"source: {str(src_path)!r} holds no oam store")
    dest = _destination(os.fspath(destination), src_path, overwrite)
    copied = _copy_index_files(src_path, dest)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        reader = sqlite3.connect(str(src_path), timeout=BUSY_TIMEOUT_S)
        try:
            writer = _open_destination(tmp, dest)
            try:
                reader.backup(writer)  # one step: every page from one read snapshot
                writer.execute("PRAGMA journal_mode = WAL")
            finally:
                writer.close()
        finally:
            reader.close()
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        for name in copied:
            Path(name).unlink(missing_ok=True)
        raise
    return BackupSummary(
        str(dest), dest.stat().st_size, tuple(copied), time.perf_counter() - started
    )


def _destination(text: str, source: Path, overwrite: bool) -> Path:
    """The backup file ``text`` names, checked before anything is written.

    Raises:
        InvalidArgumentError: naming ``destination``: a name ending in ``/`` (a
            directory: ``Path`` would drop the slash), a missing parent directory, a
            directory, the source file itself, or an existing file without
            ``overwrite``.
    """
    if text.endswith(("/", os.sep)):
        raise InvalidArgumentError(f"destination: {text!r} names a directory; give a file name")
    dest = Path(text).expanduser()
    if not dest.parent.is_dir():
        raise InvalidArgumentError(
            f"destination: the directory {str(dest.parent)!r} does not exist"
        )
    if dest.is_dir():
        raise InvalidArgumentError(f"destination: {str(dest)!r} is a directory")
    if dest.resolve() == source.resolve():
        raise InvalidArgumentError("destination is the source file")
    if dest.exists() and not overwrite:
        raise InvalidArgumentError(
            f"destination: {str(dest)!r} exists; pass overwrite=True (CLI: --overwrite)"
        )
    return dest


def _open_destination(tmp: Path, dest: Path) -> sqlite3.Connection:
    """A connection writing the temporary file ``tmp`` beside ``dest``.

    Raises:
        InvalidArgumentError: naming ``destination`` when the file cannot be created
            there (a read-only or special directory).
    """
    try:
        writer = sqlite3.connect(str(tmp))
        writer.execute("PRAGMA user_version").fetchone()  # creates the file
        return writer
    except (OSError, sqlite3.Error) as exc:
        raise InvalidArgumentError(
            f"destination: {str(dest)!r} cannot be created ({exc})"
        ) from None


def _copy_index_files(src: Path, dest: Path) -> list[str]:
    """Copy ``<src>.oamvec`` and ``<src>.<store id>.oamvec`` to the same names next
    to ``dest``; return the copies."""
    out = []
    for index in sorted(src.parent.glob(f"{src.name}*.oamvec")):
        suffix = index.name[len(src.name) :]
        target = dest.with_name(dest.name + suffix)
        tmp = target.with_name(f".{target.name}.tmp")
        shutil.copyfile(index, tmp)
        os.replace(tmp, target)
        out.append(str(target))
    return out
