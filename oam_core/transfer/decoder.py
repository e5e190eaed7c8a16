"""Decoding a dump's lines (docs/transfer.md#import): ``(line number, bytes of the
line, item)`` per line, ``item`` a record's ``format.Fields`` (the common shape,
decoded without row objects), a ``DumpRow``, the end object (a dict) or None (a
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

Item = DumpRow | fmt.Fields | dict[str, Any] | None
Decoded = tuple[int, int, Item]
"""``(line number, bytes of the line, item)``."""


class BadLine(Exception):
    """A line that does not decode, or a damaged stream at ``line``."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


BLOCK_BYTES = 1 << 20
"""Bytes read from the dump at a time, then cut into lines (one ``split`` in C
instead of a buffered ``readline`` per line, which cost about as much as the JSON
parsing of a line)."""


def numbered(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(line number, line with its newline)`` of a binary stream (the last line may
    lack the newline); a damaged gzip stream is a ``BadLine`` at the first line not
    read whole."""
    # The header alone first: a stream damaged after it is an error of the rows.
    try:
        rest = stream.readline()
    except (EOFError, OSError, zlib.error) as exc:
        raise BadLine(1, f"the compressed dump is damaged or truncated ({exc})") from exc
    n = 0
    if rest.endswith(b"\n"):
        n = 1
        yield 1, rest
        rest = b""
    while True:
        try:
            block = stream.read(BLOCK_BYTES)
        except (EOFError, OSError, zlib.error) as exc:
            raise BadLine(n + 1, f"the compressed dump is damaged or truncated ({exc})") from exc
        if not block:
            if rest:
                yield n + 1, rest
            return
        lines = (rest + block if rest else block).split(b"\n")
        rest = lines.pop()
        for line in lines:
            n += 1
            yield n, line + b"\n"


def decoded(lines: Iterator[tuple[int, bytes]]) -> Generator[Decoded, None, None]:
    """Decode ``lines`` here, one by one.

    Raises:
        BadLine: at the first line that is not a valid dump line.
    """
    decode = fmt.decode
    fast = fmt.record_fields
    for n, line in lines:
        if line[:1] != b"{" and not line.strip():  # (``strip`` copies the line)
            yield n, len(line), None
            continue
        item = fast(line)  # a record of the common shape, as a tuple
        if item is not None:
            yield n, len(line), item
            continue
        try:
            yield n, len(line), decode(line)
        except fmt.LineError as exc:
            raise BadLine(n, str(exc)) from None
