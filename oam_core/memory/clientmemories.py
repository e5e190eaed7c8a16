"""The memories part of ``OracleAgentMemory``: search, and the versions of a memory
(update, invalidate, history; docs/versions.md).

Written as a base class of the client, so ``client.py`` stays one job (lifecycle,
profiles, threads). Every operation is a steps method driven sync and async by
``sync_method``/``async_method`` (docs/concepts.md#sync-and-async); the versions are
the store's (``oam_core.store.versions.memory_versions``), one transaction each.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from oam_core.apis._sentinel import NOT_SET, Maybe
from oam_core.apis.records import MESSAGE, Record
from oam_core.checks import check_scope, types_arg
from oam_core.memory.messages import check_memory_content
from oam_core.memory.provenancefusion import fused_search_steps, split_types
from oam_core.steps import Steps, async_method, call, sync_method
from oam_core.store.base import OracleMemoryStore
from oam_core.store.versions import memory_versions

__all__ = ["ClientMemories"]

When = datetime | str
"""A time of a validity window: a datetime (naive = UTC) or an ISO-8601 string (docs/versions.md)."""


class ClientMemories:
    """Search and memory versions of a client over ``self._store`` (a base class of
    ``OracleAgentMemory``; docs/versions.md)."""

    _store: OracleMemoryStore

    def _check_open(self) -> None:
        """Raise ``ClientClosedError`` once the client is closed (``OracleAgentMemory``
        overrides it)."""

    def _search_steps(
        self,
        /,
        query: str,
        *,
        user_id: Maybe[str | None] = NOT_SET,
        agent_id: Maybe[str | None] = NOT_SET,
        thread_id: Maybe[str | None] = NOT_SET,
        k: int = 5,
        record_types: Maybe[Iterable[str]] = NOT_SET,
        metadata_filter: Maybe[dict[str, Any] | None] = NOT_SET,
        as_of: Maybe[When | None] = NOT_SET,
    ) -> Steps[list[tuple[Record, float]]]:
        """An oam addition: search the store within a scope (docs/store.md#searching).

        A given scope id is matched exactly (``None``: only records unscoped in that
        dimension); an omitted one leaves the dimension unconstrained.

        When the record types hold messages and another type (the default does),
        the messages and the other records are searched separately, within the
        same scope, filter and ``as_of``, and fused by rank, a memory also counting
        for the messages it was extracted from (``memory.provenancefusion``,
        docs/retrieval.md#memories-and-messages-together); the distances are then
        fused ones (``DistanceKind.FUSED``), in [0, 1]. One kind asked, or one kind
        found, is one store search's result, its distances the store's.

        Args:
            query: Non-blank query text.
            user_id: Exact user scope, if given.
            agent_id: Exact agent scope, if given.
            thread_id: Exact thread scope, if given.
            k: Maximum results (>= 1).
            record_types: A set of record types; default messages, memory-like
                records and profiles.
            metadata_filter: A filter (docs/filters.md).
            as_of: Omitted: memory-like results are current (valid at the store
                clock's now); a datetime (naive = UTC) or ISO-8601 string: valid at
                that time; None: every version (docs/versions.md). Applied before
                the top-k cut, so k current memories come back when k exist.

        Returns:
            ``(record, distance)`` pairs, best first.

        Raises:
            InvalidArgumentError: as ``OracleMemoryStore.search`` (blank query,
                ``k < 1``, bad record types, filter or ``as_of``, ...);
                ``ConfigurationError`` for a store without an embedder under VECTOR
                or HYBRID.
        """
        self._check_open()
        scope: dict[str, Any] = {}
        for dim, value in (("user", user_id), ("agent", agent_id), ("thread", thread_id)):
            if value is not NOT_SET:
                scope[f"{dim}_id"] = check_scope(value, f"{dim}_id", None)
                scope[f"exact_{dim}_match"] = True
        types = types_arg(None if record_types is NOT_SET else record_types)
        others, with_messages = split_types(types)
        common = {"metadata_filter": metadata_filter, "as_of": as_of, **scope}
        if with_messages and others:
            fused: list[tuple[Record, float]] = list(
                (
                    yield from fused_search_steps(
                        self._store.search,
                        query,
                        k,
                        memory_search={**common, "record_types": others},
                        message_search={**common, "record_types": {MESSAGE}},
                    )
                )
            )
            return fused
        results: list[tuple[Record, float]] = yield from call(
            self._store.search, query, k, record_types=types, **common
        )
        return results

    search = sync_method(_search_steps)
    search_async = async_method(_search_steps)

    def _update_memory_steps(
        self,
        /,
        memory_id: str,
        content: str,
        *,
        reason: str | None = None,
        valid_from: Maybe[When | None] = NOT_SET,
        metadata: Maybe[dict[str, Any] | None] = NOT_SET,
    ) -> Steps[str]:
        """Replace a memory by a corrected version (docs/versions.md; an oam addition).

        Writes a new memory of the same type and scope (metadata copied unless
        given, provenance kept) and supersedes the old one in the same transaction:
        the old one's window ends at the new one's ``valid_from`` (or now) and both
        stay stored, linked (``get_memory_history``). The new version keeps the old
        one's expiry: a memory that never expires stays so, a finite expiry stays
        the same instant (the store's default TTL is not applied again).

        Example::

            >>> old = client.add_memory("Alice lives in Lisbon", user_id="alice")
            >>> new = client.update_memory(old, "Alice lives in Berlin", reason="moved")
            >>> [r.content for r in client.get_memory_history(new)]
            ['Alice lives in Lisbon', 'Alice lives in Berlin']

        Args:
            memory_id: The current version's id.
            content: The new text (non-blank).
            reason: Why, kept on the old version; None for none.
            valid_from: When the new version starts to hold: a datetime (naive =
                UTC) or ISO-8601 string; omitted: now; None: open.
            metadata: The new version's own metadata; omitted: the old one's.

        Returns:
            The new memory's id.

        Raises:
            NotFoundError: (a ``KeyError``) for an unknown id.
            InvalidArgumentError: for a memory that is no longer current (its
                window has ended; update the current version: a memory that holds
                until a later end, or one planned for later, can be updated), blank
                content, or a bad ``valid_from`` or
                ``metadata``; nothing is written.
        """
        self._check_open()
        new_id: str = yield from call(
            memory_versions(self._store).update_memory,
            memory_id,
            check_memory_content(content),
            reason=reason,
            valid_from=valid_from,
            metadata=metadata,
        )
        return new_id

    update_memory = sync_method(_update_memory_steps)
    update_memory_async = async_method(_update_memory_steps)

    def _invalidate_memory_steps(
        self,
        /,
        memory_id: str,
        *,
        reason: str | None = None,
        valid_until: Maybe[When] = NOT_SET,
    ) -> Steps[bool]:
        """End a memory's validity without a successor ("I no longer have a car";
        docs/versions.md; an oam addition). The memory stays stored.

        Example::

            >>> car = client.add_memory("Alice has a car", user_id="alice")
            >>> client.invalidate_memory(car, reason="sold it")
            True
            >>> client.invalidate_memory(car)
            False

        Args:
            memory_id: The memory's id.
            reason: Why, kept in its reserved metadata; None for none.
            valid_until: When it stopped holding: a datetime (naive = UTC) or
                ISO-8601 string; omitted: now.

        Returns:
            True when it was current (its window holds now, also when it was
            set to end later) and is now ended, False if it was not current (ended
            already, or planned for later: nothing is written).

        Raises:
            NotFoundError: (a ``KeyError``) for an unknown or expired id; nothing
                is written.
            InvalidArgumentError: for a bad ``valid_until``.
        """
        self._check_open()
        ended: bool = yield from call(
            memory_versions(self._store).invalidate_memory,
            memory_id,
            reason=reason,
            valid_until=valid_until,
        )
        return ended

    invalidate_memory = sync_method(_invalidate_memory_steps)
    invalidate_memory_async = async_method(_invalidate_memory_steps)

    def _get_memory_history_steps(self, /, memory_id: str) -> Steps[list[Record]]:
        """Every version of a memory (docs/versions.md; an oam addition): the
        records linked to it by supersede links in either direction, oldest
        ``valid_from`` first (ties by ``created_at``); ``[itself]`` without links.

        Raises:
            NotFoundError: (a ``KeyError``) for an unknown id.
        """
        self._check_open()
        history: list[Record] = yield from call(
            memory_versions(self._store).get_memory_history, memory_id
        )
        return history

    get_memory_history = sync_method(_get_memory_history_steps)
    get_memory_history_async = async_method(_get_memory_history_steps)
