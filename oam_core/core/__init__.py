"""Reference import path ``oracleagentmemory.core`` (docs/concepts.md#names-and-imports)."""

from oam_core._lazy import lazy_attributes
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

_LAZY = {
    "OracleDBMemoryStore": "oam_core.store.oracle",
    "OracleDBEmbedder": "oam_core.store.oracle",
}
"""The Oracle names, imported on first use (the oracle extra stays optional)."""

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

__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY, __all__)
