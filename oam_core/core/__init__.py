"""Reference import path ``oracleagentmemory.core`` (SPEC §1)."""

from oam_core.memory.client import OracleAgentMemory
from oam_core.memory.config import MemoryExtractionConfig, MemoryExtractionMode
from oam_core.memory.thread import OracleThread
from oam_core.store.base import OracleMemoryStore
from oam_core.store.options import (
    MemoryRetentionConfig,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)
from oam_core.store.sqlite import SQLiteMemoryStore


def __getattr__(name: str) -> object:
    if name in ("OracleDBMemoryStore", "OracleDBEmbedder"):
        import oam_core.store.oracle as oracle

        return getattr(oracle, name)
    raise AttributeError(f"module 'oam_core.core' has no attribute {name!r}")


__all__ = [
    "MemoryExtractionConfig",
    "MemoryExtractionMode",
    "MemoryRetentionConfig",
    "OracleAgentMemory",
    "OracleDBEmbedder",
    "OracleDBMemoryStore",
    "OracleMemoryStore",
    "OracleThread",
    "SQLiteMemoryStore",
    "SchemaPolicy",
    "SearchIndexSyncMode",
    "SearchStrategy",
]
