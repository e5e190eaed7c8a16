"""An import keeps each record's expiry as the source had it, also beyond the target
store's ``max_ttl_days`` (a dump is restored, not written anew); ``RetentionCap``
counts such records so that the import says so once (docs/transfer.md#retention)."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from oam_core.apis.records import EXPIRING_TYPES
from oam_core.store.backend import DumpRow
from oam_core.store.base import OracleMemoryStore
from oam_core.store.dumpcolumns import DumpColumns


class RetentionCap:
    """The latest expiry the target's ``max_ttl_days`` lets a write give, and how
    many imported records expire later (never included).

    Args:
        store: The target store; its ``memory_retention_config.max_ttl_days`` and
            clock's now fix the cap (no cap: nothing is counted).
    """

    def __init__(self, store: OracleMemoryStore) -> None:
        days = store.memory_retention_config.max_ttl_days
        self.days = days if isinstance(days, int) else None
        self.limit: datetime | None = (
            None if self.days is None else store.clock_now() + timedelta(days=self.days)
        )
        self.beyond = 0
        self.never = 0

    def count(self, rows: Sequence[DumpRow] | DumpColumns) -> None:
        """Count the rows of an expiring type (messages, memory-like records) in
        ``rows`` that never expire or expire after the cap."""
        if self.limit is None:
            return
        pairs: Iterable[tuple[str, datetime | None]]
        if isinstance(rows, DumpColumns):
            pairs = zip(rows.record_types, rows.expires_ats, strict=True)
        else:
            pairs = ((r.record_type, r.expires_at) for r in rows)
        for rtype, expires in pairs:
            if rtype in EXPIRING_TYPES:
                if expires is None:
                    self.never += 1
                elif expires > self.limit:
                    self.beyond += 1

    def warn(self) -> None:
        """One ``UserWarning`` with the counts, when any record was counted."""
        total = self.beyond + self.never
        if not total:
            return
        warnings.warn(
            f"{total} imported records keep an expiry beyond the target store's "
            f"max_ttl_days={self.days} ({self.never} of them never expire): an import "
            "keeps the source's expiry; set a TTL with update() or purge them if the "
            "cap must hold (docs/transfer.md#retention)",
            UserWarning,
            stacklevel=3,
        )
