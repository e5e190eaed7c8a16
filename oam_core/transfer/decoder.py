"""Decoding a dump's lines (docs/transfer.md#import): ``(line number, bytes of the
line, item)`` per line, ``item`` a ``DumpRow``, the end object (a dict) or None (a
blank line); ``BadLine`` for a line that does not decode or a damaged stream.

They are decoded in the importing thread, between the batches it writes: a parsing
thread beside the writer made imports slower (the GIL: each time a write statement
let go of it, the writer waited out the parser's switch interval to get it back),
and a decoding process of its own did not pay for itself on a loaded 2-core machine
(bench/README.md#transferpy).
"""

from __future__ import annotations

import zlib
from collections.abc import Generator, Iterator
from typing import IO, Any

from oam_core.store.backend import DumpRow
from oam_core.transfer import format as fmt

Item = DumpRow | dict[str, Any] | None
Decoded = tuple[int, int, Item]
"""``(line number, bytes of the line, item)``."""


class BadLine(Exception):
    """A line that does not decode, or a damaged stream at ``line``."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


def numbered(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of a binary stream; a damaged gzip stream is a
    ``BadLine`` at the line it stops in."""
    n = 0
    it = iter(stream)
    while True:
        try:
            line = next(it)
        except StopIteration:
            return
        except (EOFError, OSError, zlib.error) as exc:
            raise BadLine(n + 1, f"the compressed dump is damaged or truncated ({exc})") from exc
        n += 1
        yield n, line


def decoded(lines: Iterator[tuple[int, bytes]]) -> Generator[Decoded, None, None]:
    """Decode ``lines`` here, one by one.

    Raises:
        BadLine: at the first line that is not a valid dump line.
    """
    decode = fmt.decode
    for n, line in lines:
        if not line.strip():
            yield n, len(line), None
            continue
        try:
            yield n, len(line), decode(line)
        except fmt.LineError as exc:
            raise BadLine(n, str(exc)) from None
