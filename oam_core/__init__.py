"""oam: open agent memory, API-compatible with Oracle's Agent Memory SDK (SPEC §1).

Everything public is importable from here; the reference module paths are mirrored
under ``oam_core.core`` and ``oam_core.apis``.
"""

from __future__ import annotations

from typing import Any

from oam_core.apis._sentinel import NOT_SET
from oam_core.apis.batch import PendingRecordBatch
from oam_core.apis.contextcard import ContextCard
from oam_core.apis.embedder import IEmbedder
from oam_core.apis.llm import ILlm
from oam_core.apis.memory import IAgentMemory
from oam_core.apis.records import MessageRecord, Record
from oam_core.apis.store import IMemoryStore
from oam_core.apis.summary import Summary
from oam_core.apis.thread import IThread, Message
from oam_core.apis.ttl import TimeToLiveAnchor
from oam_core.memory.client import OracleAgentMemory
from oam_core.memory.config import MemoryExtractionConfig, MemoryExtractionMode
from oam_core.memory.contextcard import OracleContextCard
from oam_core.memory.summary import OracleSummary
from oam_core.memory.thread import OracleThread
from oam_core.store.base import OracleMemoryStore
from oam_core.store.options import (
    MemoryRetentionConfig,
    SchemaPolicy,
    SearchIndexSyncMode,
    SearchStrategy,
)
from oam_core.store.sqlite import SQLiteMemoryStore

__version__ = "0.1.0"

_NOT_YET = {
    "OracleDBMemoryStore": "the Oracle Database back end",
    "OracleDBEmbedder": "the Oracle Database back end",
}


def __getattr__(name: str) -> Any:
    if name == "PostgresMemoryStore":  # lazy: psycopg is the optional postgres extra
        try:
            from oam_core.store.postgres import PostgresMemoryStore
        except ImportError as exc:
            raise ImportError(
                f"PostgresMemoryStore needs the postgres extra: pip install 'oam[postgres]' ({exc})"
            ) from exc
        return PostgresMemoryStore
    if name in _NOT_YET:
        raise ImportError(
            f"{name} is part of {_NOT_YET[name]}, which this release of oam does not "
            "ship yet; use SQLiteMemoryStore (the embedded default) meanwhile"
        )
    raise AttributeError(f"module 'oam_core' has no attribute {name!r}")


__all__ = [
    "NOT_SET",
    "ContextCard",
    "IAgentMemory",
    "IEmbedder",
    "ILlm",
    "IMemoryStore",
    "IThread",
    "MemoryExtractionConfig",
    "MemoryExtractionMode",
    "MemoryRetentionConfig",
    "Message",
    "MessageRecord",
    "OracleAgentMemory",
    "OracleContextCard",
    "OracleMemoryStore",
    "OracleSummary",
    "OracleThread",
    "PendingRecordBatch",
    "PostgresMemoryStore",
    "Record",
    "SQLiteMemoryStore",
    "SchemaPolicy",
    "SearchIndexSyncMode",
    "SearchStrategy",
    "Summary",
    "TimeToLiveAnchor",
]
