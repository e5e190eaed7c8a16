"""Reference import path ``core.retention`` (docs/concepts.md#names-and-imports)."""

from oam_core.apis._sentinel import NOT_SET, NOT_SET_MARKER
from oam_core.store.options import MemoryRetentionConfig

__all__ = ["NOT_SET", "NOT_SET_MARKER", "MemoryRetentionConfig"]
