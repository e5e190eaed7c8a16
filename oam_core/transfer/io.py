"""Opening a dump destination or source: a path (``.gz``: gzip) or a binary file
object (docs/transfer.md#export)."""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, BinaryIO, Union

from oam_core.errors import InvalidArgumentError

Target = Union[str, "os.PathLike[str]", BinaryIO, IO[bytes]]
"""A path (``str`` or ``PathLike``; compressed when it ends in ``.gz``) or a binary
file object opened by the caller (never closed here)."""

GZIP_LEVEL = 6
"""gzip compression level of ``.gz`` dumps (zlib's default: 1 is ~2x faster, ~15% larger)."""


def _path(target: Any) -> Path | None:
    if isinstance(target, (str, os.PathLike)):
        return Path(os.fspath(target))
    return None


def _check_stream(target: Any, name: str, method: str, mode: str) -> None:
    """Refuse an object without ``method`` or a text stream (a dump is bytes).

    Raises:
        InvalidArgumentError: naming ``name``.
    """
    if isinstance(target, io.TextIOBase):
        raise InvalidArgumentError(
            f"{name} must be a path or a binary file object (opened with {mode!r}), "
            f"got a text stream {target!r}"
        )
    if not hasattr(target, method):
        raise InvalidArgumentError(f"{name} must be a path or a binary file object, got {target!r}")


@contextmanager
def open_write(target: Target, name: str) -> Iterator[IO[bytes]]:
    """A binary stream writing to ``target``. A path is written as a temporary file
    beside it (``.<name>.<pid>.tmp``) that replaces it only once the whole dump is
    written: a failed or interrupted export leaves an existing file as it was.

    Raises:
        InvalidArgumentError: naming ``name`` for an object that is neither a path
            nor a writable binary file (a text stream included), a path whose
            directory does not exist, a
            directory, or a file that cannot be created there.
    """
    path = _path(target)
    if path is None:
        _check_stream(target, name, "write", "wb")
        yield target  # type: ignore[misc]
        return
    text = os.fspath(target)  # type: ignore[arg-type]
    if isinstance(text, str) and text.endswith(("/", os.sep)):  # Path() drops the slash
        raise InvalidArgumentError(f"{name}: {text!r} names a directory; give a file name")
    if not path.parent.is_dir():
        raise InvalidArgumentError(f"{name}: the directory {str(path.parent)!r} does not exist")
    if path.is_dir():
        raise InvalidArgumentError(f"{name}: {str(path)!r} is a directory")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        try:
            raw = open(tmp, "wb")  # noqa: SIM115 (closed below)
        except OSError as exc:
            raise InvalidArgumentError(
                f"{name}: {str(path)!r} cannot be created ({exc.strerror or exc})"
            ) from None
        with raw:
            if path.name.endswith(".gz"):
                with gzip.GzipFile(
                    filename=path.name[:-3], mode="wb", compresslevel=GZIP_LEVEL, fileobj=raw
                ) as gz:
                    yield gz  # type: ignore[misc]
            else:
                yield raw
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def open_read(source: Target, name: str) -> Iterator[IO[bytes]]:
    """A binary stream reading ``source`` (gzip detected by its first bytes, ``1f 8b``,
    for a path and a binary file object alike, so a compressed dump without ``.gz``
    in its name reads too).

    Raises:
        InvalidArgumentError: naming ``name`` for a missing file, a directory, or an
            object that is neither a path nor a readable binary file (a text
            stream included).
    """
    path = _path(source)
    if path is None:
        _check_stream(source, name, "read", "rb")
        with _stream_read(source) as stream:  # type: ignore[arg-type]
            yield stream
        return
    if path.is_dir():
        raise InvalidArgumentError(f"{name}: {str(path)!r} is a directory, not a file")
    if not path.is_file():
        raise InvalidArgumentError(f"{name}: no such file {str(path)!r}")
    with open(path, "rb") as f:
        magic = f.read(2)
        f.seek(0)
        if magic == b"\x1f\x8b":
            with gzip.open(f, "rb") as gz:
                yield gz  # type: ignore[misc]
        else:
            yield f


GZIP_MAGIC = b"\x1f\x8b"
"""The first two bytes of a gzip stream."""


@contextmanager
def _stream_read(source: IO[bytes]) -> Iterator[IO[bytes]]:
    """``source`` (a caller's binary file object) decompressed when it starts with
    ``GZIP_MAGIC``; the bytes looked at are not lost: a stream that can seek back
    is put back where it was, any other is read through a buffer that peeks."""
    if _seekable_at_start(source):
        magic = source.read(2)
        source.seek(0)
        if magic != GZIP_MAGIC:
            yield source
            return
        with gzip.GzipFile(fileobj=source, mode="rb") as gz:
            yield gz  # type: ignore[misc]
        return
    buffered = io.BufferedReader(_Forward(source))
    if buffered.peek(2)[:2] != GZIP_MAGIC:
        yield buffered
        return
    with gzip.GzipFile(fileobj=buffered, mode="rb") as gz:
        # GzipFile says it seeks, but its rewind needs the stream below to
        yield io.BufferedReader(_Forward(gz))  # type: ignore[arg-type]


def _seekable_at_start(stream: IO[bytes]) -> bool:
    """Whether ``stream`` is at offset 0 and can seek back to it (a gzip reader
    over it rewinds to offset 0 of the stream)."""
    try:
        return bool(stream.seekable()) and stream.tell() == 0
    except (OSError, AttributeError, ValueError):
        return False


class _Forward(io.RawIOBase):
    """A stream that reads ``inner`` forward only (``seekable()`` is False)."""

    def __init__(self, inner: IO[bytes]) -> None:
        self._inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._inner.read(len(buffer))
        n = len(data)
        buffer[:n] = data
        return n
