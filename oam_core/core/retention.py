"""Reference import path ``core.retention`` (SPEC §1)."""

from oam_core.store.options import MemoryRetentionConfig

__all__ = ["MemoryRetentionConfig"]
