"""The embedded store's vector index file, ``<database>.oamvec`` (``docs/sqlite.md``).

A snapshot of the in-memory mirror (``vector/mirror.py``) as it stood after it
caught up with the database at chunk key ``hwm`` and change-log sequence ``cursor``:
the trained faiss index (``vector/ivf.py``) without its entries, followed by the
mirror's columns (live rows only, with each row's IVF list) and a JSON trailer. It
holds no vector and no code of one: the vectors are in SQLite (the chunks'
``embedding``), from which the reopened mirror reads its matrix (``loading.py``)
and codes each row into the list the file names (``assigned.py``). Reopening a
store reads the file instead of training the ANN index again, then catches up from
``(hwm, cursor)`` like any other reader.

Layout (all integers little-endian)::

    faiss index (faiss.write_index: IVF, signed 8-bit codes, no entries [format 5:
            with its codes and chunk keys]), bytes [0, ann_end)
    arrays: pks <i8, record keys <i8, type codes <i4, thread/user/agent codes <i4,
            expiry <f8 (inf = never), validity window from <f8 (-inf = open) and
            until <f8 (inf = open), IVF list <i2 (-1 = not in the index; not in
            format 5); each zlib-compressed, the keys as differences from the
            previous row  [format 4: uncompressed, and unit vectors <f4 (n, dim)]
    code tables: JSON {"types": [...], "thread": [...], "user": [...], "agent": [...]}
    trailer: JSON {magic, format, dim, n, hwm, cursor, ann (with its code scale),
             sections, tables, crc32, ...}
    8 bytes: trailer length; 8 bytes: b"OAMVIDX2"

``crc32`` covers every byte before the trailer. ``read`` raises
``InvalidArgumentError`` (a ``ValueError``) for anything it cannot trust (wrong magic
or version, another dimension, a checksum mismatch, a short file); the store then
rebuilds with one warning. ``write`` goes through a temporary file and a rename, so
readers and crashes see the old file or the new one, never half of one; where the
directory cannot be written it writes nothing.

Persistence (``IndexFile``): the mirror and its ANN index are written to
``<database file>.oamvec`` (``.<memory_store_id>.oamvec`` with a store id) after
every build, by a background thread (``vector/saving.py``, through ``write_from``),
and when the store closes if the file is far behind, atomically. A failed write (a
full disk) leaves the old file and warns once. A
process opening the store reads that snapshot instead of every vector from SQLite,
then catches up from the snapshot's high-water mark and change-log cursor like any
reader; it is trusted only if it parses, its checksum matches, the log still
reaches back to it, and afterwards it holds as many live vector chunks as the
database with a sample of rows (vectors, keys, scopes, expiry, validity windows)
equal to SQLite's. Otherwise it is rebuilt with one warning. A file whose change log
was pruned past it, or of format 3 (no windows), keeps only its ANN index, checked
against the rows read from SQLite. A file of format 5 (the previous version, with
the IVF codes) is read with its codes, one of format 4 (with a float32 copy of every
vector) with its matrix too; both are rewritten as format 6 when the store closes. A kill -9 leaves either the old file or the new
one, and SQLite rolls the write back. On a read-only file system nothing is written:
the index is built in memory.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

if sys.platform != "win32":
    import fcntl

import numpy as np
import numpy.typing as npt

from oam_core.errors import InvalidArgumentError
from oam_core.store.sqlite.vector import assigned
from oam_core.store.sqlite.vector.ivf import Ann, is_own_kind, warn_once

__all__ = [
    "FORMAT_VERSION",
    "QUIET_ERRNOS",
    "SAVE_SHARE",
    "STALE_TMP_S",
    "IndexFile",
    "Moved",
    "Snapshot",
    "Source",
    "index_path",
    "read",
    "remove_stale",
    "write",
    "write_from",
]

log = logging.getLogger(__name__)

FORMAT_VERSION = 6
"""Version of the file layout; a file of another version is rebuilt. 6: no IVF codes
either, only the trained lists (centroids) and each row's list (``vector/assigned.py``:
the rows are coded as their vectors are read from SQLite); 5: no float32 matrix (the
vectors are read from SQLite); 4: the rows' validity windows (``vfrom``,
``vuntil``) and the matrix; 3: the IVF index holds signed 8-bit codes of the scaled
vectors (``ann.scale`` in the trailer); 2 held 4-bit codes of their residuals. A
format-5 file is read with its codes and rewritten as format 6 when the store closes;
a format-4 file is read with its matrix (``Snapshot.mat``); a format-3 file is read
without windows (``Snapshot.windows`` False): its rows are reloaded from SQLite and
only its ANN index is kept."""
CODES_VERSION = 5
"""The last format holding the IVF index's codes, still read (with them)."""
MATRIX_VERSION = 4
"""The last format holding the float32 matrix, still read (with it)."""
WINDOWLESS_VERSION = 3
"""The last format without the validity windows, still read for its ANN index."""
MAGIC = "oam-vector-index"
TAIL = b"OAMVIDX2"  # marks the kind of file (unchanged since format 2; the trailer says which)
TMP_INFIX = ".tmp-"
"""The index file's temporary files are ``<file>.tmp-<pid>-<thread id>``."""
STALE_TMP_S = 3600.0
"""Seconds after its last change from which a temporary index file whose process id
is in use is taken as left behind (the id was reused)."""
SAVE_SHARE = 0.05
"""Closing rewrites the index file when rows added and changes since it was written
reach this share of the rows (or the ANN index was rebuilt); else the reader of the
older file catches up from it."""
_BLOCK = 1 << 20
QUIET_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM})
"""Errors of a place that cannot be written at all (a read-only mount or directory):
the index lives in memory only, without a warning. Any other failure of a write (a
full disk, ``ENOSPC``; a quota; an I/O error) warns once per file."""
SCOPES = ("thread", "user", "agent")
_CODES_COLUMNS = (  # name, dtype (one value per row); format 5
    ("pks", "<i8"),
    ("rec", "<i8"),
    ("rtype", "<i4"),
    ("thread", "<i4"),
    ("user", "<i4"),
    ("agent", "<i4"),
    ("expires", "<f8"),
    ("vfrom", "<f8"),
    ("vuntil", "<f8"),
)
_COLUMNS = (*_CODES_COLUMNS, ("lists", "<i2"))
"""The columns of format 6: format 5's and each row's IVF list (-1: not in the
index), each stored compressed (``_read_arrays``)."""
_PACKED_VERSION = 5
"""Formats from this one store their columns compressed."""
_DELTA = frozenset({"pks", "rec"})
"""Columns of formats 5 and 6 stored as differences from the previous row (ascending keys:
mostly small numbers), then compressed."""
_MATRIX_COLUMNS = (*_CODES_COLUMNS, ("mat", "<f4"))  # format 4: and the (n, dim) matrix
_WINDOWLESS_COLUMNS = tuple(c for c in _MATRIX_COLUMNS if c[0] not in ("vfrom", "vuntil"))
_VERSION_COLUMNS = {
    FORMAT_VERSION: _COLUMNS,
    CODES_VERSION: _CODES_COLUMNS,
    MATRIX_VERSION: _MATRIX_COLUMNS,
    WINDOWLESS_VERSION: _WINDOWLESS_COLUMNS,
}


