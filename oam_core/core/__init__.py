"""Reference import path ``oracleagentmemory.core`` (SPEC §1)."""

from oam_core.memory.config import MemoryExtractionConfig, MemoryExtractionMode
from oam_core.store.base import OracleMemoryStore
from oam_core.store.options import (
    MemoryRetentionConfig,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)
from oam_core.store.sqlite import SQLiteMemoryStore

def __getattr__(name: str) -> object:
    if name in ("OracleAgentMemory", "OracleThread"):
        from oam_core import memory  # noqa: F401

        import importlib

        module = "client" if name == "OracleAgentMemory" else "thread"
        return getattr(importlib.import_module(f"oam_core.memory.{module}"), name)
    raise AttributeError(name)


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
