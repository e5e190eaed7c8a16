"""Versions of memories: supersede, invalidate, history (docs/versions.md).

A memory-like record (``memory``, ``guideline``, ``fact``, ``preference``) has a
validity window ``[valid_from, valid_until)``. Superseding one memory by a newer one
ends the old window at the new one's ``valid_from`` (or now) and links the two in
their reserved metadata (``$agent_memory``): the old record gets ``status:
"invalid"``, ``superseded_by`` and ``reason``, the new one ``supersedes: [old ids]``.
Invalidating ends a window without a successor (``superseded_by: None``). Each
operation is one transaction; the old row is re-read inside it, so two writers
superseding the same memory at once leave exactly one current version.

``memory_versions(store)`` gives the operations the client calls
(``update_memory``, ``invalidate_memory``, ``get_memory_history``);
``apply_changes`` applies the decisions of an extraction pass inside the
transaction that advances the thread's watermark (``ThreadStore.commit_thread_pass``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

__all__ = ["VersionChange"]


@dataclass(frozen=True)
class VersionChange:
    """One change of a memory's version, applied inside a write transaction.

    Attributes:
        kind: ``"supersede"`` (``successor_id`` replaces ``target_id``) or
            ``"invalidate"`` (``target_id`` stops holding, no successor).
        target_id: The memory whose window ends (family ``memory``, any memory type).
        successor_id: For ``supersede``, the id of the new memory, inserted in the
            same transaction before the change is applied; None for ``invalidate``.
        at: When the target stops holding (aware UTC); None: the successor's
            ``valid_from``, else the store clock's now.
        reason: Why, kept in the target's reserved metadata; None for none.
    """

    kind: Literal["supersede", "invalidate"]
    target_id: str
    successor_id: str | None = None
    at: datetime | None = None
    reason: str | None = None
