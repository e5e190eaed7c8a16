"""Reference import path ``core.dbsearch`` (docs/concepts.md#names-and-imports)."""

from oam_core.store.options import SearchIndexSyncMode, SearchStrategy

__all__ = ["SearchIndexSyncMode", "SearchStrategy"]
