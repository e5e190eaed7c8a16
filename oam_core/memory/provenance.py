"""Library-owned metadata of derived records (provenance and supersede: docs/concepts.md#records).

Keys under ``metadata["$agent_memory"]`` are written by the library only:
``source_message_ids`` (the messages a memory was extracted from),
``extraction_prompt`` (the prompt template that made it, such as ``"extraction_v2"``),
and the version links written by ``store/versions.py`` (docs/versions.md):
``status`` (``"invalid"`` once superseded or invalidated), ``superseded_by`` (None
for an invalidation), ``reason``, and on the newer memory ``supersedes``; a memory
imported from mem0 keeps mem0's fields that have no column under ``mem0``
(transfer/mem0.py, docs/migrating.md). The one key a caller may write there is
``managed`` (``true``: the application that wrote the record manages it, and the
memory pipeline never changes it; docs/memory-pipeline.md#records-managed-by-their-writer).
"""

from __future__ import annotations

from typing import Any

from oam_core.apis.metadatajson import MANAGED_KEY, RESERVED_KEY
from oam_core.apis.records import Record

__all__ = [
    "BOOKKEEPING_PREFIXES",
    "RESERVED_KEY",
    "SUPERSEDED",
    "is_bookkeeping_key",
    "is_managed",
    "is_superseded",
    "reserved_keys",
]

SUPERSEDED = "invalid"
"""``$agent_memory.status`` of a memory replaced or contradicted by a newer one."""

BOOKKEEPING_PREFIXES = ("$", "_")
"""Leading characters of metadata keys that describe a record's handling rather than
its content: ``$`` for the library's keys (``$agent_memory``, ``$message``), ``_`` for
framework adapters' (LlamaIndex's ``_llama_index_status``). The one place that says
which keys an extracted memory does not inherit from its source messages."""


def is_bookkeeping_key(key: str) -> bool:
    """Whether metadata ``key`` is bookkeeping (``BOOKKEEPING_PREFIXES``), so an
    extracted memory does not inherit it (docs/memory-pipeline.md)."""
    return key.startswith(BOOKKEEPING_PREFIXES)


def reserved_keys(record: Record) -> dict[str, Any]:
    """The record's ``metadata["$agent_memory"]`` object (empty when absent)."""
    value = (record.metadata or {}).get(RESERVED_KEY)
    return value if isinstance(value, dict) else {}


def is_superseded(record: Record) -> bool:
    """Whether a newer memory replaced this one or it was invalidated (its reserved
    ``status``; its window, ``valid_until``, says since when)."""
    return reserved_keys(record).get("status") == SUPERSEDED


def is_managed(record: Record) -> bool:
    """Whether the application that wrote ``record`` manages it (its reserved
    ``managed`` is ``true``): the extraction pass never updates nor invalidates it
    (docs/memory-pipeline.md#records-managed-by-their-writer)."""
    return reserved_keys(record).get(MANAGED_KEY) is True
