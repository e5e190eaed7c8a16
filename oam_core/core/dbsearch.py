"""Reference import path ``core.dbsearch`` (SPEC §1)."""

from oam_core.store.options import SearchIndexSyncMode, SearchStrategy

__all__ = ["SearchIndexSyncMode", "SearchStrategy"]
