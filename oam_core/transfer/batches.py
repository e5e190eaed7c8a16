"""A dump's lines after its header, decoded into batches and checked as far as the
dump alone tells (docs/transfer.md#import): every line decodes, the stream is read to
its end, the end line is there and counts what the dump holds, and the vectors agree
with the header. Both passes of an import read the dump through ``dump_batches``:
the first checks every batch before anything is written (``precheck.check_dump``),
the second writes them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from oam_core.store.backend import DumpRow
from oam_core.store.dumpcolumns import DumpColumns
from oam_core.transfer import format as fmt
from oam_core.transfer.decoder import BadLine, Decoded, decoded


@dataclasses.dataclass
class Parsed:
    """One batch of parsed rows, or the end of the dump (``final``), or a failure.

    Attributes:
        rows: The batch, as columns when every line was of the common shape.
        label: Where it is in the dump (``lines 2-8193``).
        bytes: Bytes of the dump read up to its end (uncompressed).
        numbers: The line number of each row, in order.
        final: The last item of the dump.
        error: What is wrong (naming the line), when the dump stops here.
    """

    rows: list[DumpRow] | DumpColumns
    label: str
    bytes: int
    numbers: list[int]
    final: bool = False
    error: str | None = None


def dump_batches(
    lines: Iterator[tuple[int, bytes]],
    batch_rows: int,
    nbytes: int,
    dimension: int | None,
    reembed: bool,
) -> Iterator[Parsed]:
    """The rows of ``lines`` (a dump's lines after its header, ``nbytes`` of which
    were read before them) in batches of ``batch_rows``; the last item is ``final``.
    An item's ``error`` says why the dump stops there: a bad line, a damaged stream,
    no end line, an end line whose counts differ (the rows of the unfinished batch
    are dropped), or, unless ``reembed``, vectors in a dump whose header says it
    holds none (``dimension`` None; ``vector_mismatch``)."""
    for item in _batches(decoded(lines), batch_rows, nbytes):
        if item.error is None and not reembed:
            item.error = vector_mismatch(item.rows, dimension, item.label)
        yield item


def _batches(items: Iterator[Decoded], batch_rows: int, nbytes: int) -> Iterator[Parsed]:
    """``dump_batches`` before the vectors are compared with the header."""
    pending: list[DumpRow | fmt.Fields] = []
    numbers: list[int] = []
    seen: dict[str, int] = {}
    chunks = 0
    lineno = 1
    end: dict[str, Any] | None = None
    try:
        for lineno, size, item in items:
            nbytes += size
            if item is None:
                continue
            if end is not None:
                raise BadLine(lineno, "data after the end line")
            if isinstance(item, dict):
                end = item
                continue
            if isinstance(item, tuple):  # ``format.Fields``: one search row
                rtype = item[2]
                chunks += 1
            else:
                rtype = item.record_type
                chunks += len(item.chunks)
            seen[rtype] = seen.get(rtype, 0) + 1
            pending.append(item)
            numbers.append(lineno)
            if len(pending) >= batch_rows:
                # (``pending`` let go before the batch is written: its vectors' bytes
                # are in the batch's matrix.)
                batch, pending = _batch(pending), []
                yield Parsed(batch, _label(numbers, lineno), nbytes, numbers)
                numbers = []
        error = None
        if end is None:
            error = f"source is truncated: it ends at line {lineno} without its end line"
        elif end.get("record_counts") != seen or end.get("search_rows") != chunks:
            error = (
                f"source line {lineno}: the end line counts {end.get('record_counts')} rows "
                f"and {end.get('search_rows')} search rows, the dump holds {seen} and {chunks}"
            )
        rows = _batch(pending) if error is None else []
        yield Parsed(rows, _label(numbers, lineno), nbytes, numbers, final=True, error=error)
    except BadLine as exc:
        yield Parsed([], "", nbytes, [], final=True, error=f"source line {exc.line}: {exc}")


def _label(numbers: list[int], last: int) -> str:
    """``lines <first row's line>-<last line read>``."""
    return f"lines {numbers[0] if numbers else 1}-{last}"


def vector_mismatch(
    rows: list[DumpRow] | DumpColumns, dimension: int | None, label: str
) -> str | None:
    """Why a batch's vectors contradict a header that says the dump holds none
    (``dimension`` None), or None. A header naming a dimension is checked against
    each vector by the store's checks (``store/dumpcheck.py``), which name the
    record."""
    if dimension is not None:
        return None
    if isinstance(rows, DumpColumns):
        sizes = {int(rows.vectors.shape[1])} if len(rows) else set()
    else:
        sizes = {len(c.vector) for r in rows for c in r.chunks if c.vector is not None}
    if not sizes:
        return None
    found = ", ".join(str(n) for n in sorted(sizes))
    return (
        f"{label}: the header says the dump holds no vectors, these lines hold "
        f"vectors of {found} dimensions"
    )


def _batch(items: list[DumpRow | fmt.Fields]) -> list[DumpRow] | DumpColumns:
    """A batch as columns when every line was of the common shape
    (``format.record_fields``), else as ``DumpRow`` objects."""
    if items and all(type(x) is tuple for x in items):
        cols = fmt.columns(items)  # type: ignore[arg-type]
        if cols is not None:
            return cols
    return [fmt.fields_row(x) if type(x) is tuple else x for x in items]  # type: ignore[misc]
