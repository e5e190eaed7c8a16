"""Streams the transfer tests read dumps from."""

from __future__ import annotations

import io
from typing import Any


class ForwardPipe(io.RawIOBase):
    """A binary stream that reads forward only and cannot seek (standard input from
    a pipe, a socket, a download)."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self._data.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)
