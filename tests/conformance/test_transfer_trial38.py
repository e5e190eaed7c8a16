"""Imports and copies that must treat the target the way its write API does
(docs/transfer.md#import): a compressed dump handed over as a binary file object,
profiles with scope ids, vectors of an unknown embedder, and ids of expired rows
that are not purged yet. Every test runs on each back end of the suite, on real
SQLite files and the real PostgreSQL server."""

from __future__ import annotations

import gzip
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oam_core import export_store, import_store


class _Pipe(io.RawIOBase):
    """A binary stream that reads forward only (a pipe, a socket, a download)."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._data.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)


@pytest.mark.parametrize("on_conflict", ["error", "skip", "replace"])
@pytest.mark.parametrize("kind", ["file", "bytesio", "pipe", "plain-pipe"])
def test_a_compressed_dump_given_as_a_binary_file_object_is_read(
    make_store: Callable[..., Any], tmp_path: Path, on_conflict: str, kind: str
) -> None:
    source = make_store(name="gz-source")
    source.add(["Ana flies to Lisbon"], "fact", record_ids=["a"], user_ids="ana")
    export_store(source, tmp_path / "d.jsonl.gz")
    data = (tmp_path / "d.jsonl.gz").read_bytes()
    assert data[:2] == b"\x1f\x8b"
    target = make_store(name="gz-target")
    if kind == "file":
        with open(tmp_path / "d.jsonl.gz", "rb") as f:
            summary = import_store(target, f, on_conflict=on_conflict)  # type: ignore[arg-type]
    else:
        raw = gzip.decompress(data) if kind == "plain-pipe" else data
        stream: Any = io.BytesIO(raw) if kind == "bytesio" else _Pipe(raw)
        summary = import_store(target, stream, on_conflict=on_conflict)  # type: ignore[arg-type]
    assert summary.records == {"fact": 1}
    assert summary.bytes == len(gzip.decompress(data))
    assert [r.content for r in target.list("fact")] == ["Ana flies to Lisbon"]
    assert [r.id for r, _ in target.search("Lisbon", k=3)] == ["a"]
