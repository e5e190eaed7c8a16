"""The statements that find rows expired and not purged yet among the ids a write
is about to store (``SqlTx.expired_ids``; ``store/expiredrows.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from oam_core.store.sql.dialect import Dialect
from oam_core.store.sql.statements import Stmt, expired

__all__ = ["any_expired", "expired_ids"]


def expired_ids(d: Dialect, p: str, family: str, ids: Sequence[str], now: datetime) -> Stmt:
    """The ids among ``ids`` (one ``Dialect.batches`` slice) of rows of ``family``
    expired at ``now`` (not purged yet)."""
    sql, params = d.any_of("id", ids)
    where, at = expired(d, now)
    return Stmt(
        f"SELECT id FROM {p}records WHERE family = {d.mark} AND {sql} AND {where}",
        [family, *params, *at],
    )


def any_expired(d: Dialect, p: str, now: datetime) -> Stmt:
    """One row when any record is expired at ``now`` (not purged yet), none else: a
    probe of the expiry index, so a write in a store without such rows looks up none
    of its ids."""
    where, at = expired(d, now)
    return Stmt(f"SELECT 1 FROM {p}records WHERE {where} LIMIT 1", at)
