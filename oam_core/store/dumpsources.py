"""The message references of dumped rows (docs/transfer.md#import): a search row
that quotes messages (``DumpChunk.sources``) must name messages that exist."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from oam_core.apis.records import MESSAGE
from oam_core.errors import InvalidArgumentError
from oam_core.store.backend import DumpRow, Tx


def check_sources(tx: Tx, rows: Sequence[DumpRow], now: datetime) -> None:
    """Refuse a search row of ``rows`` quoting a message id that is neither a
    message of ``rows`` nor a message stored in the store of ``tx``. A search row
    already expired at ``now`` is not checked: it expires with the first message it
    quotes, which may be gone for that reason. Run in the write transaction, before
    anything of the batch is written.

    Raises:
        InvalidArgumentError: naming the record, the field
            (``search_rows[j].sources[k]``) and the missing message id.
    """
    quoting = [
        (r, j, c)
        for r in rows
        for j, c in enumerate(r.chunks)
        if c.sources and (c.expires_at is None or c.expires_at > now)
    ]
    quoted = {s for _, _, c in quoting for s in c.sources}
    if not quoted:
        return
    quoted.difference_update(r.id for r in rows if r.family == MESSAGE)
    if not quoted:
        return
    missing = quoted - tx.existing_ids(MESSAGE, sorted(quoted))
    if not missing:
        return
    for r, j, chunk in quoting:
        for k, source in enumerate(chunk.sources):
            if source in missing:
                raise InvalidArgumentError(
                    f"record {r.id!r} ({r.record_type}): search_rows[{j}].sources[{k}] "
                    f"is message {source!r}, which is neither in the dump nor in the "
                    "target store"
                )