@dataclass
class Snapshot:
    """The mirror's live rows and code tables, with the faiss index if it had one.

    Arrays are of length ``n``; ``mat`` is the float32 matrix of shape ``(n, dim)``
    of a format-4 file, or None (formats 5, 6: the vectors are read from SQLite; a
    snapshot being written: the file holds none); ``version`` is the file's format;
    ``columns``
    maps ``rtype``/``thread``/``user``/``agent`` to int32 codes, ``tables`` maps
    ``types``/``thread``/``user``/``agent`` to the strings of codes 0, 1, ...
    ``vfrom``/``vuntil`` are the rows' validity windows (epoch seconds, ``-inf``/``inf``
    where open); ``windows`` is False for a file of ``WINDOWLESS_VERSION``, whose rows
    cannot be trusted (open windows stand in) and are reloaded from SQLite.
    """

    dim: int
    hwm: int
    cursor: int
    pks: npt.NDArray[np.int64]
    rec: npt.NDArray[np.int64]
    expires: npt.NDArray[np.float64]
    vfrom: npt.NDArray[np.float64]
    vuntil: npt.NDArray[np.float64]
    mat: npt.NDArray[np.float32] | None
    columns: dict[str, npt.NDArray[np.int32]]
    tables: dict[str, list[str]]
    ann: Ann | None = None
    windows: bool = True
    extra: dict[str, Any] = field(default_factory=dict)
    version: int = FORMAT_VERSION

    @property
    def n(self) -> int:
        return len(self.pks)


