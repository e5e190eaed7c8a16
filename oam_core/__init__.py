"""oam: open agent memory, API-compatible with Oracle's Agent Memory SDK (SPEC §1).

Everything public is importable from here; the reference module paths are mirrored
under ``oam_core.core`` and ``oam_core.apis``.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from oam_core.apis._sentinel import NOT_SET, NOT_SET_MARKER
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
from oam_core.memory.diagnostics import MemoryPipelineWarning
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

# A library's logger stays silent until the application configures logging: without
# this, Python's last-resort handler would print every pipeline warning a second time.
logging.getLogger("oam").addHandler(logging.NullHandler())

_LAZY = {
    "PostgresMemoryStore": ("oam_core.store.postgres", "postgres"),
    "OracleDBMemoryStore": ("oam_core.store.oracle", "oracle"),
    "OracleDBEmbedder": ("oam_core.store.oracle", "oracle"),
}
"""Exports imported on first use, so the server drivers stay optional extras."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, extra = _LAZY[name]
        try:
            found = importlib.import_module(module)
        except ImportError as exc:
            raise ImportError(
                f"{name} needs the {extra} extra: pip install 'oam[{extra}]' ({exc})"
            ) from exc
        return getattr(found, name)
    raise AttributeError(f"module 'oam_core' has no attribute {name!r}")


__all__ = [
    "NOT_SET",
    "NOT_SET_MARKER",
    "ContextCard",
    "IAgentMemory",
    "IEmbedder",
    "ILlm",
    "IMemoryStore",
    "IThread",
    "MemoryExtractionConfig",
    "MemoryExtractionMode",
    "MemoryPipelineWarning",
    "MemoryRetentionConfig",
    "Message",
    "MessageRecord",
    "OracleAgentMemory",
    "OracleContextCard",
    "OracleDBEmbedder",
    "OracleDBMemoryStore",
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
