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

__all__ = [
    "MemoryExtractionConfig",
    "MemoryExtractionMode",
    "MemoryRetentionConfig",
    "OracleAgentMemory",
    "OracleMemoryStore",
    "OracleThread",
    "SQLiteMemoryStore",
    "SchemaPolicy",
    "SearchIndexSyncMode",
    "SearchStrategy",
]