def index_path(db_path: str, prefix: str) -> str | None:
    """Where the ANN index of the store with table ``prefix`` in ``db_path`` is kept,
    or None for an in-memory database."""
    if db_path == ":memory:" or db_path.startswith("file:"):
        return None
    store = f".{prefix.rstrip('_')}" if prefix else ""
    return f"{db_path}{store}.oamvec"


class IndexFile:
    """One store's index file as this process knows it.

    Args:
        path: The file (``index_path``), or None: nothing is read or written.

    Attributes:
        saved: ``(hwm, cursor)`` of the snapshot the file holds, as this process read
            or last wrote it; None when unknown (then closing rewrites it).
    """

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.saved: tuple[int, int] | None = None

    def exists(self) -> bool:
        """Whether there is a file to read."""
        if not self.path:
            return False
        return os.path.exists(self.path)

    def load(self, dim: int, faiss: Any, top: int, last_change: int) -> Snapshot | None:
        """The snapshot in the file, for vectors of ``dim`` dimensions; None (with
        one warning, ``unusable``) when it cannot be trusted or is ahead of the
        database, whose chunk keys reach ``top`` and change log ``last_change``."""
        if not self.path:
            return None
        try:
            snap = read(self.path, dim, faiss)
            if snap.hwm > top or snap.cursor > last_change:
                raise InvalidArgumentError("it is ahead of the database (another database's file?)")
        except (OSError, ValueError) as exc:
            self.unusable(str(exc))
            return None
        return snap

    def unusable(self, reason: str) -> None:
        """Warn, once per file and reason, that the file is not used for ``reason``."""
        warn_once(
            f"stale:{self.path}:{reason}",
            f"vector index {self.path} is not usable ({reason}); ignoring it: the index "
            "is built from the database instead and the file replaced once written",
        )

    def far_behind(self, moved: int, rows: int) -> bool:
        """Whether ``moved`` rows added or changed since the file was written are at
        least ``SAVE_SHARE`` of the mirror's ``rows``."""
        return moved >= SAVE_SHARE * max(rows, 1)

    def store(self, snap: Snapshot, faiss: Any) -> bool:
        """Write ``snap`` (``write``); whether it was written."""
        if not self.path or not write(self.path, snap, faiss):
            return False
        self.saved = (snap.hwm, snap.cursor)
        return True

    def remove_stale(self) -> None:
        """Remove the temporary files that writers killed mid-write left beside the
        file (``remove_stale``); call on a writable open."""
        if self.path:
            remove_stale(self.path)


class Moved(Exception):
    """The mirror's rows moved (compaction, reload) while a background write copied
    them: the write is abandoned and its temporary file removed."""


@dataclass
class Source:
    """A mirror that keeps changing, as a background write reads it (``write_from``).

    ``take`` is called with ``lock`` held, and the faiss index is serialised under the
    same hold: it returns the snapshot whose columns are copies (or raises ``Moved``).
    """

    lock: contextlib.AbstractContextManager[Any]
    take: Callable[[], Snapshot]


def write(path: str, snap: Snapshot, faiss: Any) -> bool:
    """Write ``snap`` to ``path`` atomically; False when nothing was written.

    The bytes go to ``<path>.tmp-<pid>-<thread id>`` first, held under an exclusive
    lock (POSIX ``flock``) until it is renamed over ``path`` or removed, so that
    ``remove_stale`` can tell a write under way from one a killed process left. A
    place that cannot be written (``QUIET_ERRNOS``) is logged only; any other failure
    (a full disk, faiss failing) leaves the old file as it was and warns once per
    file (``RuntimeWarning``): the index is then rebuilt or caught up from SQLite by
    the next store that opens it.
    """
    return _write(path, lambda tmp: _write_to(tmp, snap, faiss, None))


