"""The ids side of moving memory between stores (docs/transfer.md#import): which
rows a store would hand to a copy, and which ids it holds, so that an import or
copy with ``on_conflict="error"`` finds a clash before it writes anything.

``IdMethods`` gives ``OracleMemoryStore`` (through ``TransferMethods``) its
``dump_ids`` and ``stored_ids``.
"""

from __future__ import annotations

import builtins
from collections.abc import Hashable, Iterator, Sequence

from oam_core.store.runtime import StoreRuntime

Key = tuple[str, str, str]
"""``(family, id, record_type)`` of one stored or dumped row (threads: family and
type ``"thread"``)."""


class IdMethods:
    """``dump_ids`` and ``stored_ids``, read through the store's ``runtime``."""

    runtime: StoreRuntime

    def dump_ids(
        self, *, user_ids: Sequence[str] | None = None, page_size: int = 8192
    ) -> Iterator[builtins.list[Key]]:
        """An oam addition: ``(family, id, record_type)`` of the rows ``dump_rows``
        returns that are not expired now (those an import writes), in pages of at
        most ``page_size`` rows, without their content, search rows or vectors
        (docs/transfer.md#copy).

        Args:
            user_ids: A list of user ids (``dump_rows``'s rule), or None for all.
            page_size: Rows read per page (positive int; a page may hold fewer live
                ones).
        """
        backend = self.runtime.backend
        now = self.runtime.now()
        after: Hashable | None = None
        while True:
            with backend.streaming():
                keys, after = backend.dump_ids(after, page_size, user_ids, now)
            if keys:
                yield keys
            if after is None:
                return

    def stored_ids(self, keys: Sequence[Key]) -> set[Key]:
        """An oam addition: those of ``keys`` whose ``(family, id)`` the store
        holds, read in one transaction that writes nothing (docs/transfer.md#import).
        A row expired and not purged yet is not held: no read sees it, and a write
        of its id replaces it (``store/expiredrows.py``).

        Args:
            keys: ``(family, id, record_type)`` triples; the type is not compared
                (ids are unique per family).
        """
        by_family: dict[str, builtins.list[str]] = {}
        for family, rid, _ in keys:
            by_family.setdefault(family, []).append(rid)
        held: set[tuple[str, str]] = set()
        now = self.runtime.now()
        with self.runtime.backend.streaming(), self.runtime.backend.transaction() as tx:
            for family, ids in by_family.items():
                found = tx.existing_ids(family, ids)
                if found:
                    found -= tx.expired_ids(family, builtins.list(found), now)
                held.update((family, i) for i in found)
        return {k for k in keys if (k[0], k[1]) in held}