def write_from(path: str, source: Source, faiss: Any) -> Snapshot | None:
    """Write a snapshot of a mirror that keeps changing (``Source``) to ``path``, as
    ``write`` does; the snapshot written (its ``mat`` not filled in), or None when
    nothing was written (its rows moved meanwhile: ``Moved``, or a failure ``write``
    warns about)."""
    taken: list[Snapshot] = []

    def body(tmp: str) -> None:
        with source.lock:
            snap = source.take()
            taken.append(snap)
            head = _write_head(tmp, snap, faiss)
        _write_to(tmp, snap, faiss, head)

    return taken[0] if _write(path, body) else None


def _write(path: str, body: Callable[[str], None]) -> bool:
    """Run ``body(tmp)`` on a claimed temporary file, then rename it over ``path``."""
    tmp = f"{path}{TMP_INFIX}{os.getpid()}-{threading.get_ident()}"
    try:
        with _claimed(tmp):
            body(tmp)
            os.replace(tmp, path)
        return True
    except Moved:
        log.debug("vector index write to %s abandoned: the rows moved", path)
    except (OSError, RuntimeError, MemoryError) as exc:
        if isinstance(exc, OSError) and exc.errno in QUIET_ERRNOS:
            log.debug("vector index not persisted to %s: %s", path, exc)
        else:
            warn_once(
                f"write:{path}",
                f"vector index {path} not written ({exc}); the database is unchanged "
                "and the index is rebuilt from it when the store is next opened",
            )
    with contextlib.suppress(OSError):
        os.unlink(tmp)
    return False


def _put(f: Any, data: Any) -> None:
    """Write ``data`` (bytes or a byte view) to ``f``: every byte of the file but
    faiss's part goes through here (tests wrap it to inject ``ENOSPC``)."""
    f.write(data)


@contextlib.contextmanager
def _claimed(tmp: str) -> Iterator[None]:
    """Create ``tmp`` and hold an exclusive lock on it for the block (POSIX; a lock
    dies with its process, ``kill -9`` included). Windows keeps no lock: it refuses to
    remove a file another process has open."""
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    try:
        if sys.platform != "win32":
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            os.close(fd)  # a rename of a file still open fails there
            fd = -1
        yield
    finally:
        if fd >= 0:
            os.close(fd)


def remove_stale(path: str) -> list[str]:
    """Remove the temporary files that writes of the index file ``path`` left behind
    when their process was killed (``kill -9``, out of memory, power loss), each as
    large as the index; return the paths removed (docs/sqlite.md#the-index-file).

    Only files named as ``write`` names them for this ``path`` are considered. One is
    removed when no process holds its lock (POSIX; on Windows, when it can be
    removed at all) and either the process that wrote it is gone or the file was not
    modified for ``STALE_TMP_S`` (its process id now belongs to another process).
    Another live process's write under way is never touched; any file that cannot be
    examined or removed is left as it is.
    """
    directory, name = os.path.split(os.path.abspath(path))
    pattern = re.compile(re.escape(name + TMP_INFIX) + r"(\d+)-\d+")
    removed: list[str] = []
    try:
        entries = [e for e in os.scandir(directory) if pattern.fullmatch(e.name)]
    except OSError:
        return removed
    for entry in entries:
        match = pattern.fullmatch(entry.name)
        assert match is not None
        with contextlib.suppress(OSError):
            age = time.time() - entry.stat(follow_symlinks=False).st_mtime
            if _process_alive(int(match[1])) and age < STALE_TMP_S:
                continue
            if _unlink_unlocked(entry.path):
                log.info("removed %s, left by an interrupted index write", entry.path)
                removed.append(entry.path)
    return removed


def _process_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (on Windows, assumed: ``os.kill`` would end it)."""
    if sys.platform == "win32" or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True


def _unlink_unlocked(tmp: str) -> bool:
    """Remove ``tmp`` unless a writer holds its lock; whether it was removed."""
    if sys.platform == "win32":
        os.unlink(tmp)  # refused while a writer has it open
        return True
    fd = os.open(tmp, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # a live writer's
        os.unlink(tmp)
        return True
    finally:
        os.close(fd)


_Head = tuple[int, int, "dict[str, Any] | None", "npt.NDArray[np.int16] | None"]
"""``(end, crc32, ann entry of the trailer, each row's IVF list)`` after the faiss
part of a file (the lists only when the file holds no codes)."""


def _codeless() -> bool:
    """Whether files are written without the IVF codes (format 6; tests set
    ``_COLUMNS`` to an older format's)."""
    return any(name == "lists" for name, _ in _COLUMNS)


def _write_head(tmp: str, snap: Snapshot, faiss: Any) -> _Head:
    """Write the faiss part of the file to ``tmp`` (or create it empty): the trained
    lists without their entries (format 6), whose rows' lists are returned."""
    if snap.ann is None:
        open(tmp, "wb").close()
        return 0, 0, None, (np.full(snap.n, -1, np.int16) if _codeless() else None)
    lists = None
    if _codeless():
        lists = assigned.list_of_rows(snap.ann, np.asarray(snap.pks, dtype=np.int64))
        faiss.write_index(assigned.empty_copy(snap.ann), tmp)
    else:
        faiss.write_index(snap.ann.index, tmp)
    end = os.path.getsize(tmp)
    ann_info = {
        "end": end,
        "hwm": snap.ann.hwm,
        "trained_on": snap.ann.trained_on,
        "nprobe": snap.ann.nprobe,
        "oversample": snap.ann.oversample,
        "trained_hwm": snap.ann.trained_hwm,
        "checked_on": snap.ann.checked_on,
        "count": int(snap.ann.index.ntotal) if lists is None else int((lists >= 0).sum()),
        "scale": snap.ann.scale,
    }
    return end, _crc_of_file(tmp, end), ann_info, lists


def _write_to(tmp: str, snap: Snapshot, faiss: Any, head: _Head | None) -> None:
    """The file's bytes, written to ``tmp``; ``head`` when its faiss part is written
    already. The sections are ``_COLUMNS`` (tests set it to an older format's, with
    ``snap.mat`` given, to write an old file)."""
    end, crc, ann_info, lists = _write_head(tmp, snap, faiss) if head is None else head
    arrays = {
        "lists": lists,
        "pks": snap.pks,
        "rec": snap.rec,
        "expires": snap.expires,
        "vfrom": snap.vfrom,
        "vuntil": snap.vuntil,
        "mat": snap.mat,
        **snap.columns,
    }
    sections = []
    with open(tmp, "ab") as f:
        offset = end
        for name, dtype in _COLUMNS:
            arr = np.ascontiguousarray(arrays[name], dtype=dtype)
            section: list[Any] = [name, offset, 0, dtype, list(arr.shape)]
            data: Any = arr.data.cast("B")
            if FORMAT_VERSION >= _PACKED_VERSION:  # formats 5, 6 (tests write older ones)
                encoding = "delta+zlib" if name in _DELTA else "zlib"
                raw = np.diff(arr, prepend=arr.dtype.type(0)) if name in _DELTA else arr
                data = zlib.compress(raw.data.cast("B"), 1)
                section.append(encoding)
            _put(f, data)
            crc = zlib.crc32(data, crc)
            section[2] = len(data)
            sections.append(section)
            offset += len(data)
        tables = json.dumps(snap.tables, ensure_ascii=False).encode()
        _put(f, tables)
        crc = zlib.crc32(tables, crc)
        trailer = json.dumps(
            {
                "magic": MAGIC,
                "format": FORMAT_VERSION,
                "dim": snap.dim,
                "metric": "cosine",
                "n": snap.n,
                "hwm": snap.hwm,
                "cursor": snap.cursor,
                "ann": ann_info,
                "sections": sections,
                "tables": [offset, len(tables)],
                "faiss": getattr(faiss, "__version__", "?"),
                "crc32": crc,
            }
        ).encode()
        _put(f, trailer + len(trailer).to_bytes(8, "little") + TAIL)


def read(path: str, dim: int, faiss: Any) -> Snapshot:
    """Read the file at ``path`` for a store whose vectors have ``dim`` dimensions.

    Raises:
        InvalidArgumentError: naming what is wrong, for any file it cannot trust.
        OSError: when it cannot be read.
    """
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        header = _trailer(f, size)
        version = header.get("format")
        if version not in _VERSION_COLUMNS or header.get("dim") != dim:
            raise InvalidArgumentError(
                f"format {header.get('format')} / dimension {header.get('dim')}, expected "
                f"{FORMAT_VERSION} / {dim}"
            )
        n = _int(header, "n")
        ann_info = header.get("ann")
        end = _int(ann_info, "end") if isinstance(ann_info, dict) else 0
        crc = _crc_of_open(f, end)
        columns = _VERSION_COLUMNS[version]
        arrays, offset, crc = _read_arrays(
            f, columns, header.get("sections"), (n, dim, end, crc), version >= _PACKED_VERSION
        )
        where, length = header.get("tables", [None, None])
        if where != offset or not isinstance(length, int) or length < 0:
            raise InvalidArgumentError("unreadable trailer (tables)")
        raw = f.read(length)
        crc = zlib.crc32(raw, crc)
        if crc != header.get("crc32"):
            raise InvalidArgumentError("checksum mismatch")
    tables = json.loads(raw)
    if not isinstance(tables, dict) or set(tables) != {"types", *SCOPES}:
        raise InvalidArgumentError("unreadable code tables")
    lists = arrays.get("lists")
    ann = _read_ann(path, ann_info, dim, faiss, lists) if isinstance(ann_info, dict) else None
    if ann is not None and lists is not None:
        assigned.install(ann, arrays["pks"], lists)
    snap = Snapshot(
        dim=dim,
        hwm=_int(header, "hwm"),
        cursor=_int(header, "cursor"),
        pks=arrays["pks"],
        rec=arrays["rec"],
        expires=arrays["expires"],
        vfrom=arrays.get("vfrom", np.full(n, -np.inf)),
        vuntil=arrays.get("vuntil", np.full(n, np.inf)),
        mat=arrays.get("mat"),
        columns={c: arrays[c] for c in ("rtype", *SCOPES)},
        tables={key: [str(v) for v in values] for key, values in tables.items()},
        ann=ann,
        windows=version != WINDOWLESS_VERSION,
        version=version,
    )
    _check_codes(snap)
    return snap


def _read_arrays(
    f: Any,
    columns: tuple[tuple[str, str], ...],
    sections: Any,
    at: tuple[int, int, int, int],
    packed: bool,
) -> tuple[dict[str, Any], int, int]:
    """The arrays ``columns`` (``_COLUMNS`` of the file's version) of ``n`` rows read
    from ``f`` at ``offset`` as the trailer's ``sections`` list them, ``at`` being
    ``(n, dim, offset, crc)``, compressed where ``packed``: ``(arrays by name, offset
    after them, crc32 continued over their bytes)``."""
    n, dim, offset, crc = at
    if not isinstance(sections, list) or [s[0] for s in sections] != [c for c, _ in columns]:
        raise InvalidArgumentError("unreadable trailer (sections)")
    arrays: dict[str, Any] = {}
    for (name, dtype), section in zip(columns, sections, strict=True):
        shape = (n, dim) if name == "mat" else (n,)
        size = n * int(np.prod(shape[1:])) * np.dtype(dtype).itemsize
        if packed:
            arr, stored = _read_packed(f, name, dtype, section, offset, size)
            crc = zlib.crc32(stored, crc)
            length = len(stored)
        else:
            if section[1:] != [offset, size, dtype, list(shape)]:
                raise InvalidArgumentError(f"unreadable trailer (section {name})")
            arr = np.empty(shape, dtype=dtype)
            view = arr.data.cast("B")
            if f.readinto(view) != len(view):
                raise InvalidArgumentError("truncated")
            crc = zlib.crc32(view, crc)
            length = len(view)
        arrays[name] = arr
        offset += length
    return arrays, offset, crc


def _read_packed(
    f: Any, name: str, dtype: str, section: Any, offset: int, size: int
) -> tuple[npt.NDArray[Any], bytes]:
    """One compressed column of formats 5 and 6 at ``offset``, of ``size`` bytes once
    decompressed: ``(the array, the bytes stored)``."""
    encoding = "delta+zlib" if name in _DELTA else "zlib"
    stored_size = section[2] if isinstance(section, list) and len(section) == 6 else None
    if (
        not isinstance(stored_size, int)
        or not 0 < stored_size <= size + 1024
        or section[1] != offset
        or section[3:] != [dtype, [size // np.dtype(dtype).itemsize], encoding]
    ):
        raise InvalidArgumentError(f"unreadable trailer (section {name})")
    stored = f.read(stored_size)
    if len(stored) != stored_size:
        raise InvalidArgumentError("truncated")
    try:
        raw = zlib.decompress(stored)
    except zlib.error as exc:
        raise InvalidArgumentError(f"unreadable section {name} ({exc})") from None
    if len(raw) != size:
        raise InvalidArgumentError(f"unreadable section {name} (length)")
    arr = np.frombuffer(raw, dtype=dtype)
    arr = np.cumsum(arr, dtype=arr.dtype) if name in _DELTA else arr.copy()
    return arr, stored


def _read_ann(path: str, ann_info: dict[str, Any], dim: int, faiss: Any, lists: Any = None) -> Ann:
    """The faiss index at the start of the file at ``path``, checked against the
    trailer's ``ann`` entry (``ann_info``); for a file without codes (format 6),
    empty, with ``lists`` (each row's list) in range and as many as it counts."""
    try:
        index = faiss.read_index(path)
    except RuntimeError as exc:
        raise InvalidArgumentError(f"faiss cannot read it ({exc})") from None
    count = index.ntotal
    if lists is not None:
        if count or (len(lists) and int(lists.max()) >= index.nlist):
            raise InvalidArgumentError("its IVF lists differ from its trailer")
        count = int((lists >= 0).sum()) if len(lists) else 0
        if len(lists) and int(lists.min()) < -1:
            raise InvalidArgumentError("unreadable IVF lists")
    if index.d != dim or count != ann_info.get("count"):
        raise InvalidArgumentError("entry count or dimension differs from its trailer")
    if not is_own_kind(faiss, index):
        raise InvalidArgumentError(f"its IVF index is of another kind ({type(index).__name__})")
    scale = ann_info.get("scale")
    if not isinstance(scale, float) or not 0 < scale < float("inf"):
        raise InvalidArgumentError("unreadable trailer (scale)")
    ann = Ann(
        faiss,
        index,
        _int(ann_info, "hwm"),
        _int(ann_info, "trained_on"),
        _int(ann_info, "nprobe"),
        _int(ann_info, "oversample"),
        # files written before these keys: every row counts as added since training
        _int(ann_info, "trained_hwm") if "trained_hwm" in ann_info else 0,
        _int(ann_info, "checked_on") if "checked_on" in ann_info else None,
        scale,
    )
    ann.rebuilt = False
    return ann


def _trailer(f: Any, size: int) -> dict[str, Any]:
    f.seek(max(0, size - 16))
    tail = f.read(16)
    if len(tail) < 16 or tail[8:] != TAIL:
        raise InvalidArgumentError("not an oam vector index of this version")
    length = int.from_bytes(tail[:8], "little")
    start = size - 16 - length
    if length > 1 << 20 or start < 0:
        raise InvalidArgumentError("unreadable trailer")
    f.seek(start)
    try:
        header = json.loads(f.read(length))
    except ValueError as exc:
        raise InvalidArgumentError(f"unreadable trailer ({exc})") from None
    if not isinstance(header, dict) or header.get("magic") != MAGIC:
        raise InvalidArgumentError("not an oam vector index")
    f.seek(0)
    return header


def _int(d: Any, key: str) -> int:
    value = d.get(key) if isinstance(d, dict) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(f"unreadable trailer ({key})")
    return value


def _check_codes(snap: Snapshot) -> None:
    """Every code must name a table entry (-1 = None), keys must ascend, windows hold
    no NaN."""
    for column, table in (("rtype", "types"), *((s, s) for s in SCOPES)):
        codes = snap.columns[column]
        if snap.n and (codes.min() < -1 or codes.max() >= len(snap.tables[table])):
            raise InvalidArgumentError(f"unreadable {column} codes")
    if snap.n > 1 and not bool((np.diff(snap.pks) > 0).all()):
        raise InvalidArgumentError("chunk keys out of order")
    if bool(np.isnan(snap.vfrom).any() or np.isnan(snap.vuntil).any()):
        raise InvalidArgumentError("unreadable validity windows")


def _crc_of_file(path: str, length: int) -> int:
    with open(path, "rb") as f:
        return _crc_of_open(f, length)


def _crc_of_open(f: Any, length: int) -> int:
    """CRC-32 of the next ``length`` bytes of ``f``, read through one 1 MiB buffer
    (no large temporary objects: they would stay in the heap after the read)."""
    crc, left = 0, length
    buf = bytearray(_BLOCK)
    view = memoryview(buf)
    while left > 0:
        got = f.readinto(view[: min(left, _BLOCK)])
        if not got:
            raise InvalidArgumentError("truncated")
        crc = zlib.crc32(view[:got], crc)
        left -= got
    return crc
